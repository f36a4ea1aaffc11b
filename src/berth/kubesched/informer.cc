// RunInformer and ListAll (see informer.h).
#include "berth/kubesched/informer.h"

#include <algorithm>
#include <chrono>
#include <thread>

namespace berth::kube {

using nlohmann::json;

namespace {

std::string ResourceVersion(const json& obj) {
  auto md = obj.find("metadata");
  if (md == obj.end() || !md->is_object()) return "";
  auto rv = md->find("resourceVersion");
  return rv != md->end() && rv->is_string() ? rv->get<std::string>() : "";
}

void Sleep(const std::atomic<bool>& stop, int ms) {
  for (int waited = 0; waited < ms && !stop; waited += 50) std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

}  // namespace

StatusOr<std::string> ListAll(KubeClient& client, const std::string& collection, std::vector<json>& items) {
  items.clear();
  std::string cont, rv;
  do {
    const std::string path = collection + "?limit=5000" + (cont.empty() ? "" : "&continue=" + cont);
    BERTH_ASSIGN_OR_RETURN(json list, client.Get(path));
    rv = ResourceVersion(list);
    auto md = list.find("metadata");
    cont = md != list.end() && md->is_object() ? md->value("continue", "") : "";
    if (list.contains("items") && list["items"].is_array())
      for (auto& item : list["items"]) items.push_back(std::move(item));
  } while (!cont.empty());
  return rv;
}

void RunInformer(KubeClient& client, const std::string& collection, std::string rv, const InformerHandlers& handlers,
                 const std::atomic<bool>& stop, server::Logger& log, int watch_timeout_s) {
  int failures = 0;
  auto backoff = [&] { Sleep(stop, std::min(5000, 200 << std::min(failures++, 5))); };
  while (!stop) {
    if (rv.empty()) {
      std::vector<json> items;
      auto r = ListAll(client, collection, items);
      if (!r.ok()) {
        if (r.status().code() == StatusCode::kNotFound) {
          Sleep(stop, 10000);  // not installed (yet)
        } else {
          log.Warn("kube_list_failed", {{"collection", collection}, {"error", r.status().message()}});
          backoff();
        }
        continue;
      }
      rv = *r;
      handlers.on_list(std::move(items));
    }
    Status s = client.Watch(
        collection, rv,
        [&](const WatchEvent& ev) {
          const std::string next = ResourceVersion(ev.object);
          if (!next.empty()) rv = next;
          if (ev.type != "BOOKMARK") handlers.on_event(ev.type, ev.object);
          return !stop;
        },
        &stop, watch_timeout_s);
    if (stop) break;
    if (s.code() == StatusCode::kOutOfRange) {  // 410 Gone: too old, list again
      log.Info("kube_watch_expired", {{"collection", collection}});
      rv.clear();
      failures = 0;
    } else if (!s.ok()) {
      if (s.code() == StatusCode::kNotFound) rv.clear();
      log.Warn("kube_watch_failed", {{"collection", collection}, {"error", s.message()}});
      backoff();
    } else {
      failures = 0;
    }
  }
}

}  // namespace berth::kube

// List-then-watch of one collection of the API server, as client-go's
// informers do: the first list (paged) is handed over whole, then every watch
// event; the watch resumes from the last resourceVersion it saw (bookmarks
// included), and a 410 Gone or a lost stream of an unknown version starts
// again from a fresh list. A collection that does not exist (a CRD not
// installed) is looked for again every 10 s. Runs until `stop` turns true.
//
//   RunInformer(client, "/api/v1/pods", "", {on_list, on_event}, stop, log);
#pragma once

#include <atomic>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "berth/common/status.h"
#include "berth/kubesched/client.h"
#include "berth/server/log.h"

namespace berth::kube {

struct InformerHandlers {
  // The whole collection, after a (re-)list: it replaces what was known.
  std::function<void(std::vector<nlohmann::json> items)> on_list;
  // One change: type is ADDED, MODIFIED or DELETED.
  std::function<void(const std::string& type, nlohmann::json object)> on_event;
};

// Lists `collection` (all pages). Returns the list's resourceVersion.
StatusOr<std::string> ListAll(KubeClient& client, const std::string& collection, std::vector<nlohmann::json>& items);

// Blocks until `stop`. `resource_version` empty: start with a list; else watch
// from there (the caller listed already).
void RunInformer(KubeClient& client, const std::string& collection, std::string resource_version,
                 const InformerHandlers& handlers, const std::atomic<bool>& stop, server::Logger& log,
                 int watch_timeout_s = 300);

}  // namespace berth::kube

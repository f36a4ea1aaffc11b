// KubeClient: kubeconfig loading, pooled HTTPS connections, a token bucket
// and streamed watches (see client.h).
#include "berth/json/json_parse.h"
#include "berth/kubesched/client.h"

#include <httplib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "berth/store/etcd_client.h"  // Base64Decode

namespace berth::kube {

using nlohmann::json;

namespace {

// API server answers: whole lists of a large cluster's objects are big, and
// Kubernetes objects (managedFields mirror the object) nest deeper than API
// bodies; duplicate keys are refused as everywhere.
const berth::json::ParseLimits kAnswerLimits{.max_bytes = size_t{1} << 30, .max_depth = 128};

StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(path + ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

// Writes inline base64 data to a private file (mode 0600).
StatusOr<std::string> WriteTemp(const std::string& b64, const std::string& what, KubeConfig& cfg) {
  auto bytes = store::Base64Decode(b64);
  if (!bytes.ok()) return InvalidArgument(cfg.source + ": " + what + ": not base64");
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/berth-kube-XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  const int fd = ::mkstemp(buf.data());
  if (fd < 0) return Unavailable(cfg.source + ": " + what + ": cannot create a temporary file");
  const std::string& data = *bytes;
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  ::close(fd);
  cfg.temp_files.push_back(buf.data());
  return std::string(buf.data());
}

// A path in a kubeconfig is relative to the file's folder.
std::string Resolve(const std::string& file, const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  const auto slash = file.rfind('/');
  return slash == std::string::npos ? path : file.substr(0, slash + 1) + path;
}

YAML::Node Named(const YAML::Node& list, const std::string& name) {
  if (!list || !list.IsSequence()) return YAML::Node();
  for (const auto& item : list)
    if (item["name"] && item["name"].as<std::string>() == name) return item;
  return YAML::Node();
}

std::string Str(const YAML::Node& n, const char* key) {
  return n && n[key] && n[key].IsScalar() ? n[key].as<std::string>() : std::string();
}

std::string HostPort(const std::string& server) {
  std::string s = server;
  while (!s.empty() && s.back() == '/') s.pop_back();
  return s;
}

}  // namespace

StatusOr<KubeConfig> LoadKubeConfig(const std::string& path, const std::string& context) {
  auto text = ReadFile(path);
  if (!text.ok()) return NotFound("kubeconfig " + path + ": cannot open");
  YAML::Node root;
  try {
    root = YAML::Load(*text);
  } catch (const YAML::Exception& e) {
    return InvalidArgument("kubeconfig " + path + ": " + e.what());
  }
  KubeConfig cfg;
  cfg.source = "kubeconfig " + path;
  try {
    const std::string ctx_name = context.empty() ? Str(root, "current-context") : context;
    YAML::Node ctx = Named(root["contexts"], ctx_name);
    std::string cluster_name, user_name;
    if (ctx && ctx["context"]) {
      cluster_name = Str(ctx["context"], "cluster");
      user_name = Str(ctx["context"], "user");
      if (!Str(ctx["context"], "namespace").empty()) cfg.ns = Str(ctx["context"], "namespace");
    } else if (!ctx_name.empty()) {
      return InvalidArgument(cfg.source + ": context '" + ctx_name + "' not found");
    }
    YAML::Node cluster = cluster_name.empty() ? (root["clusters"] && root["clusters"].size() == 1 ? root["clusters"][0]
                                                                                                  : YAML::Node())
                                              : Named(root["clusters"], cluster_name);
    if (!cluster || !cluster["cluster"]) return InvalidArgument(cfg.source + ": no cluster for the current context");
    const YAML::Node c = cluster["cluster"];
    cfg.server = HostPort(Str(c, "server"));
    if (cfg.server.empty()) return InvalidArgument(cfg.source + ": clusters[].cluster.server: missing");
    cfg.insecure_skip_tls_verify = c["insecure-skip-tls-verify"] && c["insecure-skip-tls-verify"].as<bool>();
    if (!Str(c, "certificate-authority-data").empty()) {
      auto f = WriteTemp(Str(c, "certificate-authority-data"), "certificate-authority-data", cfg);
      if (!f.ok()) return f.status();
      cfg.ca_file = *f;
    } else {
      cfg.ca_file = Resolve(path, Str(c, "certificate-authority"));
    }
    YAML::Node user = user_name.empty() ? YAML::Node() : Named(root["users"], user_name);
    if (user && user["user"]) {
      const YAML::Node u = user["user"];
      cfg.token = Str(u, "token");
      cfg.token_file = Resolve(path, Str(u, "tokenFile"));
      if (!Str(u, "client-certificate-data").empty()) {
        auto f = WriteTemp(Str(u, "client-certificate-data"), "client-certificate-data", cfg);
        if (!f.ok()) return f.status();
        cfg.client_cert_file = *f;
      } else {
        cfg.client_cert_file = Resolve(path, Str(u, "client-certificate"));
      }
      if (!Str(u, "client-key-data").empty()) {
        auto f = WriteTemp(Str(u, "client-key-data"), "client-key-data", cfg);
        if (!f.ok()) return f.status();
        cfg.client_key_file = *f;
      } else {
        cfg.client_key_file = Resolve(path, Str(u, "client-key"));
      }
    }
  } catch (const YAML::Exception& e) {
    return InvalidArgument(cfg.source + ": " + e.what());
  }
  if (cfg.server.rfind("https://", 0) != 0 && cfg.server.rfind("http://", 0) != 0)
    return InvalidArgument(cfg.source + ": server '" + cfg.server + "' is not an http(s) URL");
  return cfg;
}

StatusOr<KubeConfig> InClusterConfig() {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (!host || !*host) return NotFound("not in a cluster: KUBERNETES_SERVICE_HOST is not set");
  const std::string dir = "/var/run/secrets/kubernetes.io/serviceaccount/";
  KubeConfig cfg;
  cfg.source = "in-cluster service account";
  const std::string h = host;
  cfg.server = "https://" + (h.find(':') != std::string::npos ? "[" + h + "]" : h) + ":" + (port && *port ? port : "443");
  cfg.token_file = dir + "token";
  cfg.ca_file = dir + "ca.crt";
  if (auto ns = ReadFile(dir + "namespace"); ns.ok()) cfg.ns = Trim(*ns);
  if (!ReadFile(cfg.token_file).ok()) return NotFound(cfg.source + ": " + cfg.token_file + ": cannot open");
  return cfg;
}

StatusOr<KubeConfig> ResolveKubeConfig(const std::string& path) {
  if (!path.empty()) return LoadKubeConfig(path);
  if (const char* env = std::getenv("KUBECONFIG"); env && *env) {
    std::string first = env;
    if (auto colon = first.find(':'); colon != std::string::npos) first = first.substr(0, colon);
    return LoadKubeConfig(first);
  }
  auto in = InClusterConfig();
  if (in.ok()) return in;
  if (const char* home = std::getenv("HOME"); home && *home) {
    struct stat st;
    const std::string p = std::string(home) + "/.kube/config";
    if (::stat(p.c_str(), &st) == 0) return LoadKubeConfig(p);
  }
  return NotFound("no Kubernetes configuration: pass --kubeconfig, set KUBECONFIG, or run in a pod");
}

Status StatusFromHttp(int code, const std::string& what, const std::string& body) {
  if (code >= 200 && code < 300) return Status::Ok();
  std::string message;
  auto doc = berth::json::ParseUntrusted(body, kAnswerLimits);
  if (doc.ok() && doc->is_object() && doc->contains("message") && (*doc)["message"].is_string())
    message = (*doc)["message"].get<std::string>().substr(0, 1000);
  else
    message = body.substr(0, 200);
  const std::string m = what + ": HTTP " + std::to_string(code) + (message.empty() ? "" : ": " + message);
  if (code == 404) return NotFound(m);
  if (code == 409) return AlreadyExists(m);
  if (code == 410) return OutOfRange(m);
  if (code == 429 || code >= 500 || code == 0) return Unavailable(m);
  return FailedPrecondition(m);
}

std::string PodPath(const std::string& ns, const std::string& name) {
  return "/api/v1/namespaces/" + ns + "/pods/" + name;
}

struct KubeClient::Conn {
  std::unique_ptr<httplib::Client> client;
};

KubeClient::KubeClient(KubeConfig config, ClientOptions options)
    : config_(std::move(config)), options_(options), scheme_host_port_(config_.server) {
  tokens_ = options_.burst;
  last_refill_ = std::chrono::steady_clock::now();
}

KubeClient::~KubeClient() {
  StopWatches();
  for (const auto& f : config_.temp_files) ::unlink(f.c_str());
}

std::string KubeClient::Token() const {
  if (!config_.token.empty()) return config_.token;
  if (!config_.token_file.empty())
    if (auto t = ReadFile(config_.token_file); t.ok()) return Trim(*t);
  return "";
}

std::unique_ptr<httplib::Client> KubeClient::NewClient(std::chrono::seconds read_timeout) {
  auto c = config_.client_cert_file.empty()
               ? std::make_unique<httplib::Client>(scheme_host_port_)
               : std::make_unique<httplib::Client>(scheme_host_port_, config_.client_cert_file, config_.client_key_file);
  if (!config_.ca_file.empty()) c->set_ca_cert_path(config_.ca_file);
  c->enable_server_certificate_verification(!config_.insecure_skip_tls_verify);
  const std::string token = Token();
  if (!token.empty()) c->set_bearer_token_auth(token);
  c->set_keep_alive(true);
  c->set_connection_timeout(5, 0);
  c->set_read_timeout(read_timeout.count(), 0);
  c->set_write_timeout(options_.request_timeout.count(), 0);
  c->set_default_headers({{"User-Agent", options_.user_agent}, {"Accept", "application/json"}});
  return c;
}

std::unique_ptr<KubeClient::Conn> KubeClient::Acquire() {
  {
    std::lock_guard<std::mutex> lock(pool_mu_);
    if (!pool_.empty()) {
      auto c = std::move(pool_.back());
      pool_.pop_back();
      return c;
    }
  }
  auto c = std::make_unique<Conn>();
  c->client = NewClient(options_.request_timeout);
  return c;
}

void KubeClient::Release(std::unique_ptr<Conn> c) {
  std::lock_guard<std::mutex> lock(pool_mu_);
  if (pool_.size() < 64) pool_.push_back(std::move(c));
}

void KubeClient::Throttle() {
  if (options_.qps <= 0) return;
  for (;;) {
    std::chrono::duration<double> wait{0};
    {
      std::lock_guard<std::mutex> lock(bucket_mu_);
      const auto now = std::chrono::steady_clock::now();
      tokens_ = std::min<double>(options_.burst,
                                 tokens_ + std::chrono::duration<double>(now - last_refill_).count() * options_.qps);
      last_refill_ = now;
      if (tokens_ >= 1) {
        tokens_ -= 1;
        return;
      }
      wait = std::chrono::duration<double>((1 - tokens_) / options_.qps);
    }
    std::this_thread::sleep_for(wait);
  }
}

StatusOr<json> KubeClient::Send(const std::string& method, const std::string& path, const json* body,
                                const std::string& content_type) {
  Throttle();
  ++requests_;
  const std::string what = method + " " + path;
  const std::string payload = body && !body->is_null() ? body->dump() : std::string();
  for (int attempt = 0;; ++attempt) {
    auto conn = Acquire();
    httplib::Result r = method == "GET"      ? conn->client->Get(path.c_str())
                        : method == "POST"   ? conn->client->Post(path.c_str(), payload, content_type.c_str())
                        : method == "PUT"    ? conn->client->Put(path.c_str(), payload, content_type.c_str())
                        : method == "PATCH"  ? conn->client->Patch(path.c_str(), payload, content_type.c_str())
                                             : conn->client->Delete(path.c_str(), payload, content_type.c_str());
    if (!r) {
      // A kept-alive connection the server closed: retry once on a new one
      // (only idempotent methods may repeat blindly).
      const bool idempotent = method == "GET" || method == "PUT" || method == "DELETE";
      if (attempt == 0 && idempotent) continue;
      return Unavailable(what + ": " + httplib::to_string(r.error()));
    }
    const int code = r->status;
    std::string text = std::move(r->body);
    Release(std::move(conn));
    Status s = StatusFromHttp(code, what, text);
    if (!s.ok()) return s;
    if (text.empty()) return json(nullptr);
    auto doc = berth::json::ParseUntrusted(text, kAnswerLimits);
    if (!doc.ok()) return Internal(what + ": malformed JSON in the answer: " + doc.status().message());
    return std::move(doc).value();
  }
}

StatusOr<json> KubeClient::Get(const std::string& path) { return Send("GET", path, nullptr, ""); }
StatusOr<json> KubeClient::Post(const std::string& path, const json& body) {
  return Send("POST", path, &body, "application/json");
}
StatusOr<json> KubeClient::Put(const std::string& path, const json& body) {
  return Send("PUT", path, &body, "application/json");
}
StatusOr<json> KubeClient::Patch(const std::string& path, const json& body, const std::string& content_type) {
  return Send("PATCH", path, &body, content_type);
}
StatusOr<json> KubeClient::Delete(const std::string& path, const json& body) {
  return Send("DELETE", path, &body, "application/json");
}

Status KubeClient::Watch(const std::string& collection, const std::string& resource_version,
                         const std::function<bool(const WatchEvent&)>& on_event, const std::atomic<bool>* stop,
                         int timeout_seconds) {
  Throttle();
  ++requests_;
  auto client = NewClient(std::chrono::seconds(timeout_seconds + 30));
  {
    std::lock_guard<std::mutex> lock(watch_mu_);
    watches_.push_back(client.get());
  }
  const std::string sep = collection.find('?') == std::string::npos ? "?" : "&";
  const std::string path = collection + sep + "watch=true&allowWatchBookmarks=true&timeoutSeconds=" +
                           std::to_string(timeout_seconds) +
                           (resource_version.empty() ? "" : "&resourceVersion=" + resource_version);
  int code = 0;
  std::string buffer, error_body;
  Status result = Status::Ok();
  bool stopped = false;
  auto r = client->Get(
      path.c_str(),
      [&](const httplib::Response& res) {
        code = res.status;
        return true;
      },
      [&](const char* data, size_t len) {
        if (stop && stop->load()) {
          stopped = true;
          return false;
        }
        if (code != 200) {
          error_body.append(data, len);
          return error_body.size() < (1 << 16);
        }
        buffer.append(data, len);
        size_t start = 0;
        for (;;) {
          const size_t nl = buffer.find('\n', start);
          if (nl == std::string::npos) break;
          const std::string_view line(buffer.data() + start, nl - start);
          start = nl + 1;
          if (line.empty()) continue;
          WatchEvent ev;
          auto doc = berth::json::ParseUntrusted(line, kAnswerLimits);
          if (!doc.ok() || !doc->is_object() || (doc->contains("type") && !(*doc)["type"].is_string())) {
            result = Internal("watch " + collection + ": malformed event: " +
                              (doc.ok() ? std::string("not an object with a string type") : doc.status().message()));
            return false;
          }
          ev.type = doc->value("type", "");
          ev.object = std::move((*doc)["object"]);
          if (ev.type == "ERROR") {
            const int c = ev.object.value("code", 500);
            result = StatusFromHttp(c, "watch " + collection, ev.object.dump());
            return false;
          }
          if (!on_event(ev)) {
            stopped = true;
            return false;
          }
        }
        buffer.erase(0, start);
        return true;
      });
  {
    std::lock_guard<std::mutex> lock(watch_mu_);
    std::erase(watches_, client.get());
  }
  if (!result.ok()) return result;
  if (stopped || (stop && stop->load())) return Status::Ok();
  if (code != 0 && code != 200) return StatusFromHttp(code, "watch " + collection, error_body);
  if (!r && r.error() != httplib::Error::Canceled) return Unavailable("watch " + collection + ": " + httplib::to_string(r.error()));
  return Status::Ok();
}

void KubeClient::StopWatches() {
  std::lock_guard<std::mutex> lock(watch_mu_);
  for (auto* c : watches_) c->stop();
}

}  // namespace berth::kube

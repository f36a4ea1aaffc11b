// A small typed client for the Kubernetes API server over HTTPS/JSON (no C++
// Kubernetes client is packaged for Debian): one-shot requests (GET, POST,
// PATCH, DELETE) and streamed watches, with the credentials and server taken
// from a kubeconfig file, or from the in-cluster service-account files, and
// TLS verified against the configured CA unless told otherwise. A token bucket
// limits requests per second like client-go's QPS and burst.
//
//   auto cfg = LoadKubeConfig("/etc/berth/kubeconfig");   // or InClusterConfig()
//   KubeClient c(*cfg, {.qps = 50, .burst = 100});
//   StatusOr<nlohmann::json> nodes = c.Get("/api/v1/nodes");
//   c.Watch("/api/v1/pods", rv, [](const WatchEvent& e) { ...; return true; }, &stop);
//
// Thread-safe: every call takes a connection from a pool (keep-alive).
// Errors: kUnavailable when the server could not be reached or answered 5xx or
// 429; kNotFound for 404; kAlreadyExists for 409; kOutOfRange for 410 Gone (a
// watch or list whose resourceVersion is too old); kFailedPrecondition for
// other 4xx; each names the method, path and the server's message.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "berth/common/status.h"

namespace httplib { class Client; }

namespace berth::kube {

struct KubeConfig {
  std::string server;           // https://host:port
  std::string token;            // bearer token ("" = none)
  std::string token_file;       // re-read on every connection (projected tokens rotate)
  std::string ca_file;          // PEM bundle ("" = the system's)
  std::string client_cert_file, client_key_file;
  bool insecure_skip_tls_verify = false;
  std::string ns = "default";   // the context's namespace
  std::string source;           // where it came from, for messages
  // Files written for inline *-data fields; removed with the config.
  std::vector<std::string> temp_files;
};

// Reads a kubeconfig (the current context, or `context` when set). Inline
// certificate-authority-data / client-*-data are written to private files.
// Errors name the file and the missing or malformed key.
StatusOr<KubeConfig> LoadKubeConfig(const std::string& path, const std::string& context = "");
// The pod's service account: KUBERNETES_SERVICE_HOST/PORT and
// /var/run/secrets/kubernetes.io/serviceaccount/{token,ca.crt,namespace}.
StatusOr<KubeConfig> InClusterConfig();
// --kubeconfig PATH, else $KUBECONFIG, else in-cluster, else ~/.kube/config.
StatusOr<KubeConfig> ResolveKubeConfig(const std::string& path);

struct ClientOptions {
  double qps = 50;   // sustained requests per second (<= 0: unlimited)
  int burst = 100;
  std::chrono::seconds request_timeout{30};
  std::string user_agent = "berth";
};

struct WatchEvent {
  std::string type;  // ADDED, MODIFIED, DELETED, BOOKMARK, ERROR
  nlohmann::json object;
};

class KubeClient {
 public:
  KubeClient(KubeConfig config, ClientOptions options);
  ~KubeClient();
  KubeClient(const KubeClient&) = delete;
  KubeClient& operator=(const KubeClient&) = delete;

  StatusOr<nlohmann::json> Get(const std::string& path);
  StatusOr<nlohmann::json> Post(const std::string& path, const nlohmann::json& body);
  StatusOr<nlohmann::json> Put(const std::string& path, const nlohmann::json& body);
  // content_type: application/merge-patch+json (default) or
  // application/strategic-merge-patch+json or application/json-patch+json.
  StatusOr<nlohmann::json> Patch(const std::string& path, const nlohmann::json& body,
                                 const std::string& content_type = "application/merge-patch+json");
  StatusOr<nlohmann::json> Delete(const std::string& path, const nlohmann::json& body = nullptr);

  // Streams a watch of `collection` (e.g. "/api/v1/pods") from
  // `resource_version`, calling `on_event` for each event (return false to
  // stop). Ends when the server closes the stream (kOk), `stop` turns true,
  // on a 410 Gone (kOutOfRange: re-list), or on an error. `timeout_seconds`
  // is sent to the server, which then ends the watch in order.
  Status Watch(const std::string& collection, const std::string& resource_version,
               const std::function<bool(const WatchEvent&)>& on_event, const std::atomic<bool>* stop,
               int timeout_seconds = 300);
  // Interrupts running watches (their Watch returns soon).
  void StopWatches();

  const KubeConfig& config() const { return config_; }
  int64_t requests() const { return requests_.load(); }

 private:
  struct Conn;
  std::unique_ptr<Conn> Acquire();
  void Release(std::unique_ptr<Conn> c);
  std::unique_ptr<httplib::Client> NewClient(std::chrono::seconds read_timeout);
  std::string Token() const;
  void Throttle();
  StatusOr<nlohmann::json> Send(const std::string& method, const std::string& path, const nlohmann::json* body,
                                const std::string& content_type);

  KubeConfig config_;
  ClientOptions options_;
  std::string scheme_host_port_;
  std::mutex pool_mu_;
  std::vector<std::unique_ptr<Conn>> pool_;
  std::mutex watch_mu_;
  std::vector<httplib::Client*> watches_;
  std::mutex bucket_mu_;
  double tokens_ = 0;
  std::chrono::steady_clock::time_point last_refill_;
  std::atomic<int64_t> requests_{0};
};

// Status code of an API answer, as a Status (see the file comment).
Status StatusFromHttp(int code, const std::string& what, const std::string& body);

// Path pieces: "/api/v1/namespaces/NS/pods/NAME".
std::string PodPath(const std::string& ns, const std::string& name);

}  // namespace berth::kube

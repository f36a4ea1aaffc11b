// The client commands: `berth submit`, `berth status`, `berth cancel`,
// `berth launch`, `berth logs` (a task's output, `--follow` until the job
// ends), `berth queues`, `berth nodes` (`--unhealthy`: the admin list of down,
// quarantined and draining nodes), and the admin node actions `berth
// quarantine`, `berth drain [--deadline D]`, `berth unquarantine` (also as `berth
// nodes quarantine|drain|unquarantine NODE...`). Thin HTTP clients of `berth serve`. The
// server comes from --server, else BERTH_SERVER, else http://127.0.0.1:7450;
// the token file from --token-file, else BERTH_TOKEN_FILE; for an https://
// server the CA that signed its certificate from --ca-cert, else BERTH_CA_CERT
// (default: the system's CAs).
#include <httplib.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "berth/tenancy/queue_yaml.h"
#include "client_util.h"
#include "commands.h"

namespace berth::apps {
namespace {

using nlohmann::json;

struct ClientFlags {
  std::string server = "http://127.0.0.1:7450";
  std::string token_file;
  std::string ca_cert;
  std::string client_cert, client_key;  // a client certificate for servers that require one
  bool json_out = false;
};

void AddClientFlags(CLI::App* cmd, ClientFlags& f) {
  cmd->add_option("--server", f.server, "URL of berth serve (or set BERTH_SERVER)")
      ->envname("BERTH_SERVER")
      ->capture_default_str();
  cmd->add_option("--token-file", f.token_file, "file holding the bearer token, for writes (or set BERTH_TOKEN_FILE)")
      ->envname("BERTH_TOKEN_FILE");
  cmd->add_option("--ca-cert", f.ca_cert, "CA certificate (PEM) that an https:// server's certificate is checked against (or set BERTH_CA_CERT)")
      ->envname("BERTH_CA_CERT");
  cmd->add_option("--client-cert", f.client_cert,
                  "client certificate (PEM) for a server that asks for one (or set BERTH_CLIENT_CERT)")
      ->envname("BERTH_CLIENT_CERT");
  cmd->add_option("--client-key", f.client_key, "the client certificate's private key (PEM; or set BERTH_CLIENT_KEY)")
      ->envname("BERTH_CLIENT_KEY");
  cmd->add_flag("--json", f.json_out, "print the server's JSON");
}

// The server URL checked before any request: a bad one is a usage error.
// Returns 0, or the exit status.
int CheckServer(ClientFlags& f, const char* command) {
  const bool from_env = std::getenv("BERTH_SERVER") && f.server == std::getenv("BERTH_SERVER");
  StatusOr<std::string> url = NormalizeServer(f.server, from_env ? "BERTH_SERVER" : "--server");
  if (!url.ok()) {
    std::cerr << "berth " << command << ": " << url.status().message() << "\n";
    return kExitUsage;
  }
  f.server = *url;
  if (f.client_cert.empty() != f.client_key.empty()) {
    std::cerr << "berth " << command << ": --client-cert and --client-key go together\n";
    return kExitUsage;
  }
  return 0;
}

// One request with retries on connection errors and 503 (safe: submissions
// are idempotent by key or name). Returns status and parsed body.
struct Reply {
  int status = 0;
  json body;
  std::string error;
  std::string text;        // the body as sent (plain-text answers: task logs)
  std::string generation;  // X-Berth-Generation of a log answer
};

Reply Request(const ClientFlags& f, const std::string& method, const std::string& path, const std::string& body = "") {
  httplib::Client cli(f.server, f.client_cert, f.client_key);
  cli.set_connection_timeout(5, 0);
  cli.set_read_timeout(60, 0);
  cli.set_tcp_nodelay(true);
  if (!f.ca_cert.empty()) cli.set_ca_cert_path(f.ca_cert.c_str());
  cli.enable_server_certificate_verification(true);
  httplib::Headers headers;
  Reply r;
  if (!f.token_file.empty()) {
    std::ifstream in(f.token_file);
    if (!in) {
      r.error = "--token-file " + f.token_file + ": cannot open";
      return r;
    }
    std::string token;
    in >> token;
    if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
  }
  for (int attempt = 0; attempt < 4; ++attempt) {
    if (attempt) std::this_thread::sleep_for(std::chrono::milliseconds(200 << attempt));
    httplib::Result res = method == "GET"    ? cli.Get(path, headers)
                          : method == "POST" ? cli.Post(path, headers, body, "application/json")
                                             : cli.Delete(path, headers);
    if (!res) {
      r.error = "cannot reach " + f.server + ": " + httplib::to_string(res.error());
      continue;
    }
    r.status = res->status;
    r.body = json::parse(res->body, nullptr, false);
    r.error = r.body.is_object() && r.body.contains("error") ? r.body["error"].get<std::string>() : "";
    r.text = res->body;
    r.generation = res->get_header_value("X-Berth-Generation");
    if (res->status != 503) break;
  }
  return r;
}

int Fail(const Reply& r) {
  std::cerr << "berth: " << (r.status ? "HTTP " + std::to_string(r.status) + ": " : "") << r.error << "\n";
  return 1;
}

std::string Str(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "-";
  return v.dump();
}

// The jobs in a file: one JSON object, an array of objects, or JSON lines.
bool ReadJobs(const std::string& path, std::vector<json>& out, std::string& error) {
  std::string text;
  if (path == "-") {
    std::stringstream ss;
    ss << std::cin.rdbuf();
    text = ss.str();
  } else {
    std::ifstream in(path);
    if (!in) {
      error = path + ": cannot open";
      return false;
    }
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  json whole = json::parse(text, nullptr, false);
  if (!whole.is_discarded()) {
    if (whole.is_array()) {
      for (auto& j : whole) out.push_back(j);
    } else {
      out.push_back(whole);
    }
    return true;
  }
  std::istringstream lines(text);
  std::string line;
  int n = 0;
  while (std::getline(lines, line)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    json j = json::parse(line, nullptr, false);
    if (j.is_discarded()) {
      error = path + ":" + std::to_string(n) + ": not valid JSON";
      return false;
    }
    out.push_back(j);
  }
  return true;
}

int Submit(const ClientFlags& f, const std::string& file) {
  std::vector<json> jobs;
  std::string error;
  if (!ReadJobs(file, jobs, error)) {
    std::cerr << "berth submit: " << error << "\n";
    return 1;
  }
  int failures = 0;
  // Native trace lines carry arrival times, which the API refuses (the
  // service orders jobs by when it accepts them): dropped, with a note.
  int64_t dropped = 0;
  for (auto& j : jobs)
    if (j.is_object() && j.erase("submit_time_s")) ++dropped;
  if (dropped)
    std::cerr << "berth submit: submit_time_s dropped from " << dropped
              << " job(s): the service orders jobs by when it accepts them\n";
  for (const auto& j : jobs) {
    Reply r = Request(f, "POST", "/v1/jobs", j.dump());
    if (r.status != 200 && r.status != 201) {
      std::cerr << "berth submit: job '" << (j.is_object() ? Str(j.value("name", json())) : "?") << "': ";
      Fail(r);
      ++failures;
      continue;
    }
    if (f.json_out) {
      std::cout << r.body.dump() << "\n";
    } else {
      std::cout << r.body["id"].get<int64_t>() << (r.body.value("duplicate", false) ? " (already submitted)" : "")
                << "\n";
    }
  }
  return failures ? 1 : 0;
}

// Seconds since a server time (seconds since the epoch), or -1.
double AgeOf(const json& t) {
  if (!t.is_number()) return -1;
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  return now - t.get<double>();
}

std::string TenantOf(const json& j) {
  const std::string t = Str(j.value("tenant", json()));
  return t.empty() ? "-" : t;
}

// NODELIST(REASON): where a running job runs, else why it waits or ended.
std::string WhereOrWhy(const json& j) {
  std::vector<std::string> nodes;
  if (j.contains("nodes") && j["nodes"].is_array())
    for (const auto& n : j["nodes"]) nodes.push_back(Str(n));
  if (!nodes.empty()) return CompactNodes(nodes);
  const std::string why = j.contains("why") ? Str(j["why"]) : "";
  return why.empty() || why == "-" ? "-" : "(" + why + ")";
}

// A CLI11 check: a job id is a non-negative integer.
std::string CheckJobId(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("0123456789") == std::string::npos) return "";
  return "job id '" + s + "': expected a non-negative integer";
}

struct StatusFilter {
  std::string state, tenant, queue;
  int64_t chunk_size = 10000;  // jobs per GET /v1/jobs page (the API's most)
};

int StatusOne(const ClientFlags& f, const std::string& id) {
  Reply r = Request(f, "GET", "/v1/jobs/" + id);
  if (r.status != 200) return Fail(r);
  if (f.json_out) {
    std::cout << r.body.dump(2) << "\n";
    return 0;
  }
  const json& j = r.body;
  if (j.value("kind", "") == "workflow") {
    std::printf("workflow %s  %s  state=%s  tenant=%s\n", Str(j["id"]).c_str(), Str(j["name"]).c_str(),
                Str(j["state"]).c_str(), Str(j.value("tenant", json(""))).c_str());
    for (const auto& st : j["stages"])
      std::printf("  stage %-16s %-10s attempts=%s job=%s\n", Str(st["name"]).c_str(), Str(st["state"]).c_str(),
                  Str(st["attempts"]).c_str(), st.contains("job") ? Str(st["job"]).c_str() : "-");
    return 0;
  }
  std::printf("job %s  %s  state=%s  tenant=%s  queue=%s  gpus=%s  age=%s\n", Str(j["id"]).c_str(),
              Str(j["name"]).c_str(), Str(j["state"]).c_str(), TenantOf(j).c_str(), Str(j["queue"]).c_str(),
              Str(j["gpus"]).c_str(), FormatAge(AgeOf(j.value("submitted_at", json()))).c_str());
  for (const auto& p : j["placements"])
    std::printf("  task %s on %s gpus %s\n", Str(p["task"]).c_str(), Str(p["node"]).c_str(), p["gpus"].dump().c_str());
  // A federation dispatcher's gang split across regions: its parts, and why it was split.
  if (j.contains("parts") && j["parts"].is_array()) {
    if (j.contains("span") && j["span"].is_object())
      std::printf("  split across regions: %s (estimated run %.0f s)\n", Str(j["span"]["reason"]).c_str(),
                  j["span"].value("run_s", 0.0));
    for (const auto& p : j["parts"])
      std::printf("  part %s  %s (%s)  tasks=%s ranks=%s  state=%s  member job %s\n", Str(p["part"]).c_str(),
                  Str(p["member"]).c_str(), Str(p["region"]).c_str(), Str(p["tasks"]).c_str(),
                  p["ranks"].dump().c_str(), Str(p["state"]).c_str(), Str(p["member_job"]).c_str());
  }
  Reply why = Request(f, "GET", "/v1/jobs/" + id + "/why");
  if (why.status == 200) std::printf("  why: %s\n", Str(why.body["why"]).c_str());
  if (why.status == 200 && why.body.contains("verdict") && why.body["verdict"].is_object())
    for (const auto& rj : why.body["verdict"]["rejects"])
      std::printf("    %s nodes: %s\n", Str(rj["nodes"]).c_str(), Str(rj["reason"]).c_str());
  return 0;
}

// Every job (following next_after past the API's page size), filtered.
int StatusList(const ClientFlags& f, const StatusFilter& filter) {
  json jobs = json::array();
  std::string after;
  for (;;) {
    std::string path = "/v1/jobs?limit=" + std::to_string(filter.chunk_size);
    if (!filter.state.empty()) path += "&state=" + filter.state;
    if (!after.empty()) path += "&after=" + after;
    Reply r = Request(f, "GET", path);
    if (r.status != 200) return Fail(r);
    for (auto& j : r.body["jobs"]) {
      if (!filter.tenant.empty() && j.value("tenant", "") != filter.tenant) continue;
      if (!filter.queue.empty() && j.value("queue", "") != filter.queue) continue;
      jobs.push_back(std::move(j));
    }
    if (!r.body.contains("next_after")) break;
    after = Str(r.body["next_after"]);
  }
  if (f.json_out) {
    std::cout << json({{"jobs", jobs}}).dump(2) << "\n";
    return 0;
  }
  std::printf("%-8s %-24s %-12s %-16s %-10s %6s %5s  %s\n", "ID", "NAME", "TENANT", "QUEUE", "STATE", "AGE", "GPUS",
              "NODELIST(REASON)");
  for (const auto& j : jobs)
    std::printf("%-8s %-24s %-12s %-16s %-10s %6s %5s  %s\n", Str(j["id"]).c_str(),
                Str(j["name"]).substr(0, 24).c_str(), TenantOf(j).substr(0, 12).c_str(),
                Str(j["queue"]).substr(0, 16).c_str(), Str(j["state"]).c_str(),
                FormatAge(AgeOf(j.value("submitted_at", json()))).c_str(), Str(j["gpus"]).c_str(),
                WhereOrWhy(j).c_str());
  return 0;
}

// `berth launch ID`: the launch spec of a running job (docs/launch.md).
struct LaunchFlags {
  std::string id;
  int64_t task = -1;      // print this task's environment (KEY=VALUE lines)
  bool hostfile = false;  // print the MPI host file
  std::string nccl_topo;  // print this node's NCCL topology XML
};

int Launch(const ClientFlags& f, const LaunchFlags& l) {
  Reply r = Request(f, "GET", "/v1/jobs/" + l.id + "/launch");
  if (r.status != 200) return Fail(r);
  const json& j = r.body;
  if (f.json_out) {
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  if (l.hostfile) {
    std::cout << Str(j["mpi_hostfile"]);
    return 0;
  }
  if (!l.nccl_topo.empty()) {
    for (const auto& n : j["nodes"])
      if (Str(n["node"]) == l.nccl_topo) {
        std::cout << Str(n["nccl_topology_xml"]);
        return 0;
      }
    std::cerr << "berth launch: job " << l.id << " has no task on node '" << l.nccl_topo << "'\n";
    return 1;
  }
  if (l.task >= 0) {
    for (const auto& t : j["tasks"])
      if (t["task"].get<int64_t>() == l.task) {
        for (const auto& [k, v] : t["env"].items()) std::cout << k << "=" << Str(v) << "\n";
        return 0;
      }
    std::cerr << "berth launch: job " << l.id << " has no task " << l.task << "\n";
    return 1;
  }
  std::printf("job %s  launcher=%s  world_size=%s  master=%s:%s\n", Str(j["id"]).c_str(), Str(j["launcher"]).c_str(),
              Str(j["world_size"]).c_str(), Str(j["master_addr"]).c_str(), Str(j["master_port"]).c_str());
  std::printf("%-6s %-6s %-6s %-6s %-24s %s\n", "RANK", "TASK", "NODE_R", "LOCAL", "NODE", "GPUS");
  for (const auto& t : j["tasks"])
    std::printf("%-6s %-6s %-6s %-6s %-24s %s\n", Str(t["rank"]).c_str(), Str(t["task"]).c_str(),
                Str(t["node_rank"]).c_str(), Str(t["local_rank"]).c_str(), Str(t["node"]).c_str(),
                t["gpus"].dump().c_str());
  return 0;
}

// `berth logs ID`: a task's output as the agents uploaded it (docs/agent.md).
struct LogsFlags {
  std::string id;
  int64_t task = 0;
  int64_t generation = 0;  // 0: the latest run
  bool follow = false;
  double interval_s = 1.0;
};

bool Ended(const std::string& state) { return state == "succeeded" || state == "failed" || state == "cancelled"; }

int Logs(const ClientFlags& f, const LogsFlags& l) {
  std::string path = "/v1/jobs/" + l.id + "/logs?task=" + std::to_string(l.task);
  if (l.generation > 0) path += "&generation=" + std::to_string(l.generation);
  if (!l.follow) {
    Reply r = Request(f, "GET", path);
    if (r.status != 200) return Fail(r);
    std::cout << r.text << std::flush;
    return 0;
  }
  // Follow: print what the server has, then what it gains, until the job has
  // ended and its log is complete (the agents upload it in full before they
  // report the end). A new run (a requeue) starts over, under a marker line.
  std::string run;
  size_t printed = 0;
  bool last = false;
  for (;;) {
    Reply j = Request(f, "GET", "/v1/jobs/" + l.id);
    if (j.status != 200) return Fail(j);
    const bool ended = Ended(j.body.value("state", ""));
    Reply r = Request(f, "GET", path);
    if (r.status == 200) {
      if (r.generation != run) {
        if (!run.empty()) std::cout << "--- berth logs: job " << l.id << " run " << r.generation << " ---\n";
        run = r.generation;
        printed = 0;
      }
      if (r.text.size() > printed) {
        std::cout << r.text.substr(printed) << std::flush;
        printed = r.text.size();
      }
    } else if (r.status != 404) {
      return Fail(r);  // 404: no log yet
    }
    if (last) return 0;
    if (ended) {
      last = true;  // one more read: the end is reported after the last upload
      continue;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int64_t>(l.interval_s * 1000)));
  }
}

int Cancel(const ClientFlags& f, const std::vector<std::string>& ids) {
  int failures = 0;
  for (const auto& id : ids) {
    Reply r = Request(f, "DELETE", "/v1/jobs/" + id);
    if (r.status != 200) {
      std::cerr << "berth cancel: job " << id << ": ";
      Fail(r);
      ++failures;
      continue;
    }
    if (f.json_out) {
      std::cout << r.body.dump() << "\n";
    } else {
      std::cout << id << " cancelled\n";
    }
  }
  return failures ? 1 : 0;
}

// GPUs as the API gives them (a number, or null for "not set").
std::string Gpus(const json& v) {
  if (!v.is_number()) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v.get<double>());
  return buf;
}

int Queues(const ClientFlags& f) {
  Reply r = Request(f, "GET", "/v1/queues");
  if (r.status != 200) return Fail(r);
  if (f.json_out) {
    std::cout << r.body.dump(2) << "\n";
    return 0;
  }
  // GUARANTEE, USAGE, BORROWED: GPUs of all types ("*"), or reference GPUs
  // when the tree counts normalized units; a queue with a quota or usage on
  // one GPU type gets an indented row per type.
  if (r.body.value("unit", std::string("gpus")) == "normalized")
    std::printf("unit: %s-equivalents (GUARANTEE, LIMIT, USAGE, BORROWED)\n",
                r.body.value("reference", std::string("reference")).c_str());
  std::printf("%-20s %-12s %9s %9s %9s %9s %8s %8s %8s\n", "QUEUE", "PARENT", "GUARANTEE", "LIMIT", "USAGE",
              "BORROWED", "PENDING", "RUNNING", "PEND_GPU");
  for (const auto& q : r.body["queues"]) {
    const json dims = q.value("dimensions", json::object());
    const json all = dims.value("*", json::object());
    std::printf("%-20s %-12s %9s %9s %9s %9s %8s %8s %8s\n", Str(q["name"]).substr(0, 20).c_str(),
                Str(q.value("parent", json())).substr(0, 12).c_str(), Gpus(q.value("guarantee_gpus", json())).c_str(),
                Gpus(all.value("limit", json())).c_str(), Gpus(q.value("usage_gpus", json())).c_str(),
                Gpus(q.value("borrowed_gpus", json())).c_str(), Str(q["pending"]).c_str(), Str(q["running"]).c_str(),
                Str(q["pending_gpus"]).c_str());
    for (const auto& [type, d] : dims.items()) {
      if (type == "*") continue;
      std::printf("  %-31s %9s %9s %9s %9s\n", type.substr(0, 31).c_str(),
                  Gpus(d.value("guarantee", json())).c_str(), Gpus(d.value("limit", json())).c_str(),
                  Gpus(d.value("usage", json())).c_str(), Gpus(d.value("borrowed", json())).c_str());
    }
  }
  // Budgets (docs/queues.md "Budgets"): spend this period against the budget.
  bool header = false;
  for (const auto& q : r.body["queues"]) {
    const json b = q.value("budget", json());
    if (!b.is_object()) continue;
    if (!header) {
      std::printf("\n%-20s %12s %12s %12s %-22s %-14s %-6s %-5s %s\n", "BUDGET", "AMOUNT", "SPENT", "REMAINING", "UNIT",
                  "PERIOD", "SPENT?", "THEN", "RENEWS_AT");
      header = true;
    }
    std::printf("%-20s %12s %12s %12s %-22s %-14s %-6s %-5s %s\n", Str(q["name"]).substr(0, 20).c_str(),
                Gpus(b.value("amount", json())).c_str(), Gpus(b.value("spent", json())).c_str(),
                Gpus(b.value("remaining", json())).c_str(), Str(b.value("unit", json())).substr(0, 22).c_str(),
                Str(b.value("period", json())).substr(0, 14).c_str(), b.value("exhausted", false) ? "yes" : "no",
                Str(b.value("when_spent", json())).c_str(), Str(b.value("renews_at", json())).c_str());
  }
  return 0;
}

int Nodes(const ClientFlags& f) {
  Reply r = Request(f, "GET", "/v1/nodes");
  if (r.status != 200) return Fail(r);
  if (f.json_out) {
    std::cout << r.body.dump(2) << "\n";
    return 0;
  }
  // Columns as wide as the longest name and type (product names run to 20 characters and more).
  int name_w = 16, type_w = 8;
  for (const auto& n : r.body["nodes"]) {
    name_w = std::max(name_w, static_cast<int>(Str(n["name"]).size()));
    type_w = std::max(type_w, static_cast<int>(Str(n["gpu_type"]).size()));
  }
  std::printf("%-*s %-*s %5s %9s %6s %5s %11s %8s\n", name_w, "NODE", type_w, "TYPE", "GPUS", "USED_GPU", "TASKS", "UP",
              "QUARANTINED", "DRAINING");
  for (const auto& n : r.body["nodes"])
    std::printf("%-*s %-*s %5s %9.2f %6s %5s %11s %8s\n", name_w, Str(n["name"]).c_str(), type_w,
                Str(n["gpu_type"]).c_str(), Str(n["gpus"]).c_str(), n["gpus_used_milli"].get<double>() / 1000.0,
                Str(n["tasks"]).c_str(), n["up"].get<bool>() ? "yes" : "no",
                n["quarantined"].get<bool>() ? "yes" : "no", n.value("draining", false) ? "yes" : "no");
  return 0;
}

// The admin API's list: nodes down or quarantined (needs the token).
int UnhealthyNodes(const ClientFlags& f) {
  Reply r = Request(f, "GET", "/v1/admin/nodes");
  if (r.status != 200) return Fail(r);
  if (f.json_out) {
    std::cout << r.body.dump(2) << "\n";
    return 0;
  }
  std::printf("%s down, %s quarantined, %s draining\n", Str(r.body["down"]).c_str(),
              Str(r.body["quarantined"]).c_str(), Str(r.body.value("draining", json(0))).c_str());
  if (r.body["nodes"].empty()) return 0;
  std::printf("%-16s %5s %11s %8s %8s %5s %s\n", "NODE", "UP", "QUARANTINED", "DRAINING", "FAILURES", "TASKS",
              "FAILED_GPUS");
  for (const auto& n : r.body["nodes"]) {
    std::string draining = n.value("draining", false) ? "yes" : "no";
    if (n.value("draining", false) && n.contains("drain_deadline_s") && !n["drain_deadline_s"].is_null()) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.0fs", n["drain_deadline_s"].get<double>());
      draining = buf;  // the time left until the deadline
    }
    std::string failed;
    for (const auto& g : n.value("failed_gpus", json::array())) failed += (failed.empty() ? "" : ",") + Str(g);
    std::printf("%-16s %5s %11s %8s %8s %5s %s\n", Str(n["name"]).c_str(), n["up"].get<bool>() ? "yes" : "no",
                n["quarantined"].get<bool>() ? "yes" : "no", draining.c_str(), Str(n["failures"]).c_str(),
                Str(n.value("tasks", json(nullptr))).c_str(), failed.empty() ? "-" : failed.c_str());
  }
  return 0;
}

std::string PathSegment(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.') {
      out += static_cast<char>(c);
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

// What an admin node action did, in a line.
std::string NodeActionLine(const std::string& action, const json& b) {
  if (action == "unquarantine") {
    const bool q = b.value("was_quarantined", false), d = b.value("was_draining", false);
    if (q && d) return "quarantine and drain lifted";
    if (q) return "quarantine lifted";
    if (d) return "drain lifted";
    return "was not quarantined or draining";
  }
  if (action == "quarantine") {
    if (b.value("was_quarantined", false)) return "was already quarantined";
    return "quarantined; tasks stopped (their jobs requeued): " + Str(b["tasks_stopped"]);
  }
  std::string line = std::string(b.value("was_draining", false) ? "draining (deadline changed)" : "draining") +
                     "; running jobs: " + Str(b["running_jobs"]);
  if (b.contains("deadline_s") && !b["deadline_s"].is_null())
    line += ", checkpointed and requeued in " + Str(b["deadline_s"]) + " s if still there";
  return line;
}

// POST /v1/admin/nodes/NODE/ACTION for each node; `body` is sent as is.
int NodeAction(const ClientFlags& f, const std::string& action, const std::vector<std::string>& nodes,
               const std::string& body = "") {
  int code = 0;
  for (const auto& n : nodes) {
    Reply r = Request(f, "POST", "/v1/admin/nodes/" + PathSegment(n) + "/" + action, body);
    if (r.status != 200) {
      code = Fail(r);
      continue;
    }
    if (f.json_out)
      std::cout << r.body.dump() << "\n";
    else
      std::printf("%s: %s\n", n.c_str(), NodeActionLine(action, r.body).c_str());
  }
  return code;
}

// The admin node actions as commands under `parent` (the top level and
// `berth nodes`).
void AddNodeActionCommands(CLI::App& parent, std::function<int()>& run) {
  struct Action {
    const char* name;
    const char* help;
  };
  static constexpr Action kActions[] = {
      {"quarantine",
       "Quarantine nodes (admin API, needs --token-file): no new work, and the jobs running there go back to the "
       "queue from their last checkpoint; until unquarantine"},
      {"drain",
       "Drain nodes (admin API, needs --token-file): no new work; running jobs go on, or with --deadline take a "
       "checkpoint and go back to the queue when it passes; until unquarantine"},
      {"unquarantine",
       "Return nodes to service (admin API, needs --token-file): lifts a quarantine or drain; a node that is down "
       "returns at its next heartbeat"},
  };
  for (const Action& a : kActions) {
    auto f = std::make_shared<ClientFlags>();
    auto nodes = std::make_shared<std::vector<std::string>>();
    auto deadline = std::make_shared<std::string>();
    const std::string action = a.name;
    CLI::App* cmd = parent.add_subcommand(action, a.help);
    cmd->add_option("NODE", *nodes, "node names")->required();
    if (action == "drain")
      cmd->add_option("--deadline", *deadline,
                      "stop the work still on the node this long from now, after a checkpoint (e.g. 30m, 3600s)");
    AddClientFlags(cmd, *f);
    cmd->callback([f, nodes, deadline, action, &run] {
      run = [f, nodes, deadline, action] {
        if (int code = CheckServer(*f, action.c_str())) return code;
        std::string body;
        if (!deadline->empty()) {
          StatusOr<TimeUs> d = tenancy::ParseQueueDuration(*deadline);
          if (!d.ok() || *d < 0 || *d % kUsPerSecond != 0) {
            std::cerr << "berth drain: --deadline " << *deadline << ": "
                      << (d.ok() ? "must be whole seconds, 0 or more" : d.status().message()) << "\n";
            return kExitUsage;
          }
          body = json{{"deadline_s", *d / kUsPerSecond}}.dump();
        }
        return NodeAction(*f, action, *nodes, body);
      };
    });
  }
}

}  // namespace

void AddClientCommands(CLI::App& app, std::function<int()>& run) {
  {
    auto f = std::make_shared<ClientFlags>();
    auto file = std::make_shared<std::string>();
    CLI::App* cmd = app.add_subcommand("submit", "Submit jobs (a JSON object, an array, or JSON lines; - for stdin)");
    cmd->add_option("FILE", *file, "job file, or - for standard input")->required();
    AddClientFlags(cmd, *f);
    cmd->callback([f, file, &run] {
      run = [f, file] {
        if (int code = CheckServer(*f, "submit")) return code;
        return Submit(*f, *file);
      };
    });
  }
  {
    auto f = std::make_shared<ClientFlags>();
    auto id = std::make_shared<std::string>();
    auto filter = std::make_shared<StatusFilter>();
    CLI::App* cmd = app.add_subcommand("status", "Show all jobs, or one job and why it waits");
    cmd->add_option("ID", *id, "job id")->check(CheckJobId);
    std::string states;
    for (auto s : kJobStateNames) states += (states.empty() ? "" : "|") + std::string(s);
    cmd->add_option("--state", filter->state, "only jobs in this state: " + states)
        ->check([](const std::string& s) {
          return IsJobStateName(s) ? std::string() : "'" + s + "' is not a job state";
        });
    cmd->add_option("--tenant", filter->tenant, "only this tenant's jobs");
    cmd->add_option("--queue", filter->queue, "only jobs of this (leaf) queue");
    cmd->add_option("--chunk-size", filter->chunk_size,
                    "jobs per request when listing (as kubectl's --chunk-size): the list follows the pages to "
                    "the end, however many jobs there are")
        ->check(CLI::Range(int64_t{1}, int64_t{10000}))
        ->default_val(10000);
    AddClientFlags(cmd, *f);
    cmd->callback([f, id, filter, &run] {
      run = [f, id, filter] {
        if (int code = CheckServer(*f, "status")) return code;
        if (!id->empty() && (!filter->state.empty() || !filter->tenant.empty() || !filter->queue.empty())) {
          std::cerr << "berth status: --state, --tenant and --queue filter the job list; they do not go with an ID\n";
          return kExitUsage;
        }
        return id->empty() ? StatusList(*f, *filter) : StatusOne(*f, *id);
      };
    });
  }
  {
    auto f = std::make_shared<ClientFlags>();
    auto ids = std::make_shared<std::vector<std::string>>();
    CLI::App* cmd = app.add_subcommand("cancel", "Cancel jobs by id (pending or running)");
    cmd->add_option("ID", *ids, "job ids")->required()->check(CheckJobId);
    AddClientFlags(cmd, *f);
    cmd->callback([f, ids, &run] {
      run = [f, ids] {
        if (int code = CheckServer(*f, "cancel")) return code;
        return Cancel(*f, *ids);
      };
    });
  }
  {
    auto f = std::make_shared<ClientFlags>();
    auto l = std::make_shared<LaunchFlags>();
    CLI::App* cmd = app.add_subcommand("launch", "Show a running job's launch spec: ranks, master, env, host file");
    cmd->add_option("ID", l->id, "job id")->required()->check(CheckJobId);
    cmd->add_option("--task", l->task, "print this task's environment as KEY=VALUE lines")->check(CLI::NonNegativeNumber);
    cmd->add_flag("--hostfile", l->hostfile, "print the MPI host file (ADDRESS slots=N, rank order)");
    cmd->add_option("--nccl-topo", l->nccl_topo, "print the NCCL topology XML of this node");
    AddClientFlags(cmd, *f);
    cmd->callback([f, l, &run] {
      run = [f, l] {
        if (int code = CheckServer(*f, "launch")) return code;
        return Launch(*f, *l);
      };
    });
  }
  {
    auto f = std::make_shared<ClientFlags>();
    auto l = std::make_shared<LogsFlags>();
    CLI::App* cmd = app.add_subcommand("logs", "Print a task's output (stdout and stderr) as its node agent uploaded it");
    cmd->add_option("ID", l->id, "job id")->required()->check(CheckJobId);
    cmd->add_option("--task", l->task, "the task index (0..N-1)")->check(CLI::NonNegativeNumber)->capture_default_str();
    cmd->add_option("--generation", l->generation, "the run (1, 2 after a requeue, ...); default: the latest")
        ->check(CLI::PositiveNumber);
    cmd->add_flag("--follow,-f", l->follow, "keep printing the output as it grows, until the job ends");
    cmd->add_option("--interval", l->interval_s, "seconds between reads with --follow")
        ->check(CLI::Range(0.05, 60.0))
        ->capture_default_str();
    AddClientFlags(cmd, *f);
    cmd->callback([f, l, &run] {
      run = [f, l] {
        if (int code = CheckServer(*f, "logs")) return code;
        return Logs(*f, *l);
      };
    });
  }
  {
    auto f = std::make_shared<ClientFlags>();
    CLI::App* cmd = app.add_subcommand("queues", "Show queues: guarantee, limit, usage and borrowing in GPUs, jobs");
    AddClientFlags(cmd, *f);
    AddQueueImportCommand(*cmd, run);
    cmd->callback([f, cmd, &run] {
      if (cmd->got_subcommand("import")) return;  // `berth queues import ...` set run itself
      run = [f] {
        if (int code = CheckServer(*f, "queues")) return code;
        return Queues(*f);
      };
    });
  }
  {
    auto f = std::make_shared<ClientFlags>();
    auto unhealthy = std::make_shared<bool>(false);
    CLI::App* cmd = app.add_subcommand("nodes", "Show nodes: GPUs used, health, quarantine, drain");
    cmd->add_flag("--unhealthy,--quarantined", *unhealthy,
                  "only the nodes down, quarantined or draining, from the admin API (needs --token-file)");
    AddClientFlags(cmd, *f);
    AddNodeActionCommands(*cmd, run);
    cmd->callback([f, unhealthy, cmd, &run] {
      for (const char* a : {"quarantine", "drain", "unquarantine"})
        if (cmd->got_subcommand(a)) return;  // `berth nodes drain ...` set run itself
      run = [f, unhealthy] {
        if (int code = CheckServer(*f, "nodes")) return code;
        return *unhealthy ? UnhealthyNodes(*f) : Nodes(*f);
      };
    });
  }
  AddNodeActionCommands(app, run);
}

}  // namespace berth::apps

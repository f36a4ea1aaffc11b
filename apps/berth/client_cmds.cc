// The client commands: `berth submit`, `berth status`, `berth queues`,
// `berth nodes`. Thin HTTP clients of `berth serve`.
#include <httplib.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "commands.h"

namespace berth::apps {
namespace {

using nlohmann::json;

struct ClientFlags {
  std::string server = "http://127.0.0.1:7450";
  std::string token_file;
  bool json_out = false;
};

void AddClientFlags(CLI::App* cmd, ClientFlags& f) {
  cmd->add_option("--server", f.server, "URL of berth serve")->capture_default_str();
  cmd->add_option("--token-file", f.token_file, "file holding the bearer token (for writes)");
  cmd->add_flag("--json", f.json_out, "print the server's JSON");
}

// One request with retries on connection errors and 503 (safe: submissions
// are idempotent by key or name). Returns status and parsed body.
struct Reply {
  int status = 0;
  json body;
  std::string error;
};

Reply Request(const ClientFlags& f, const std::string& method, const std::string& path, const std::string& body = "") {
  httplib::Client cli(f.server);
  cli.set_connection_timeout(5, 0);
  cli.set_read_timeout(60, 0);
  cli.set_tcp_nodelay(true);
  httplib::Headers headers;
  if (!f.token_file.empty()) {
    std::ifstream in(f.token_file);
    std::string token;
    in >> token;
    if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
  }
  Reply r;
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

int Status(const ClientFlags& f, const std::string& id) {
  if (!id.empty()) {
    Reply r = Request(f, "GET", "/v1/jobs/" + id);
    if (r.status != 200) return Fail(r);
    if (f.json_out) {
      std::cout << r.body.dump(2) << "\n";
      return 0;
    }
    const json& j = r.body;
    std::printf("job %s  %s  state=%s  queue=%s  gpus=%s\n", Str(j["id"]).c_str(), Str(j["name"]).c_str(),
                Str(j["state"]).c_str(), Str(j["queue"]).c_str(), Str(j["gpus"]).c_str());
    for (const auto& p : j["placements"])
      std::printf("  task %s on %s gpus %s\n", Str(p["task"]).c_str(), Str(p["node"]).c_str(), p["gpus"].dump().c_str());
    Reply why = Request(f, "GET", "/v1/jobs/" + id + "/why");
    if (why.status == 200) std::printf("  why: %s\n", Str(why.body["why"]).c_str());
    if (why.status == 200 && why.body.contains("verdict") && why.body["verdict"].is_object())
      for (const auto& rj : why.body["verdict"]["rejects"])
        std::printf("    %s nodes: %s\n", Str(rj["nodes"]).c_str(), Str(rj["reason"]).c_str());
    return 0;
  }
  Reply r = Request(f, "GET", "/v1/jobs?limit=10000");
  if (r.status != 200) return Fail(r);
  if (f.json_out) {
    std::cout << r.body.dump(2) << "\n";
    return 0;
  }
  std::printf("%-8s %-24s %-10s %-12s %5s\n", "ID", "NAME", "STATE", "QUEUE", "GPUS");
  for (const auto& j : r.body["jobs"])
    std::printf("%-8s %-24s %-10s %-12s %5s\n", Str(j["id"]).c_str(), Str(j["name"]).substr(0, 24).c_str(),
                Str(j["state"]).c_str(), Str(j["queue"]).c_str(), Str(j["gpus"]).c_str());
  return 0;
}

int Queues(const ClientFlags& f) {
  Reply r = Request(f, "GET", "/v1/queues");
  if (r.status != 200) return Fail(r);
  if (f.json_out) {
    std::cout << r.body.dump(2) << "\n";
    return 0;
  }
  std::printf("%-16s %8s %8s %12s %12s\n", "QUEUE", "PENDING", "RUNNING", "PENDING_GPU", "RUNNING_GPU");
  for (const auto& q : r.body["queues"])
    std::printf("%-16s %8s %8s %12s %12s\n", Str(q["name"]).c_str(), Str(q["pending"]).c_str(),
                Str(q["running"]).c_str(), Str(q["pending_gpus"]).c_str(), Str(q["running_gpus"]).c_str());
  return 0;
}

int Nodes(const ClientFlags& f) {
  Reply r = Request(f, "GET", "/v1/nodes");
  if (r.status != 200) return Fail(r);
  if (f.json_out) {
    std::cout << r.body.dump(2) << "\n";
    return 0;
  }
  std::printf("%-16s %-8s %5s %9s %6s %5s %11s\n", "NODE", "TYPE", "GPUS", "USED_GPU", "TASKS", "UP", "QUARANTINED");
  for (const auto& n : r.body["nodes"])
    std::printf("%-16s %-8s %5s %9.2f %6s %5s %11s\n", Str(n["name"]).c_str(), Str(n["gpu_type"]).c_str(),
                Str(n["gpus"]).c_str(), n["gpus_used_milli"].get<double>() / 1000.0, Str(n["tasks"]).c_str(),
                n["up"].get<bool>() ? "yes" : "no", n["quarantined"].get<bool>() ? "yes" : "no");
  return 0;
}

}  // namespace

void AddClientCommands(CLI::App& app, std::function<int()>& run) {
  {
    auto f = std::make_shared<ClientFlags>();
    auto file = std::make_shared<std::string>();
    CLI::App* cmd = app.add_subcommand("submit", "Submit jobs (a JSON object, an array, or JSON lines; - for stdin)");
    cmd->add_option("FILE", *file, "job file, or - for standard input")->required();
    AddClientFlags(cmd, *f);
    cmd->callback([f, file, &run] { run = [f, file] { return Submit(*f, *file); }; });
  }
  {
    auto f = std::make_shared<ClientFlags>();
    auto id = std::make_shared<std::string>();
    CLI::App* cmd = app.add_subcommand("status", "Show all jobs, or one job and why it waits");
    cmd->add_option("ID", *id, "job id");
    AddClientFlags(cmd, *f);
    cmd->callback([f, id, &run] { run = [f, id] { return Status(*f, *id); }; });
  }
  {
    auto f = std::make_shared<ClientFlags>();
    CLI::App* cmd = app.add_subcommand("queues", "Show queues: pending and running jobs and GPUs");
    AddClientFlags(cmd, *f);
    cmd->callback([f, &run] { run = [f] { return Queues(*f); }; });
  }
  {
    auto f = std::make_shared<ClientFlags>();
    CLI::App* cmd = app.add_subcommand("nodes", "Show nodes: GPUs used, health, quarantine");
    AddClientFlags(cmd, *f);
    cmd->callback([f, &run] { run = [f] { return Nodes(*f); }; });
  }
}

}  // namespace berth::apps

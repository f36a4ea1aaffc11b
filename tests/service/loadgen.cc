// berth_loadgen: a bounded load and durability client for `berth serve`.
//
//   berth_loadgen --server http://127.0.0.1:PORT --count 5000 --concurrency 16 \
//                 --prefix run1 --acked acked.txt
// submits `count` jobs named PREFIX-i (idempotency key PREFIX-i) from
// `concurrency` threads, appending "KEY ID" to --acked for every answer 200/201
// the moment it arrives, and prints one JSON line: submitted, acked, errors,
// seconds, submissions/s, p50/p99 latency. Stops on its own: after `count`
// attempts, or --max-seconds, or after a thread sees --max-conn-errors
// connection failures in a row (the server died).
//
//   berth_loadgen --server URL --verify --count N --prefix run1 --acked acked.txt
// checks that every acknowledged key is listed exactly once, with the id it
// was acknowledged with, and that no name appears twice; then re-submits all
// N keys (a client retrying whatever it did not see acknowledged) and checks
// the service then holds exactly N jobs of that prefix, each once.
//
//   berth_loadgen --server URL --read "/v1/jobs?limit=10000,/v1/nodes" --concurrency 64 --max-seconds 60
// a read flood: every thread GETs the paths in turn (keep-alive) until
// --max-seconds, and one JSON line says how many reads were answered, failed,
// bytes, and the p50/p99/max latency.
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

using nlohmann::json;

namespace {

struct Flags {
  std::string server = "http://127.0.0.1:7450";
  std::string prefix = "load";
  std::string acked;
  std::string token;
  int64_t count = 1000;
  int concurrency = 8;
  double max_seconds = 120;
  int max_conn_errors = 20;
  bool verify = false;
  std::string read;  // comma-separated paths: the read flood
};

std::string Body(const Flags& f, int64_t i) {
  const std::string key = f.prefix + "-" + std::to_string(i);
  json j = {{"name", key}, {"idempotency_key", key}, {"tenant", "load"}, {"queue", "q" + std::to_string(i % 4)},
            {"duration_s", 3600}, {"groups", {{{"count", 1}, {"gpus", 1 + i % 2}, {"cpu_milli", 1000}}}}};
  return j.dump();
}

httplib::Headers Headers(const Flags& f) {
  httplib::Headers h;
  if (!f.token.empty()) h.emplace("Authorization", "Bearer " + f.token);
  return h;
}

int Load(const Flags& f) {
  std::atomic<int64_t> next{0}, acked{0}, errors{0}, conn_errors_total{0};
  std::mutex mu;
  std::vector<double> latencies;
  std::ofstream acked_out;
  if (!f.acked.empty()) acked_out.open(f.acked, std::ios::app);
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  std::vector<std::thread> threads;
  for (int t = 0; t < f.concurrency; ++t) {
    threads.emplace_back([&] {
      httplib::Client cli(f.server);
      cli.set_connection_timeout(2, 0);
      cli.set_read_timeout(30, 0);
      cli.set_keep_alive(true);
      cli.set_tcp_nodelay(true);
      int conn_errors = 0;
      std::vector<double> mine;
      for (;;) {
        if (elapsed() > f.max_seconds || conn_errors >= f.max_conn_errors) break;
        const int64_t i = next++;
        if (i >= f.count) break;
        const auto t0 = std::chrono::steady_clock::now();
        auto res = cli.Post("/v1/jobs", Headers(f), Body(f, i), "application/json");
        const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (!res) {
          ++conn_errors;
          ++conn_errors_total;
          ++errors;
          continue;
        }
        conn_errors = 0;
        if (res->status == 200 || res->status == 201) {
          const json b = json::parse(res->body, nullptr, false);
          mine.push_back(dt);
          ++acked;
          if (acked_out.is_open()) {
            std::lock_guard<std::mutex> lock(mu);
            acked_out << f.prefix << "-" << i << " " << b.value("id", int64_t{-1}) << "\n";
            acked_out.flush();
          }
        } else {
          ++errors;
        }
      }
      std::lock_guard<std::mutex> lock(mu);
      latencies.insert(latencies.end(), mine.begin(), mine.end());
    });
  }
  for (auto& th : threads) th.join();
  const double secs = elapsed();
  std::sort(latencies.begin(), latencies.end());
  auto q = [&](double p) {
    return latencies.empty() ? 0.0 : latencies[std::min(latencies.size() - 1, static_cast<size_t>(p * latencies.size()))];
  };
  json out = {{"attempted", std::min<int64_t>(next.load(), f.count)},
              {"acked", acked.load()},
              {"errors", errors.load()},
              {"connection_errors", conn_errors_total.load()},
              {"seconds", secs},
              {"submissions_per_s", secs > 0 ? acked.load() / secs : 0},
              {"latency_p50_ms", q(0.50) * 1e3},
              {"latency_p99_ms", q(0.99) * 1e3},
              {"latency_max_ms", latencies.empty() ? 0.0 : latencies.back() * 1e3},
              {"concurrency", f.concurrency}};
  std::cout << out.dump() << std::endl;
  return 0;
}

int ReadFlood(const Flags& f) {
  std::vector<std::string> paths;
  for (size_t at = 0; at <= f.read.size();) {
    size_t comma = f.read.find(',', at);
    if (comma == std::string::npos) comma = f.read.size();
    if (comma > at) paths.push_back(f.read.substr(at, comma - at));
    at = comma + 1;
  }
  if (paths.empty()) {
    std::cerr << "--read needs at least one path\n";
    return 2;
  }
  std::atomic<int64_t> ok{0}, errors{0}, bytes{0};
  std::mutex mu;
  std::vector<double> latencies;
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  std::vector<std::thread> threads;
  for (int t = 0; t < f.concurrency; ++t) {
    threads.emplace_back([&, t] {
      httplib::Client cli(f.server);
      cli.set_connection_timeout(2, 0);
      cli.set_read_timeout(60, 0);
      cli.set_keep_alive(true);
      std::vector<double> mine;
      for (size_t i = static_cast<size_t>(t); elapsed() < f.max_seconds; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        auto res = cli.Get(paths[i % paths.size()], Headers(f));
        const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (!res || res->status != 200) {
          ++errors;
          if (!res) std::this_thread::sleep_for(std::chrono::milliseconds(50));
          continue;
        }
        ++ok;
        bytes += static_cast<int64_t>(res->body.size());
        mine.push_back(dt);
      }
      std::lock_guard<std::mutex> lock(mu);
      latencies.insert(latencies.end(), mine.begin(), mine.end());
    });
  }
  for (auto& th : threads) th.join();
  const double secs = elapsed();
  std::sort(latencies.begin(), latencies.end());
  auto q = [&](double p) {
    return latencies.empty() ? 0.0 : latencies[std::min(latencies.size() - 1, static_cast<size_t>(p * latencies.size()))];
  };
  json out = {{"reads", ok.load()},
              {"errors", errors.load()},
              {"megabytes", static_cast<double>(bytes.load()) / 1e6},
              {"seconds", secs},
              {"reads_per_s", secs > 0 ? ok.load() / secs : 0},
              {"latency_p50_ms", q(0.50) * 1e3},
              {"latency_p99_ms", q(0.99) * 1e3},
              {"latency_max_ms", latencies.empty() ? 0.0 : latencies.back() * 1e3},
              {"concurrency", f.concurrency}};
  std::cout << out.dump() << std::endl;
  return 0;
}

// Every job of the service whose name starts with the prefix: name -> ids.
bool ListAll(const Flags& f, std::map<std::string, std::vector<int64_t>>& by_name) {
  httplib::Client cli(f.server);
  cli.set_read_timeout(30, 0);
  int64_t after = -1;
  for (;;) {
    auto res = cli.Get("/v1/jobs?limit=10000" + (after >= 0 ? "&after=" + std::to_string(after) : std::string()));
    if (!res || res->status != 200) {
      std::cerr << "verify: cannot list jobs\n";
      return false;
    }
    const json b = json::parse(res->body);
    for (const auto& j : b["jobs"]) {
      const std::string name = j["name"];
      if (name.rfind(f.prefix + "-", 0) == 0) by_name[name].push_back(j["id"].get<int64_t>());
    }
    if (!b.contains("next_after")) return true;
    after = b["next_after"].get<int64_t>();
  }
}

int Verify(const Flags& f) {
  std::map<std::string, int64_t> acked;
  std::ifstream in(f.acked);
  std::string key;
  int64_t id;
  while (in >> key >> id) acked[key] = id;
  std::map<std::string, std::vector<int64_t>> by_name;
  if (!ListAll(f, by_name)) return 1;
  int bad = 0;
  for (const auto& [k, v] : acked) {
    auto it = by_name.find(k);
    if (it == by_name.end()) {
      std::cerr << "LOST: acknowledged " << k << " (id " << v << ") is missing\n";
      ++bad;
    } else if (it->second.size() != 1 || it->second[0] != v) {
      std::cerr << "WRONG: " << k << " acknowledged as " << v << ", listed " << it->second.size() << " times\n";
      ++bad;
    }
  }
  for (const auto& [name, ids] : by_name)
    if (ids.size() != 1) {
      std::cerr << "DUPLICATE: " << name << " listed " << ids.size() << " times\n";
      ++bad;
    }
  const size_t before_retry = by_name.size();
  // Retry everything, as a client would after a crash.
  httplib::Client cli(f.server);
  cli.set_read_timeout(30, 0);
  int64_t same = 0;
  for (int64_t i = 0; i < f.count; ++i) {
    auto res = cli.Post("/v1/jobs", Headers(f), Body(f, i), "application/json");
    for (int attempt = 1; attempt < 5 && (!res || res->status == 503); ++attempt) {  // a client retries
      std::this_thread::sleep_for(std::chrono::milliseconds(100 << attempt));
      res = cli.Post("/v1/jobs", Headers(f), Body(f, i), "application/json");
    }
    if (!res || (res->status != 200 && res->status != 201)) {
      std::cerr << "RETRY FAILED: " << f.prefix << "-" << i << ": "
                << (res ? std::to_string(res->status) + " " + res->body : httplib::to_string(res.error())) << "\n";
      ++bad;
      continue;
    }
    const std::string k = f.prefix + "-" + std::to_string(i);
    const json b = json::parse(res->body);
    if (auto it = acked.find(k); it != acked.end()) {
      if (b["id"].get<int64_t>() != it->second) {
        std::cerr << "RETRY CHANGED ID: " << k << "\n";
        ++bad;
      }
      ++same;
    }
  }
  by_name.clear();
  if (!ListAll(f, by_name)) return 1;
  for (const auto& [name, ids] : by_name)
    if (ids.size() != 1) {
      std::cerr << "DUPLICATE AFTER RETRY: " << name << "\n";
      ++bad;
    }
  if (static_cast<int64_t>(by_name.size()) != f.count) {
    std::cerr << "COUNT: expected " << f.count << " jobs after retries, found " << by_name.size() << "\n";
    ++bad;
  }
  json out = {{"acked", acked.size()}, {"present_before_retry", before_retry}, {"retried_same_id", same},
              {"jobs_after_retry", by_name.size()}, {"problems", bad}};
  std::cout << out.dump() << std::endl;
  return bad ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto val = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << a << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--server") f.server = val();
    else if (a == "--prefix") f.prefix = val();
    else if (a == "--acked") f.acked = val();
    else if (a == "--token") f.token = val();
    else if (a == "--count") f.count = std::stoll(val());
    else if (a == "--concurrency") f.concurrency = std::stoi(val());
    else if (a == "--max-seconds") f.max_seconds = std::stod(val());
    else if (a == "--max-conn-errors") f.max_conn_errors = std::stoi(val());
    else if (a == "--verify") f.verify = true;
    else if (a == "--read") f.read = val();
    else {
      std::cerr << "unknown flag " << a << "\n";
      return 2;
    }
  }
  if (f.count < 0 || f.count > 1'000'000 || f.concurrency < 1 || f.concurrency > 256) {
    std::cerr << "--count must be in 0..1000000 and --concurrency in 1..256\n";
    return 2;
  }
  if (f.server.find("127.") == std::string::npos && f.server.find("localhost") == std::string::npos &&
      f.server.find("[::1]") == std::string::npos) {
    std::cerr << "berth_loadgen only targets loopback addresses\n";
    return 2;
  }
  if (!f.read.empty()) return ReadFlood(f);
  return f.verify ? Verify(f) : Load(f);
}

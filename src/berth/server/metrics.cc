// Histogram and label escaping.
#include "berth/server/metrics.h"

#include <cmath>
#include <cstdlib>

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace berth::server {
namespace {
std::vector<double> LatencyBounds() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
}
// Scheduling passes: exponential buckets (factor sqrt 2) from 1 us to about
// 16 s, fine enough to tell a 2x change in a quantile apart.
std::vector<double> PassBounds() {
  std::vector<double> b;
  for (int k = 0; k < 48; ++k) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g", 1e-6 * std::pow(2.0, k / 2.0));  // 1e-06, 1.41e-06, 2e-06, ...
    b.push_back(std::strtod(buf, nullptr));
  }
  return b;
}
std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}
}  // namespace

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::Observe(double value) {
  const size_t i = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  std::lock_guard<std::mutex> lock(mu_);
  ++counts_[i];
  sum_ += value;
  ++count_;
}

uint64_t Histogram::count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return count_;
}

double Histogram::Quantile(double q) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (count_ == 0) return 0;
  const double target = q * static_cast<double>(count_);
  uint64_t cum = 0;
  for (size_t i = 0; i < counts_.size(); ++i) {
    cum += counts_[i];
    if (static_cast<double>(cum) >= target) return i < bounds_.size() ? bounds_[i] : bounds_.back();
  }
  return bounds_.back();
}

void Histogram::Render(const std::string& name, const std::string& help, std::string& out) const {
  std::lock_guard<std::mutex> lock(mu_);
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " histogram\n";
  uint64_t cum = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cum += counts_[i];
    out += name + "_bucket{le=\"" + Num(bounds_[i]) + "\"} " + std::to_string(cum) + "\n";
  }
  cum += counts_.back();
  out += name + "_bucket{le=\"+Inf\"} " + std::to_string(cum) + "\n";
  out += name + "_sum " + Num(sum_) + "\n";
  out += name + "_count " + std::to_string(count_) + "\n";
}

Metrics::Metrics()
    : decision_latency(LatencyBounds()),
      pass_latency(PassBounds()),
      pass_cpu(PassBounds()),
      loop_turn(PassBounds()),
      commit_latency(LatencyBounds()),
      commit_batch({1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096}),
      submit_latency(LatencyBounds()),
      admission_wait({0.1, 0.5, 1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 43200, 86400, 259200}) {}

void LabeledCounter::Add(const std::vector<std::string>& values, uint64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  counts_[values] += n;
}

uint64_t LabeledCounter::Get(const std::vector<std::string>& values) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = counts_.find(values);
  return it == counts_.end() ? 0 : it->second;
}

void LabeledCounter::Render(const std::string& name, const std::string& help, std::string& out) const {
  std::lock_guard<std::mutex> lock(mu_);
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " counter\n";
  for (const auto& [values, n] : counts_) {
    out += name + "{";
    for (size_t i = 0; i < names_.size() && i < values.size(); ++i)
      out += (i ? "," : "") + names_[i] + "=\"" + PromLabel(values[i]) + "\"";
    out += "} " + std::to_string(n) + "\n";
  }
}

std::string HandlerLabel(const std::string& route) {
  if (route.empty()) return "none";
  std::string out;
  int depth = 0;
  for (char c : route) {
    if (c == '(') {
      if (depth++ == 0) out += "{}";
    } else if (c == ')') {
      if (depth > 0) --depth;
    } else if (depth == 0 && c != '\\') {
      out += c;
    }
  }
  return out;
}

void RenderProcessMetrics(std::string& out) {
  // /proc/self/stat: utime (14) and stime (15) in clock ticks, starttime (22) in ticks since boot,
  // vsize (23) in bytes, rss (24) in pages.
  std::FILE* f = std::fopen("/proc/self/stat", "r");
  if (!f) return;
  char buf[1024];
  const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[n] = 0;
  const char* p = std::strrchr(buf, ')');  // the command name may hold spaces
  if (!p) return;
  std::vector<std::string> fields;
  for (const char* q = p + 2; *q;) {
    const char* e = std::strchr(q, ' ');
    fields.emplace_back(q, e ? static_cast<size_t>(e - q) : std::strlen(q));
    if (!e) break;
    q = e + 1;
  }
  // fields[0] is field 3 (state).
  auto field = [&](int k) { return k - 3 < static_cast<int>(fields.size()) ? std::strtod(fields[k - 3].c_str(), nullptr) : 0.0; };
  const double tick = static_cast<double>(::sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(::sysconf(_SC_PAGESIZE));
  double boot = 0;
  if (std::FILE* s = std::fopen("/proc/stat", "r")) {
    char line[256];
    while (std::fgets(line, sizeof line, s))
      if (std::strncmp(line, "btime ", 6) == 0) boot = std::strtod(line + 6, nullptr);
    std::fclose(s);
  }
  int64_t fds = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec))
    ++fds;
  rlimit lim{};
  const double max_fds = ::getrlimit(RLIMIT_NOFILE, &lim) == 0 ? static_cast<double>(lim.rlim_cur) : 0;
  auto gauge = [&](const char* name, const char* type, const char* help, double v) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" + name + " " + Num(v) + "\n";
  };
  gauge("process_cpu_seconds_total", "counter", "User and system CPU time spent in seconds.", (field(14) + field(15)) / tick);
  gauge("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", field(24) * page);
  gauge("process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.", field(23));
  gauge("process_open_fds", "gauge", "Number of open file descriptors.", static_cast<double>(fds));
  gauge("process_max_fds", "gauge", "Maximum number of open file descriptors.", max_fds);
  gauge("process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.",
        boot + field(22) / tick);
}

std::string PromLabel(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

}  // namespace berth::server

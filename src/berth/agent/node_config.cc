// node.yaml, nvidia-smi and the machine's own figures.
#include "berth/agent/node_config.h"

#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

namespace berth::agent {
namespace {

std::string Trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

Status ScalarInt(const YAML::Node& n, const std::string& where, int64_t lo, int64_t hi, int64_t& out) {
  if (!n.IsScalar()) return InvalidArgument(where + ": expected an integer");
  const std::string text = n.Scalar();
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || errno != 0 || *end != '\0') return InvalidArgument(where + ": expected an integer, found '" + text + "'");
  if (v < lo || v > hi)
    return InvalidArgument(where + ": " + text + " is outside " + std::to_string(lo) + ".." + std::to_string(hi));
  out = v;
  return Status::Ok();
}

Status ScalarName(const YAML::Node& n, const std::string& where, std::string& out) {
  if (!n.IsScalar()) return InvalidArgument(where + ": expected a name");
  out = n.Scalar();
  if (out.empty() || out.size() > 256) return InvalidArgument(where + ": expected a name of 1..256 characters");
  for (unsigned char c : out)
    if (c < 0x21 || c == '/' || c == 0x7f) return InvalidArgument(where + ": '" + out + "' may not hold spaces, slashes or control characters");
  return Status::Ok();
}

}  // namespace

StatusOr<NodeConfig> ParseNodeConfig(const std::string& text, const std::string& where) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return InvalidArgument(where + ": not YAML: " + e.what());
  }
  NodeConfig c;
  if (root.IsNull()) return c;
  if (!root.IsMap()) return InvalidArgument(where + ": expected a mapping (name, cpu_milli, memory_mib, gpus, labels)");
  try {
    for (const auto& kv : root) {
      const std::string key = kv.first.as<std::string>();
      const YAML::Node& v = kv.second;
      const std::string at = where + ": " + key;
      if (key == "name") {
        BERTH_RETURN_IF_ERROR(ScalarName(v, at, c.name));
      } else if (key == "cpu_milli") {
        BERTH_RETURN_IF_ERROR(ScalarInt(v, at, 0, int64_t{1} << 40, c.cpu_milli));
      } else if (key == "memory_mib") {
        BERTH_RETURN_IF_ERROR(ScalarInt(v, at, 0, int64_t{1} << 40, c.memory_mib));
      } else if (key == "gpus") {
        if (!v.IsSequence() && !v.IsNull()) return InvalidArgument(at + ": expected a list of GPUs");
        c.gpus_given = true;
        std::set<int64_t> seen;
        for (size_t i = 0; v.IsSequence() && i < v.size(); ++i) {
          const std::string gw = at + "[" + std::to_string(i) + "]";
          const YAML::Node& g = v[i];
          if (!g.IsMap()) return InvalidArgument(gw + ": expected {index, type, memory_mib}");
          GpuInfo gpu;
          int64_t index = static_cast<int64_t>(i);
          bool has_type = false;
          for (const auto& gkv : g) {
            const std::string gk = gkv.first.as<std::string>();
            if (gk == "index") {
              BERTH_RETURN_IF_ERROR(ScalarInt(gkv.second, gw + ".index", 0, 1023, index));
            } else if (gk == "type") {
              BERTH_RETURN_IF_ERROR(ScalarName(gkv.second, gw + ".type", gpu.type));
              has_type = true;
            } else if (gk == "memory_mib") {
              BERTH_RETURN_IF_ERROR(ScalarInt(gkv.second, gw + ".memory_mib", 0, int64_t{1} << 30, gpu.memory_mib));
            } else {
              return InvalidArgument(gw + "." + gk + ": unknown key (index, type, memory_mib)");
            }
          }
          if (!has_type) return InvalidArgument(gw + ".type: missing");
          if (!seen.insert(index).second) return InvalidArgument(gw + ".index: " + std::to_string(index) + " appears twice");
          gpu.index = static_cast<int32_t>(index);
          if (!c.gpus.empty() && gpu.type != c.gpus[0].type)
            return InvalidArgument(gw + ".type: '" + gpu.type + "' differs from the first GPU's '" + c.gpus[0].type +
                                   "' (a node has GPUs of one type)");
          c.gpus.push_back(std::move(gpu));
        }
      } else if (key == "address") {
        BERTH_RETURN_IF_ERROR(ScalarName(v, at, c.address));
      } else if (key == "labels") {
        if (!v.IsMap()) return InvalidArgument(at + ": expected a mapping of level: domain name");
        for (const auto& lkv : v) {
          const std::string lk = lkv.first.as<std::string>();
          std::string* out = lk == "region"    ? &c.region
                             : lk == "cluster" ? &c.cluster
                             : lk == "spine"   ? &c.spine
                             : lk == "leaf"    ? &c.leaf
                             : lk == "nvlink"  ? &c.nvlink
                                               : nullptr;
          if (!out) return InvalidArgument(at + "." + lk + ": not a topology level (region, cluster, spine, leaf, nvlink)");
          BERTH_RETURN_IF_ERROR(ScalarName(lkv.second, at + "." + lk, *out));
        }
      } else {
        return InvalidArgument(at + ": unknown key (name, cpu_milli, memory_mib, gpus, labels, address)");
      }
    }
  } catch (const YAML::Exception& e) {
    return InvalidArgument(where + ": " + e.what());
  }
  return c;
}

StatusOr<NodeConfig> LoadNodeConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound(path + ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseNodeConfig(ss.str(), path);
}

std::string GpuTypeFromProductName(const std::string& product) {
  std::istringstream words(product);
  std::string w;
  while (words >> w) {
    if (w == "NVIDIA" || w == "Tesla" || w == "GeForce" || w == "Quadro" || w == "AMD") continue;
    const size_t dash = w.find('-');
    if (dash != std::string::npos && dash > 0) w = w.substr(0, dash);
    return w;
  }
  return Trim(product);
}

StatusOr<std::vector<GpuInfo>> ParseNvidiaSmiCsv(const std::string& text) {
  std::vector<GpuInfo> out;
  std::istringstream lines(text);
  std::string line;
  int n = 0;
  while (std::getline(lines, line)) {
    ++n;
    line = Trim(line);
    if (line.empty()) continue;
    if (line.rfind("index", 0) == 0) continue;  // the header
    std::vector<std::string> f;
    std::stringstream ls(line);
    std::string cell;
    while (std::getline(ls, cell, ',')) f.push_back(Trim(cell));
    if (f.size() != 3) return InvalidArgument("nvidia-smi line " + std::to_string(n) + ": expected index, name, memory.total");
    GpuInfo g;
    char* end = nullptr;
    const long idx = std::strtol(f[0].c_str(), &end, 10);
    if (f[0].empty() || *end != '\0' || idx < 0 || idx > 1023)
      return InvalidArgument("nvidia-smi line " + std::to_string(n) + ": index '" + f[0] + "'");
    g.index = static_cast<int32_t>(idx);
    g.type = GpuTypeFromProductName(f[1]);
    if (g.type.empty()) return InvalidArgument("nvidia-smi line " + std::to_string(n) + ": no GPU name");
    const long long mib = std::strtoll(f[2].c_str(), &end, 10);  // "81559 MiB"
    g.memory_mib = mib > 0 ? mib : 0;
    out.push_back(std::move(g));
  }
  return out;
}

Status CompleteNodeConfig(NodeConfig& c, const std::string& nvidia_smi) {
  if (c.name.empty()) {
    char host[256] = {0};
    if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0')
      return FailedPrecondition("the node has no host name: give --name");
    c.name = host;
  }
  if (c.cpu_milli < 0) c.cpu_milli = int64_t{1000} * std::max(1u, std::thread::hardware_concurrency());
  if (c.memory_mib < 0) {
    c.memory_mib = 0;
    std::ifstream mi("/proc/meminfo");
    std::string key;
    int64_t kib = 0;
    while (mi >> key >> kib) {
      if (key == "MemTotal:") {
        c.memory_mib = kib / 1024;
        break;
      }
      mi.ignore(1 << 10, '\n');
    }
  }
  if (!c.gpus_given && !nvidia_smi.empty()) {
    const std::string cmd = nvidia_smi + " --query-gpu=index,name,memory.total --format=csv 2>/dev/null";
    if (FILE* p = ::popen(cmd.c_str(), "r")) {
      std::string text;
      char buf[4096];
      size_t got;
      while ((got = std::fread(buf, 1, sizeof buf, p)) > 0 && text.size() < (1 << 20)) text.append(buf, got);
      const int rc = ::pclose(p);
      if (rc == 0) {
        auto gpus = ParseNvidiaSmiCsv(text);
        if (!gpus.ok()) return gpus.status();
        c.gpus = std::move(gpus).value();
        for (const auto& g : c.gpus)
          if (g.type != c.gpus[0].type)
            return FailedPrecondition("nvidia-smi lists GPUs of two types (" + c.gpus[0].type + ", " + g.type +
                                      "); list the ones to offer in node.yaml");
      }
    }
  }
  return Status::Ok();
}

}  // namespace berth::agent

// The Alibaba PAI 2020 machine table (cluster-trace-gpu-v2020): a .tar.gz that
// holds one headerless CSV, machine,gpu_type,cap_cpu,cap_mem,cap_gpu. The
// archive is inflated with zlib and its tar entries are walked in memory; an
// already extracted .csv is read as it is.
#include <zlib.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "berth/cluster/loaders.h"
#include "berth/common/csv.h"

namespace berth::cluster {
namespace {

constexpr size_t kMaxInflated = size_t{256} << 20;  // refuse archives that inflate past 256 MiB

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(path + ": cannot open");
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// Inflates a gzip stream (several members allowed, as gzip allows).
StatusOr<std::string> Gunzip(const std::string& path, const std::string& data) {
  z_stream z;
  std::memset(&z, 0, sizeof z);
  if (inflateInit2(&z, 15 + 32) != Z_OK) return Internal(path + ": zlib: cannot start inflating");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  std::string out;
  char buf[1 << 16];
  int rc = Z_OK;
  while (true) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) break;
    out.append(buf, sizeof buf - z.avail_out);
    if (out.size() > kMaxInflated) {
      inflateEnd(&z);
      return InvalidArgument(path + ": archive inflates past 256 MiB");
    }
    if (rc == Z_STREAM_END) {
      if (z.avail_in == 0) break;
      inflateReset(&z);  // another gzip member follows
    }
  }
  const std::string msg = z.msg ? z.msg : "truncated or corrupt data";
  inflateEnd(&z);
  if (rc != Z_STREAM_END) return InvalidArgument(path + ": not a valid gzip file (" + msg + ")");
  return out;
}

struct TarEntry {
  std::string name;
  std::string_view data;
};

// The one regular file whose name ends in .csv inside a ustar/GNU tar image.
StatusOr<TarEntry> FindCsvInTar(const std::string& path, std::string_view tar) {
  std::vector<TarEntry> csvs;
  std::string long_name;
  size_t pos = 0;
  while (pos + 512 <= tar.size()) {
    std::string_view h = tar.substr(pos, 512);
    if (h.find_first_not_of('\0') == std::string_view::npos) break;  // end-of-archive block
    std::string name(h.substr(0, 100).data(), strnlen(h.data(), 100));
    if (h.substr(257, 5) == "ustar") {
      std::string prefix(h.data() + 345, strnlen(h.data() + 345, 155));
      if (!prefix.empty()) name = prefix + "/" + name;
    }
    uint64_t size = 0;
    for (char ch : h.substr(124, 12)) {
      if (ch >= '0' && ch <= '7') size = size * 8 + static_cast<uint64_t>(ch - '0');
      else if (ch != ' ' && ch != '\0') return InvalidArgument(path + ": corrupt tar header (size field)");
    }
    const char type = h[156];
    pos += 512;
    if (size > tar.size() - pos) return InvalidArgument(path + ": truncated tar archive at '" + name + "'");
    std::string_view body = tar.substr(pos, size);
    pos += (size + 511) / 512 * 512;
    if (type == 'L') {  // GNU long name for the next entry
      long_name.assign(body.data(), strnlen(body.data(), body.size()));
      continue;
    }
    if (!long_name.empty()) {
      name.swap(long_name);
      long_name.clear();
    }
    if ((type == '0' || type == '\0') && EndsWith(name, ".csv")) csvs.push_back({name, body});
  }
  if (csvs.empty()) return InvalidArgument(path + ": no .csv file in the archive");
  if (csvs.size() > 1)
    return InvalidArgument(path + ": expected one .csv in the archive, found " + std::to_string(csvs.size()));
  return csvs[0];
}

// PAI's V100 machines carry 16 GB V100s (the 32 GB ones are V100M32); MISC is
// a mix of older models, so its memory is left unknown.
MiB PaiGpuMemoryMib(const std::string& type) {
  if (type == "V100" || type == "P100" || type == "T4") return 16 * 1024;
  if (type == "V100M32") return 32 * 1024;
  return 0;
}

}  // namespace

StatusOr<Cluster> LoadPaiMachineSpec(const std::string& path) {
  BERTH_ASSIGN_OR_RETURN(std::string raw, ReadFile(path));
  std::string inflated;
  std::string_view csv = raw;
  std::string where = path;
  const bool gzip = raw.size() >= 2 && static_cast<unsigned char>(raw[0]) == 0x1f &&
                    static_cast<unsigned char>(raw[1]) == 0x8b;
  if (gzip) {
    BERTH_ASSIGN_OR_RETURN(inflated, Gunzip(path, raw));
    BERTH_ASSIGN_OR_RETURN(TarEntry entry, FindCsvInTar(path, inflated));
    csv = entry.data;
    where = path + ":" + entry.name;
  }

  ClusterBuilder b;
  int64_t line_no = 0;
  int64_t machines = 0;
  size_t start = 0;
  while (start < csv.size()) {
    size_t end = csv.find('\n', start);
    if (end == std::string_view::npos) end = csv.size();
    std::string_view line = csv.substr(start, end - start);
    start = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    const std::vector<std::string> f = SplitCsvLine(line);
    const std::string at = where + ":" + std::to_string(line_no) + ": ";
    if (line_no == 1 && !f.empty() && f[0] == "machine") continue;  // a header added on extraction
    if (f.size() != 5)
      return InvalidArgument(at + "expected 5 fields (machine,gpu_type,cap_cpu,cap_mem,cap_gpu), got " +
                             std::to_string(f.size()));
    double cpu = 0, mem = 0, gpus = 0;
    if (!ParseDouble(f[2], cpu).ok() || cpu < 0) return InvalidArgument(at + "cap_cpu: bad value '" + f[2] + "'");
    if (!ParseDouble(f[3], mem).ok() || mem < 0) return InvalidArgument(at + "cap_mem: bad value '" + f[3] + "'");
    if (!ParseDouble(f[4], gpus).ok() || gpus < 0 || gpus > kMaxGpusPerNode || gpus != static_cast<int>(gpus))
      return InvalidArgument(at + "cap_gpu: bad value '" + f[4] + "'");
    if (f[0].empty()) return InvalidArgument(at + "machine: empty");
    NodeSpec s;
    s.name = f[0];
    s.cpu_milli = static_cast<MilliCpu>(cpu * 1000 + 0.5);
    s.memory_mib = static_cast<MiB>(mem * 1024 + 0.5);
    s.gpu_count = static_cast<int32_t>(gpus);
    if (s.gpu_count > 0) {
      if (f[1].empty() || f[1] == "CPU") return InvalidArgument(at + "gpu_type: GPUs without a GPU type");
      s.gpu_type = f[1];
      s.gpu_memory_mib = PaiGpuMemoryMib(f[1]);
    }
    b.AddNode(std::move(s));
    ++machines;
  }
  if (machines == 0) return InvalidArgument(where + ": no machines");
  StatusOr<Cluster> c = std::move(b).Build();
  if (!c.ok()) return InvalidArgument(where + ": " + c.status().message());
  return c;
}

}  // namespace berth::cluster

// The openb node list (Alibaba GPU trace 2023): sn,cpu_milli,memory_mib,gpu,model.
#include "berth/cluster/loaders.h"
#include "berth/common/csv.h"

namespace berth::cluster {

StatusOr<Cluster> LoadOpenbNodeList(const std::string& path) {
  BERTH_ASSIGN_OR_RETURN(CsvFile f, CsvFile::Open(path));
  for (const char* col : {"sn", "cpu_milli", "memory_mib", "gpu", "model"})
    if (!f.HasColumn(col)) return InvalidArgument(path + ":1: missing column '" + col + "'");
  ClusterBuilder b;
  while (f.Next()) {
    BERTH_RETURN_IF_ERROR(f.CheckWidth());
    NodeSpec s;
    int64_t gpus = 0;
    BERTH_RETURN_IF_ERROR(f.GetString("sn", s.name));
    BERTH_RETURN_IF_ERROR(f.GetInt("cpu_milli", s.cpu_milli));
    BERTH_RETURN_IF_ERROR(f.GetInt("memory_mib", s.memory_mib));
    BERTH_RETURN_IF_ERROR(f.GetInt("gpu", gpus));
    BERTH_RETURN_IF_ERROR(f.GetString("model", s.gpu_type));
    if (s.name.empty()) return f.Error("empty node name");
    if (s.cpu_milli < 0 || s.memory_mib < 0 || gpus < 0) return f.Error("negative capacity");
    if (gpus > kMaxGpusPerNode) return f.Error("too many GPUs");
    if (gpus > 0 && s.gpu_type.empty()) return f.Error("GPUs without a model");
    if (gpus == 0) s.gpu_type.clear();
    s.gpu_count = static_cast<int32_t>(gpus);
    b.AddNode(std::move(s));
  }
  auto c = std::move(b).Build();
  if (!c.ok()) return InvalidArgument(path + ": " + c.status().message());
  return c;
}

}  // namespace berth::cluster

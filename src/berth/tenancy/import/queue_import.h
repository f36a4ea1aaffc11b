// Queue trees from the queue objects of other schedulers, mapped onto Berth's
// queue file (docs/queues.md, "Importing Kueue, Volcano and KAI queues"):
//   Kueue (kueue.x-k8s.io): ResourceFlavor, ClusterQueue, Cohort, LocalQueue;
//   Volcano (scheduling.volcano.sh): Queue;
//   KAI (scheduling.run.ai): Queue.
// Only GPU quantities are mapped (nvidia.com/gpu, amd.com/gpu; KAI's gpu);
// what cannot be mapped is refused with the object and field named when it
// would change admission (e.g. a GPU quota in a flavor with no GPU type), and
// listed in `notes` otherwise (CPU and memory quotas, preemption settings).
//
//   StatusOr<ImportedQueues> q = ImportQueues(text, "kueue.yaml");   // dialect from apiVersion
//   std::string yaml = QueueFileToYaml(q->file);                     // Berth's format
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "berth/common/status.h"
#include "berth/tenancy/queue_yaml.h"

namespace berth::tenancy {

enum class QueueDialect { kKueue, kVolcano, kKai };

// "kueue", "volcano", "kai".
std::optional<QueueDialect> ParseQueueDialect(std::string_view name);

struct ImportedQueues {
  QueueDialect dialect = QueueDialect::kKueue;
  QueueFile file;
  std::vector<std::string> notes;  // what was read but not mapped
};

// Whether a YAML text holds Kubernetes objects (a top-level apiVersion and kind).
bool IsKubernetesObjects(std::string_view text);

// Reads every object of the text (several documents, or a List); `dialect`
// unset: from the objects' apiVersion (all must agree).
StatusOr<ImportedQueues> ImportQueues(std::string_view text, std::string_view source,
                                      std::optional<QueueDialect> dialect = std::nullopt);

// A queue file in Berth's YAML format (readable by ParseQueueYaml).
std::string QueueFileToYaml(const QueueFile& file);

}  // namespace berth::tenancy

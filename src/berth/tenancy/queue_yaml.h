// Queue trees from YAML files (format: docs/queues.md). Quantities are GPUs
// (fractions allowed) in the file and milli-GPU in memory; with
// `unit: normalized` they are reference GPUs ("H100-equivalents", the type
// named by `reference`, default H100) and milli-reference-GPU in memory.
//
//   unit: normalized       # or gpus (the default)
//   reference: H100
//   half_life: 6h
//   entitlement: reachable  # or flat (the default); entitlement_refresh: 1m
//   queues:
//     - name: research
//       weight: 2
//       quotas:
//         "*":  {guarantee: 512, limit: 1024, borrow_limit: 256, lend_limit: 128}
//         H100: {guarantee: 256}
//     - name: research-nlp
//       parent: research
//       tenants: [alice, "vc-6214e9"]
//       budget: {gpu_hours: 500, period: week, when_spent: idle}   # or money: 1200
//       overcommit: 0.25   # its best effort's share of the services' reserved GPUs
//   prices: {H100: 4.00}   # money per GPU-hour (else the catalog's price_per_hour)
//
//   StatusOr<QueueTree> t = LoadQueueTree("queues.yaml", cluster);
//   // "queues.yaml:7: queues[0].quotas.H200: the cluster has no GPU type 'H200'"
//
// yaml-cpp reports trouble by throwing; every throw is caught here and becomes
// a Status naming the file and line. Errors name the file, line and field.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "berth/cluster/cluster.h"
#include "berth/common/quantity.h"
#include "berth/common/status.h"
#include "berth/tenancy/queue_tree.h"

namespace berth::tenancy {

// A queue file as written, before it is resolved against a cluster.
struct QueueFile {
  TimeUs half_life = 0;  // 0 when the file gives none
  bool has_half_life = false;
  Unit unit = Unit::kGpus;
  EntitlementMode entitlement = EntitlementMode::kFlat;
  TimeUs entitlement_refresh = kDefaultEntitlementRefresh;
  // "H100" by default with kNormalized. With kGpus, optional: quotas stay in
  // GPUs and reports add reference-GPU figures against it.
  std::string reference;
  int reference_line = 0;  // 0: not written
  std::vector<QueueSpec> queues;
  std::vector<int> lines;  // 1-based line of each queue's entry (for errors)
  std::vector<std::map<std::string, int>> quota_lines;  // per queue: GPU type -> line
  // `prices`: GPU type -> milli-money per GPU-hour (budgets in money).
  std::map<std::string, int64_t> prices;
  std::map<std::string, int> price_lines;
  // Per queue `overcommit`: the share (0..1) of the services' reserved GPUs
  // that the queue's best-effort work (every leaf under it) may hold
  // (docs/services.md, "Co-location and overcommit"), by queue name.
  std::map<std::string, double> overcommit;
};

// Parses the text (`source_name` is used in errors). Checks syntax, keys,
// quantities, duplicate names and that parents are defined.
StatusOr<QueueFile> ParseQueueYaml(std::string_view text, std::string_view source_name);
// A file of Kubernetes objects (Kueue, Volcano or KAI queues, by apiVersion)
// is imported (import/queue_import.h).
StatusOr<QueueFile> ReadQueueFile(const std::string& path);
// The tree of a parsed file against a cluster: GPU type names must be known to
// it. Errors name the file and the queue's line.
StatusOr<QueueTree> BuildQueueTree(const QueueFile& file, std::string_view source_name,
                                   const cluster::Cluster& cluster);
// The file with the quotas of GPU types the cluster lacks (neither a type
// name nor a product name that resolves to one) left out, and their names in
// `dropped` (file order, once each). For a cluster that grows as nodes
// register (node agents): a quota on a type no node has yet bounds nothing,
// and it applies once a node of that type joins.
QueueFile QuotasForCluster(const QueueFile& file, const cluster::Cluster& cluster, std::vector<std::string>* dropped);
// ReadQueueFile + BuildQueueTree.
StatusOr<QueueTree> LoadQueueTree(const std::string& path, const cluster::Cluster& cluster);

// A duration: "90s", "30m", "6h", "1.5d" or a plain number of seconds.
StatusOr<TimeUs> ParseQueueDuration(std::string_view text);

}  // namespace berth::tenancy

// The federation model: regions, member clusters (each a whole cluster file
// or spec of its own, with GPU prices and a failure domain), the links between
// regions (bandwidth, round-trip time, egress price) and the datasets (size,
// the regions holding a replica, staged or streamed). Read from YAML
// (docs/federation.md):
//
//   regions:
//     - name: us-east
//       clusters:
//         - {name: use-a, cluster: "64x8:H100", gpu_prices: {H100: 2.5}, failure_domain: use-1}
//   links:
//     - {from: us-east, to: eu-west, bandwidth_gbps: 10, rtt_ms: 80, egress_usd_per_gb: 0.02}
//   datasets:
//     - {name: web, size_gib: 800, regions: [us-east], read: staged}
//   failures:                      # simulated outages (berth simulate --federation)
//     - {domain: use-1, at_s: 3600, for_s: 1800}
//     - {cluster: use-a, at_s: 7200, for_s: 600, kind: partition}
//   span: {comm_fraction: 0.1, gib_per_gpu_hour: 10, max_parts: 4}   # gangs across regions (span.h)
//
//   StatusOr<Federation> f = LoadFederation("fed.yaml", cluster::LoadCluster);
//
// Regions and members are numbered in file order; links form a dense matrix
// (a region to itself uses `intra_region`).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "berth/cluster/cluster.h"
#include "berth/common/quantity.h"
#include "berth/common/status.h"

namespace berth::federation {

using ClusterLoader = std::function<StatusOr<cluster::Cluster>(const std::string&)>;

struct Link {
  double bandwidth_gbps = 0;     // > 0
  TimeUs rtt = 0;                // round-trip time
  double egress_usd_per_gb = 0;  // price of a GB leaving the source region over this link
};

struct Member {
  std::string name;
  int32_t region = 0;
  std::string source;          // the cluster file or spec, as written
  std::string failure_domain;  // "" = its own
  // The member's `berth serve` (http[s]://HOST:PORT), for `berth serve
  // --federation`; "" = none (simulation, or given by --member NAME=URL).
  std::string endpoint;
  // USD per GPU-hour by GPU type name (the cluster's names); `default_price`
  // for types not listed.
  std::map<std::string, double> gpu_prices;
  double default_price = 0;
  double weight = 0;  // karmada-weights share (default: the cluster's GPUs)
  std::shared_ptr<const cluster::Cluster> cluster;

  double Price(const std::string& type) const;
};

enum class ReadPattern { kStaged, kStreamed };

struct Dataset {
  std::string name;
  MiB size_mib = 0;
  std::vector<int32_t> regions;  // holding a replica (at least one)
  ReadPattern read = ReadPattern::kStaged;
};

// A timed outage of every member of a failure domain (or of one cluster),
// for the simulator: from `at` (after the trace's first submission) for
// `duration` (-1: it never comes back).
//
// A partition (`kind: partition`) cuts the members off from the dispatcher
// only: they run on, their jobs with them, but no message passes either way
// until it heals.
struct MemberFailure {
  std::string label;             // "domain a-1" or "cluster openb", for reports
  bool partition = false;
  std::vector<int32_t> members;  // the members that fail
  TimeUs at = 0;
  TimeUs duration = -1;
};

// Gangs across regions (span.h, docs/federation.md "Gangs across regions"):
// the model of a job whose gang the dispatcher split over members of
// several regions (`span_regions: true`).
struct SpanModel {
  // Share of a step a gang in one region spends exchanging gradients; over
  // the inter-region link that share is slowed by intra / inter bandwidth.
  double comm_fraction = 0.1;
  // GiB each GPU of a part sends over the inter-region link per GPU-hour of
  // the job's trace (reference) time: cross_region_bytes and egress.
  double gib_per_gpu_hour = 10;
  // At most this many parts (one per region).
  int32_t max_parts = 4;
};

struct Federation {
  std::string name;
  std::vector<std::string> regions;
  std::vector<Member> members;
  std::vector<std::vector<Link>> links;  // [from region][to region]
  std::vector<Dataset> datasets;
  std::map<std::string, int32_t> dataset_index;
  // Tenants: home region and the datasets a job of the tenant that names none
  // reads (one of them, by a hash of the job id).
  std::map<std::string, int32_t> tenant_home;
  std::map<std::string, std::vector<int32_t>> tenant_datasets;
  int32_t dispatcher_region = 0;
  TimeUs digest_interval = 10 * kUsPerSecond;  // how often a changed member publishes its digest
  TimeUs lease_ttl = 60 * kUsPerSecond;        // how long a promise of capacity holds
  // The accelerator type the trace's durations were measured on ("": a job
  // runs its trace duration on every type).
  std::string trace_reference_type;
  // Member failures (simulator): silence after which the dispatcher marks a
  // member down and moves its queued jobs; how long after that it moves the
  // running ones from their last checkpoint; the checkpoint's size per GPU of
  // the job (a synthetic model: the checkpoint moves with the job).
  TimeUs member_timeout = 30 * kUsPerSecond;
  TimeUs requeue_running_after = 60 * kUsPerSecond;
  double checkpoint_gib_per_gpu = 2;
  std::vector<MemberFailure> failures;
  SpanModel span;

  std::optional<int32_t> FindRegion(const std::string& name) const;
  const Link& link(int32_t from, int32_t to) const { return links[from][to]; }
  int64_t total_gpus() const;
};

// Parses a federation file. `source` names it in errors ("fed.yaml: links[2]:
// bandwidth_gbps must be positive"); `load` reads each member's cluster.
StatusOr<Federation> ParseFederationYaml(const std::string& text, const std::string& source,
                                         const ClusterLoader& load);
StatusOr<Federation> LoadFederation(const std::string& path, const ClusterLoader& load);
// Reads a file of member failures (`failures:` list, as in the federation
// file) and puts them in place of `fed.failures`; errors name the file, line
// and key.
Status LoadMemberFailures(const std::string& path, Federation& fed);

}  // namespace berth::federation

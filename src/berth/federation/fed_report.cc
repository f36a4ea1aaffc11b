// Federation results as JSON and as a table (fed_report.h).
#include "berth/federation/fed_report.h"

#include <cstdio>
#include <nlohmann/json.hpp>

namespace berth::federation {

std::string FedResultsToJson(const std::vector<FedResult>& results) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& r : results) {
    nlohmann::ordered_json o;
    o["policy"] = r.policy;
    o["jobs_total"] = r.jobs_total;
    o["jobs_finished"] = r.jobs_finished;
    o["jobs_lost"] = r.jobs_lost;
    o["jobs_unfinished"] = r.jobs_unfinished;
    o["jct_mean_s"] = r.jct_s.mean;
    o["jct_p50_s"] = r.jct_s.p50;
    o["jct_p99_s"] = r.jct_s.p99;
    o["queue_delay_mean_s"] = r.queue_delay_s.mean;
    o["queue_delay_p99_s"] = r.queue_delay_s.p99;
    o["makespan_s"] = r.makespan_s;
    o["cross_region_bytes"] = r.cross_region_bytes;
    o["egress_cost"] = r.egress_cost;
    o["gpu_cost"] = r.gpu_cost;
    o["deadline_jobs"] = r.deadline_jobs;
    o["deadline_misses"] = r.deadline_misses;
    o["double_promises"] = r.double_promises;
    o["redispatches"] = r.redispatches;
    o["refused_promises"] = r.refused_promises;
    o["refused_never_fit"] = r.refused_never_fit;
    o["promises"] = r.promises;
    o["digests"] = r.digests;
    o["batches"] = r.batches;
    o["member_failures"] = r.member_failures;
    o["members_marked_down"] = r.members_marked_down;
    o["requeued_queued"] = r.requeued_queued;
    o["requeued_running"] = r.requeued_running;
    o["checkpoint_bytes"] = r.checkpoint_bytes;
    o["lost_work_gpu_s"] = r.lost_work_gpu_s;
    o["stale_copies_cancelled"] = r.stale_copies_cancelled;
    o["ran_twice"] = r.ran_twice;
    o["partitions"] = r.partitions;
    o["fenced_requeues"] = r.fenced_requeues;
    o["finished_unseen"] = r.finished_unseen;
    o["promises_to_silent"] = r.promises_to_silent;
    o["leases_expired"] = r.leases_expired;
    o["spanning_jobs"] = r.spanning_jobs;
    o["spanning_parts"] = r.spanning_parts;
    nlohmann::ordered_json ms = nlohmann::ordered_json::array();
    for (const auto& m : r.members) {
      nlohmann::ordered_json x;
      x["cluster"] = m.name;
      x["region"] = m.region;
      x["gpus"] = m.gpus;
      x["jobs_finished"] = m.jobs;
      x["utilization"] = m.utilization;
      x["gpu_cost"] = m.gpu_cost;
      ms.push_back(std::move(x));
    }
    o["clusters"] = std::move(ms);
    o["wall_seconds"] = r.wall_seconds;
    out.push_back(std::move(o));
  }
  return out.dump(2);
}

std::string FedResultsTable(const std::vector<FedResult>& results) {
  std::string s;
  char line[512];
  std::snprintf(line, sizeof line, "%-16s %9s %11s %11s %11s %11s %10s %10s %6s %6s %6s %5s\n", "policy", "finished",
                "jct_mean_s", "jct_p99_s", "queue_mean", "moved_GB", "egress_$", "gpu_$", "dl_miss", "dbl_pr",
                "redisp", "lost");
  s += line;
  for (const auto& r : results) {
    std::snprintf(line, sizeof line, "%-16s %9lld %11.1f %11.1f %11.1f %11.1f %10.0f %10.0f %6lld %6lld %6lld %5lld\n",
                  r.policy.c_str(), static_cast<long long>(r.jobs_finished), r.jct_s.mean, r.jct_s.p99,
                  r.queue_delay_s.mean, r.cross_region_bytes / 1e9, r.egress_cost, r.gpu_cost,
                  static_cast<long long>(r.deadline_misses), static_cast<long long>(r.double_promises),
                  static_cast<long long>(r.redispatches), static_cast<long long>(r.jobs_lost));
    s += line;
  }
  return s;
}

}  // namespace berth::federation

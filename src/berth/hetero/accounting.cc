// Quota charging and usage accrual in reference-equivalents.
#include "berth/hetero/accounting.h"

#include <algorithm>

namespace berth::hetero {

Status QuotaLedger::SetQuota(const std::string& queue, QueueQuota quota) {
  if (queue.empty()) return InvalidArgument("quota: empty queue name");
  if (quota.fungible < 0) return InvalidArgument("quota of '" + queue + "': negative fungible pool");
  if (quota.weight <= 0) return InvalidArgument("quota of '" + queue + "': weight must be positive");
  QueueQuota q;
  q.fungible = quota.fungible;
  q.weight = quota.weight;
  for (const auto& [type, gpus] : quota.type_gpus) {
    const AcceleratorSpec* s = normalizer_.model_catalog_find(type);
    if (!s) return InvalidArgument("quota of '" + queue + "': unknown accelerator type '" + type + "'");
    if (gpus < 0) return InvalidArgument("quota of '" + queue + "': negative GPUs for " + type);
    q.type_gpus[s->name] += gpus;
  }
  quotas_[queue] = std::move(q);
  usage_.try_emplace(queue);
  return Status::Ok();
}

StatusOr<Charge> QuotaLedger::Plan(const std::string& queue, const JobClass& c, const std::string& type,
                                   int64_t gpus) const {
  auto qi = quotas_.find(queue);
  if (qi == quotas_.end()) return NotFound("no quota for queue '" + queue + "'");
  const AcceleratorSpec* s = normalizer_.model_catalog_find(type);
  if (!s) return InvalidArgument("unknown accelerator type '" + type + "'");
  if (gpus <= 0) return InvalidArgument("a charge needs gpus > 0");
  const QueueQuota& q = qi->second;
  const QueueUsage& u = usage_.at(queue);
  Charge ch;
  ch.queue = queue;
  ch.type = s->name;
  ch.gpus = gpus;
  auto tq = q.type_gpus.find(s->name);
  const int64_t type_quota = tq == q.type_gpus.end() ? 0 : tq->second;
  auto tu = u.type_gpus_in_use.find(s->name);
  const int64_t type_used = tu == u.type_gpus_in_use.end() ? 0 : tu->second;
  ch.gpus_from_type_quota = std::clamp<int64_t>(type_quota - type_used, 0, gpus);
  const int64_t overflow = gpus - ch.gpus_from_type_quota;
  ch.from_fungible = overflow > 0 ? normalizer_.Equivalents(c, s->name, overflow) : 0;
  ch.equivalents = normalizer_.Equivalents(c, s->name, gpus);
  if (u.fungible_in_use + ch.from_fungible > q.fungible) {
    return FailedPrecondition("queue '" + queue + "': " + std::to_string(overflow) + " " + s->name +
                              " beyond its type quota need " + std::to_string(ch.from_fungible) +
                              " milli-" + normalizer_.reference() + " from the fungible pool; " +
                              std::to_string(q.fungible - u.fungible_in_use) + " left");
  }
  return ch;
}

StatusOr<Charge> QuotaLedger::Admit(const std::string& queue, JobId job, const JobClass& c, const std::string& type,
                                    int64_t gpus) {
  if (held_.count(job)) return AlreadyExists("job " + std::to_string(job.value()) + " already holds a charge");
  BERTH_ASSIGN_OR_RETURN(Charge ch, Plan(queue, c, type, gpus));
  QueueUsage& u = usage_[queue];
  u.type_gpus_in_use[ch.type] += ch.gpus_from_type_quota;
  u.fungible_in_use += ch.from_fungible;
  u.equivalents_in_use += ch.equivalents;
  u.gpus_in_use += ch.gpus;
  held_.emplace(job, ch);
  return ch;
}

Status QuotaLedger::Release(JobId job) {
  auto it = held_.find(job);
  if (it == held_.end()) return NotFound("job " + std::to_string(job.value()) + " holds no charge");
  const Charge& ch = it->second;
  QueueUsage& u = usage_[ch.queue];
  u.type_gpus_in_use[ch.type] -= ch.gpus_from_type_quota;
  u.fungible_in_use -= ch.from_fungible;
  u.equivalents_in_use -= ch.equivalents;
  u.gpus_in_use -= ch.gpus;
  held_.erase(it);
  return Status::Ok();
}

void QuotaLedger::Accrue(double seconds) {
  if (seconds <= 0) return;
  for (auto& [name, u] : usage_) {
    u.ref_gpu_seconds += seconds * static_cast<double>(u.equivalents_in_use) / kMilliPerRef;
    u.raw_gpu_seconds += seconds * static_cast<double>(u.gpus_in_use);
  }
}

const QueueUsage* QuotaLedger::usage(const std::string& queue) const {
  auto it = usage_.find(queue);
  return it == usage_.end() ? nullptr : &it->second;
}

const QueueQuota* QuotaLedger::quota(const std::string& queue) const {
  auto it = quotas_.find(queue);
  return it == quotas_.end() ? nullptr : &it->second;
}

double QuotaLedger::WeightedUsage(const std::string& queue) const {
  const QueueUsage* u = usage(queue);
  const QueueQuota* q = quota(queue);
  if (!u || !q) return 0;
  return u->ref_gpu_seconds / q->weight;
}

std::vector<std::string> QuotaLedger::FairShareOrder() const {
  std::vector<std::string> out;
  for (const auto& [name, q] : quotas_) out.push_back(name);
  std::stable_sort(out.begin(), out.end(),
                   [&](const std::string& a, const std::string& b) { return WeightedUsage(a) < WeightedUsage(b); });
  return out;
}

}  // namespace berth::hetero

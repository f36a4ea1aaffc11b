// Building and querying the queue tree.
#include "berth/tenancy/queue_tree.h"

#include <algorithm>
#include <cctype>

namespace berth::tenancy {

const char* EntitlementModeName(EntitlementMode m) { return m == EntitlementMode::kReachable ? "reachable" : "flat"; }

StatusOr<EntitlementMode> ParseEntitlementMode(std::string_view text) {
  if (text == "flat") return EntitlementMode::kFlat;
  if (text == "reachable") return EntitlementMode::kReachable;
  return InvalidArgument("expected flat or reachable, got '" + std::string(text) + "'");
}

namespace {

std::string GpusText(int64_t milli) {
  std::string s = std::to_string(milli / kMilliPerGpu);
  if (milli % kMilliPerGpu == 0) return s;
  std::string frac = std::to_string(1000 + milli % kMilliPerGpu).substr(1);
  while (frac.back() == '0') frac.pop_back();
  return s + "." + frac;
}

Status CheckQuota(const std::string& queue, const std::string& type, const Quota& q) {
  auto bad = [&](const std::string& field, const std::string& why) {
    return InvalidArgument("queue '" + queue + "' quota '" + type + "': " + field + ": " + why);
  };
  if (q.guarantee < 0) return bad("guarantee", "must not be negative");
  if (q.limit < kUnlimited) return bad("limit", "must not be negative");
  if (q.borrow_limit < kUnlimited) return bad("borrow_limit", "must not be negative");
  if (q.lend_limit < kUnlimited) return bad("lend_limit", "must not be negative");
  if (q.limit != kUnlimited && q.limit < q.guarantee) return bad("limit", "is below the guarantee");
  return Status::Ok();
}

}  // namespace

int32_t QueueTree::AddNode(QueueNode node) {
  const auto index = static_cast<int32_t>(nodes_.size());
  by_name_.emplace(node.name, index);
  nodes_.push_back(std::move(node));
  return index;
}

// A GPU product name as Kubernetes labels carry it ("NVIDIA-H100-80GB-HBM3")
// to the one cluster GPU type among its words ("H100"); "" when none or several.
std::string GpuTypeOfProductName(const std::string& product, const cluster::Cluster& cluster) {
  std::string found;
  std::string word;
  auto lower = [](std::string v) {
    for (char& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return v;
  };
  std::vector<std::string> words;
  for (char c : product + "-") {
    if (c == '-' || c == '_' || c == ' ' || c == '.') {
      if (!word.empty()) words.push_back(lower(word));
      word.clear();
    } else {
      word += c;
    }
  }
  for (const auto& t : cluster.gpu_types()) {
    const std::string name = lower(t.name);
    if (std::find(words.begin(), words.end(), name) == words.end()) continue;
    if (!found.empty()) return "";
    found = t.name;
  }
  return found;
}


StatusOr<QueueTree> QueueTree::Create(const std::vector<QueueSpec>& specs, const cluster::Cluster& cluster) {
  QueueTree tree(static_cast<int32_t>(cluster.gpu_types().size()));
  tree.auto_leaves_ = false;
  const int32_t dims = tree.num_dims();
  for (const auto& s : specs) {
    if (s.name.empty()) return InvalidArgument("queue: name must not be empty");
    if (s.name == "*") return InvalidArgument("queue '*': the name is reserved");
    if (tree.Find(s.name) >= 0) return InvalidArgument("queue '" + s.name + "': defined twice");
    if (!(s.weight > 0)) return InvalidArgument("queue '" + s.name + "': weight: must be positive");
    QueueNode n;
    n.name = s.name;
    n.weight = s.weight;
    n.budget = s.budget;
    n.quota.assign(dims, Quota{});
    n.has_quota.assign(dims, false);
    for (const auto& [type, q] : s.quotas) {
      BERTH_RETURN_IF_ERROR(CheckQuota(s.name, type, q));
      int32_t d = tree.all_types_dim();
      if (type != "*") {
        std::optional<GpuTypeId> t = cluster.FindGpuType(type);
        if (!t) {
          const std::string resolved = GpuTypeOfProductName(type, cluster);
          if (!resolved.empty()) t = cluster.FindGpuType(resolved);
        }
        if (!t) return InvalidArgument("queue '" + s.name + "': quota for GPU type '" + type + "', which the cluster lacks");
        d = t->value();
      }
      n.quota[d] = q;
      n.has_quota[d] = true;
    }
    tree.AddNode(std::move(n));
  }
  // Parents, after every name is known.
  for (size_t i = 0; i < specs.size(); ++i) {
    if (specs[i].parent.empty()) continue;
    const int32_t p = tree.Find(specs[i].parent);
    if (p < 0) return InvalidArgument("queue '" + specs[i].name + "': parent '" + specs[i].parent + "' is not defined");
    tree.nodes_[i].parent = p;
    tree.nodes_[p].children.push_back(static_cast<int32_t>(i));
  }
  for (int32_t i = 0; i < tree.size(); ++i) {  // cycles: a walk up must end within size() steps
    int32_t q = i;
    for (int32_t steps = 0; q >= 0; ++steps) {
      if (steps > tree.size()) return InvalidArgument("queue '" + tree.nodes_[i].name + "': its parents form a cycle");
      q = tree.nodes_[q].parent;
    }
  }
  // A parent's guarantee holds its children's: what is guaranteed to a child
  // is guaranteed to its parent too (the ledger admits use within a child's
  // guarantee without asking further up).
  for (int32_t p = 0; p < tree.size(); ++p) {
    const QueueNode& pn = tree.nodes_[p];
    for (int32_t d = 0; d < dims; ++d) {
      if (!pn.has_quota[d] || pn.children.empty()) continue;
      int64_t sum = 0;
      for (int32_t c : pn.children)
        if (tree.nodes_[c].has_quota[d]) sum += tree.nodes_[c].quota[d].guarantee;
      if (sum > pn.quota[d].guarantee) {
        const std::string type = d == tree.all_types_dim() ? "*" : cluster.gpu_type(GpuTypeId(static_cast<int16_t>(d))).name;
        return InvalidArgument("queue '" + pn.name + "' quota '" + type + "': guarantee: its children are guaranteed " +
                               GpusText(sum) + " GPUs, more than its " + GpusText(pn.quota[d].guarantee));
      }
    }
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    for (const auto& tenant : specs[i].tenants) {
      if (!tree.nodes_[i].is_leaf())
        return InvalidArgument("queue '" + specs[i].name + "': tenant '" + tenant + "' maps to a queue that has children");
      auto [it, fresh] = tree.by_tenant_.emplace(tenant, static_cast<int32_t>(i));
      if (!fresh)
        return InvalidArgument("queue '" + specs[i].name + "': tenant '" + tenant + "' is already in queue '" +
                               tree.nodes_[it->second].name + "'");
    }
  }
  return tree;
}

QueueTree QueueTree::FromTenantShares(std::span<const job::JobSpec> jobs, const cluster::Cluster& cluster) {
  return FromTenantShares(
      jobs.size(), [&](size_t i) { return JobDemand{jobs[i].tenant, jobs[i].total_milli_gpu(), jobs[i].duration}; },
      cluster);
}

QueueTree QueueTree::FromTenantShares(size_t n, const std::function<JobDemand(size_t)>& job,
                                      const cluster::Cluster& cluster) {
  QueueTree tree(static_cast<int32_t>(cluster.gpu_types().size()));
  std::map<std::string, double> demand;  // ordered: leaves in tenant-name order
  double total = 0;
  for (size_t i = 0; i < n; ++i) {
    const JobDemand j = job(i);
    const double secs = j.duration >= 0 ? std::max(1.0, UsToSeconds(j.duration)) : 3600.0;
    const double d = static_cast<double>(j.milli_gpu) * secs;
    demand[j.tenant] += d;
    total += d;
  }
  const int64_t cap = cluster.total_milli_gpu();
  for (const auto& [tenant, d] : demand) {
    const int32_t q = tree.AutoLeaf(tenant);
    if (total <= 0) continue;
    QueueNode& n = tree.nodes_[q];
    const double share = d / total;
    n.weight = std::max(share, 1e-6);
    n.quota[tree.all_types_dim()].guarantee = static_cast<int64_t>(share * static_cast<double>(cap));
    n.has_quota[tree.all_types_dim()] = true;
    tree.by_tenant_.emplace(tenant, q);
  }
  return tree;
}

int32_t QueueTree::Find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? -1 : it->second;
}

int32_t QueueTree::LeafFor(const job::JobSpec& job) const {
  if (!job.queue.empty()) {
    const int32_t q = Find(job.queue);
    if (q >= 0 && nodes_[q].is_leaf()) return q;
  }
  auto it = by_tenant_.find(job.tenant);
  if (it != by_tenant_.end()) return it->second;
  if (auto_leaves_) {  // the auto leaf's name: the job's queue, else its tenant, else "default"
    const std::string& name = !job.queue.empty() ? job.queue : job.tenant;
    const int32_t q = Find(name.empty() ? std::string("default") : name);
    return q >= 0 && nodes_[q].is_leaf() ? q : -1;
  }
  const int32_t d = Find("default");
  return d >= 0 && nodes_[d].is_leaf() ? d : -1;
}

int32_t QueueTree::AutoLeaf(const std::string& tenant) {
  const std::string name = tenant.empty() ? std::string("default") : tenant;
  const int32_t existing = Find(name);
  if (existing >= 0) return existing;
  QueueNode n;
  n.name = name;
  n.quota.assign(num_dims(), Quota{});
  n.has_quota.assign(num_dims(), false);
  return AddNode(std::move(n));
}

std::vector<int32_t> QueueTree::Leaves() const {
  std::vector<int32_t> out;
  for (int32_t i = 0; i < size(); ++i)
    if (nodes_[i].is_leaf()) out.push_back(i);
  return out;
}

int64_t QueueTree::PriceOf(GpuTypeId type, const cluster::Cluster& cluster) const {
  if (!type.valid() || type.value() >= static_cast<int32_t>(cluster.gpu_types().size())) return -1;
  auto it = prices_.find(cluster.gpu_type(type).name);
  if (it != prices_.end()) return it->second;
  for (const auto& [name, p] : prices_) {
    std::optional<GpuTypeId> t = cluster.FindGpuType(name);
    if (t && *t == type) return p;
  }
  return -1;
}

}  // namespace berth::tenancy

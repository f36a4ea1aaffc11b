// Invariant tests of ClusterState. Randomized sequences of place / release /
// node-down / node-up (valid and invalid) run on several cluster shapes; after
// every step:
//   - Apply succeeded exactly when a brute-force model says the event is valid;
//   - a failed Apply changed nothing observable;
//   - CheckIndexes() holds;
//   - every per-GPU, per-node, per-domain, per-type and bucket counter equals a
//     brute-force recomputation from a shadow copy of the allocations.
#include "berth/state/cluster_state.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>

#include "berth/cluster/loaders.h"
#include "berth/common/rng.h"
#include "berth/testing/paths.h"

namespace berth::state {
namespace {

using cluster::Cluster;

// The largest GPU count of each type's nodes (the state keeps buckets 0..max).
std::vector<int> MaxGpusPerType(const Cluster& c) {
  std::vector<int> max_k(c.gpu_types().size(), 0);
  for (const auto& node : c.nodes())
    if (node.gpu_count > 0) max_k[node.gpu_type.value()] = std::max(max_k[node.gpu_type.value()], node.gpu_count);
  return max_k;
}

// Everything a caller can observe, for "nothing changed" comparisons.
struct Snapshot {
  std::vector<int64_t> values;
  std::vector<std::vector<TaskKey>> tasks;
  bool operator==(const Snapshot&) const = default;
};

Snapshot Observe(const ClusterState& s) {
  const Cluster& c = s.cluster();
  Snapshot out;
  auto& v = out.values;
  for (int32_t i = 0; i < c.num_nodes(); ++i) {
    const NodeId n(i);
    v.insert(v.end(), {s.up(n), s.free_cpu(n), s.free_memory(n), s.node_free_milli(n), s.full_free_gpus(n),
                       static_cast<int64_t>(s.full_free_mask(n)), static_cast<int64_t>(s.node_version(n))});
    for (int g = 0; g < c.node(n).gpu_count; ++g) v.insert(v.end(), {s.gpu_free(n, g), s.gpu_memory_free(n, g)});
    out.tasks.push_back(s.tasks_on(n));
  }
  for (size_t d = 0; d < c.domains().size(); ++d) v.push_back(s.domain_full_free_gpus(DomainId(static_cast<int32_t>(d))));
  const std::vector<int> max_k = MaxGpusPerType(c);
  for (size_t t = 0; t < c.gpu_types().size(); ++t) {
    const GpuTypeId id(static_cast<int16_t>(t));
    v.push_back(s.type_full_free_gpus(id));
    v.push_back(s.type_free_milli(id));
    for (int k = 0; k <= max_k[t]; ++k)
      for (int32_t i = 0; i < c.num_nodes(); ++i) v.push_back(s.nodes_with_full_free(id, k).Test(i));
  }
  v.insert(v.end(), {s.allocated_milli(), s.free_full_gpus_total(), s.num_tasks()});
  return out;
}

// The brute-force model: allocations and node states, nothing else.
class Model {
 public:
  explicit Model(const Cluster& c) : c_(c), up_(c.num_nodes(), true) {}

  // Whether `e` should succeed, decided from first principles.
  bool Valid(const Event& e) const {
    if (auto* p = std::get_if<PlaceTask>(&e)) {
      const Allocation& a = p->alloc;
      if (!a.node.valid() || a.node.value() >= c_.num_nodes()) return false;
      if (allocs_.count(p->task) || !up_[a.node.value()]) return false;
      if (a.cpu_milli < 0 || a.memory_mib < 0 || a.milli_per_gpu < 0 || a.milli_per_gpu > kMilliPerGpu) return false;
      if (a.gpu_mask != 0 && a.milli_per_gpu == 0) return false;
      if (a.gpu_memory_mib < 0 || (a.gpu_memory_mib > 0 && a.gpu_mask == 0)) return false;
      const auto& node = c_.node(a.node);
      for (int g = node.gpu_count; g < 64; ++g)
        if ((a.gpu_mask >> g) & 1) return false;
      if (a.cpu_milli > FreeCpu(a.node) || a.memory_mib > FreeMem(a.node)) return false;
      for (int g = 0; g < node.gpu_count; ++g)
        if (((a.gpu_mask >> g) & 1) && (GpuFree(a.node, g) < a.milli_per_gpu || GpuMemFree(a.node, g) < a.gpu_memory_mib))
          return false;
      return true;
    }
    if (auto* r = std::get_if<ReleaseTask>(&e)) return allocs_.count(r->task) > 0;
    const auto& u = std::get<SetNodeUp>(e);
    return u.node.valid() && u.node.value() < c_.num_nodes();
  }

  void Apply(const Event& e) {
    if (auto* p = std::get_if<PlaceTask>(&e)) allocs_[p->task] = p->alloc;
    else if (auto* r = std::get_if<ReleaseTask>(&e)) allocs_.erase(r->task);
    else up_[std::get<SetNodeUp>(e).node.value()] = std::get<SetNodeUp>(e).up;
  }

  MilliGpu GpuFree(NodeId n, int g) const {
    MilliGpu f = kMilliPerGpu;
    for (const auto& [k, a] : allocs_)
      if (a.node == n && ((a.gpu_mask >> g) & 1)) f -= a.milli_per_gpu;
    return f;
  }
  // The GPU's type memory less the GPU memory of the allocations on it.
  MiB GpuMemFree(NodeId n, int g) const {
    const auto& node = c_.node(n);
    MiB f = node.gpu_type.valid() ? c_.gpu_types()[node.gpu_type.value()].memory_mib : 0;
    for (const auto& [k, a] : allocs_)
      if (a.node == n && ((a.gpu_mask >> g) & 1)) f -= a.gpu_memory_mib;
    return f;
  }
  MilliCpu FreeCpu(NodeId n) const {
    MilliCpu f = c_.node(n).cpu_milli;
    for (const auto& [k, a] : allocs_)
      if (a.node == n) f -= a.cpu_milli;
    return f;
  }
  MiB FreeMem(NodeId n) const {
    MiB f = c_.node(n).memory_mib;
    for (const auto& [k, a] : allocs_)
      if (a.node == n) f -= a.memory_mib;
    return f;
  }

  // Free resources of every GPU and node, recomputed in one pass over the allocations.
  struct Free {
    std::vector<MilliGpu> gpu;  // by global GPU index
    std::vector<MilliCpu> cpu;
    std::vector<MiB> mem;
    std::vector<int> full;  // fully free GPUs per node
  };
  Free Recompute() const {
    Free f;
    f.gpu.assign(c_.total_gpus(), kMilliPerGpu);
    f.cpu.resize(c_.num_nodes());
    f.mem.resize(c_.num_nodes());
    f.full.assign(c_.num_nodes(), 0);
    for (int32_t i = 0; i < c_.num_nodes(); ++i) {
      f.cpu[i] = c_.node(NodeId(i)).cpu_milli;
      f.mem[i] = c_.node(NodeId(i)).memory_mib;
    }
    for (const auto& [k, a] : allocs_) {
      const auto& node = c_.node(a.node);
      f.cpu[a.node.value()] -= a.cpu_milli;
      f.mem[a.node.value()] -= a.memory_mib;
      for (int g = 0; g < node.gpu_count; ++g)
        if ((a.gpu_mask >> g) & 1) f.gpu[node.first_gpu + g] -= a.milli_per_gpu;
    }
    for (int32_t i = 0; i < c_.num_nodes(); ++i) {
      const auto& node = c_.node(NodeId(i));
      for (int g = 0; g < node.gpu_count; ++g) f.full[i] += f.gpu[node.first_gpu + g] == kMilliPerGpu;
    }
    return f;
  }
  bool up(NodeId n) const { return up_[n.value()]; }
  const std::map<TaskKey, Allocation>& allocs() const { return allocs_; }

 private:
  const Cluster& c_;
  std::vector<bool> up_;
  std::map<TaskKey, Allocation> allocs_;  // ordered, so tests are reproducible
};

// Compares every counter of `s` with the model; returns the first difference.
std::string Compare(const ClusterState& s, const Model& m) {
  const Cluster& c = s.cluster();
  const Model::Free f = m.Recompute();
  const std::vector<int> max_k = MaxGpusPerType(c);
  int64_t allocated = 0;
  for (const auto& [k, a] : m.allocs()) {
    allocated += a.total_milli();
    const Allocation* got = s.Find(k);
    if (!got || !(*got == a)) return "Find(" + std::to_string(k.job.value()) + "/" + std::to_string(k.index) + ")";
  }
  if (s.num_tasks() != static_cast<int64_t>(m.allocs().size())) return "num_tasks";
  if (s.allocated_milli() != allocated) return "allocated_milli";
  std::vector<std::vector<TaskKey>> tasks(c.num_nodes());
  for (const auto& [k, a] : m.allocs()) tasks[a.node.value()].push_back(k);  // map order = key order
  int64_t total_free = 0;
  std::vector<int64_t> type_full(c.gpu_types().size(), 0), type_milli(c.gpu_types().size(), 0);
  for (int32_t i = 0; i < c.num_nodes(); ++i) {
    const NodeId n(i);
    const auto& node = c.node(n);
    const std::string at = "node " + node.name + ": ";
    if (s.up(n) != m.up(n)) return at + "up";
    if (s.free_cpu(n) != f.cpu[i]) return at + "free_cpu";
    if (s.free_memory(n) != f.mem[i]) return at + "free_memory";
    MilliGpu milli = 0;
    uint64_t mask = 0;
    for (int g = 0; g < node.gpu_count; ++g) {
      const MilliGpu free = f.gpu[node.first_gpu + g];
      if (s.gpu_free(n, g) != free) return at + "gpu_free(" + std::to_string(g) + ")";
      if (s.gpu_free_array(n)[g] != free) return at + "gpu_free_array";
      if (s.gpu_memory_free(n, g) != m.GpuMemFree(n, g)) return at + "gpu_memory_free(" + std::to_string(g) + ")";
      milli += free;
      if (free == kMilliPerGpu) mask |= uint64_t{1} << g;
    }
    if (s.node_free_milli(n) != milli) return at + "node_free_milli";
    if (s.full_free_mask(n) != mask) return at + "full_free_mask";
    if (s.full_free_gpus(n) != f.full[i]) return at + "full_free_gpus";
    std::vector<TaskKey> on(s.tasks_on(n).begin(), s.tasks_on(n).end());
    std::sort(on.begin(), on.end());  // the list's order is unspecified
    if (on != tasks[i]) return at + "tasks_on";
    if (m.up(n)) {
      total_free += f.full[i];
      if (node.gpu_count > 0) {
        type_full[node.gpu_type.value()] += f.full[i];
        type_milli[node.gpu_type.value()] += milli;
      }
    }
    // Buckets: node i is in bucket (type, k) exactly when up, of that type, with k fully free GPUs.
    for (size_t t = 0; t < c.gpu_types().size(); ++t) {
      const GpuTypeId id(static_cast<int16_t>(t));
      for (int b = 0; b <= max_k[t]; ++b) {
        const bool expect = m.up(n) && node.gpu_count > 0 && node.gpu_type == id && f.full[i] == b;
        if (s.nodes_with_full_free(id, b).Test(i) != expect)
          return at + "bucket (" + c.gpu_type(id).name + ", " + std::to_string(b) + ")";
      }
    }
  }
  if (s.free_full_gpus_total() != total_free) return "free_full_gpus_total";
  for (size_t t = 0; t < c.gpu_types().size(); ++t) {
    const GpuTypeId id(static_cast<int16_t>(t));
    if (s.type_full_free_gpus(id) != type_full[t]) return "type_full_free_gpus(" + c.gpu_type(id).name + ")";
    if (s.type_free_milli(id) != type_milli[t]) return "type_free_milli(" + c.gpu_type(id).name + ")";
    int32_t in_buckets = 0;
    for (int b = 0; b <= max_k[t]; ++b) in_buckets += s.nodes_with_full_free(id, b).Count();
    int32_t up_of_type = 0;
    for (int32_t i = 0; i < c.num_nodes(); ++i)
      up_of_type += m.up(NodeId(i)) && c.node(NodeId(i)).gpu_count > 0 && c.node(NodeId(i)).gpu_type == id;
    if (in_buckets != up_of_type) return "bucket population of " + c.gpu_type(id).name;
  }
  for (size_t d = 0; d < c.domains().size(); ++d) {
    const auto& dom = c.domains()[d];
    int64_t free = 0;
    for (int32_t i = dom.begin.value(); i < dom.end.value(); ++i)
      if (m.up(NodeId(i))) free += f.full[i];
    if (s.domain_full_free_gpus(DomainId(static_cast<int32_t>(d))) != free)
      return std::string("domain_full_free_gpus(") + cluster::LevelName(dom.level) + " " + dom.name + ")";
  }
  return "";
}

// One random event, valid or not: mostly plausible, sometimes deliberately bad.
Event RandomEvent(const Cluster& c, const Model& m, Rng& rng, int64_t& next_job) {
  const uint64_t r = rng.Uniform(100);
  if (r < 50) {
    PlaceTask p;
    const uint64_t pick = rng.Uniform(100);
    if (pick < 5 && !m.allocs().empty()) {
      p.task = m.allocs().begin()->first;  // already placed
    } else {
      p.task = TaskKey{JobId(next_job++), static_cast<int32_t>(rng.Uniform(4))};
    }
    const bool bad_node = rng.Uniform(100) < 2;
    p.alloc.node = bad_node ? NodeId(c.num_nodes() + static_cast<int32_t>(rng.Uniform(3)) - 1)
                            : NodeId(static_cast<int32_t>(rng.Uniform(c.num_nodes())));
    if (bad_node && p.alloc.node.value() < c.num_nodes()) p.alloc.node = NodeId(-1);
    const int gpus = p.alloc.node.valid() && p.alloc.node.value() < c.num_nodes()
                         ? c.node(p.alloc.node).gpu_count
                         : 8;
    const uint64_t kind = rng.Uniform(10);
    if (kind < 5 && gpus > 0) {  // whole GPUs: k random distinct GPUs (free or not)
      const int k = 1 + static_cast<int>(rng.Uniform(gpus));
      for (int j = 0; j < k; ++j) p.alloc.gpu_mask |= uint64_t{1} << rng.Uniform(gpus);
      p.alloc.milli_per_gpu = kMilliPerGpu;
    } else if (kind < 8 && gpus > 0) {  // a share of one GPU
      static constexpr MilliGpu kShares[] = {100, 250, 300, 500, 700, 1000};
      p.alloc.gpu_mask = uint64_t{1} << rng.Uniform(gpus);
      p.alloc.milli_per_gpu = kShares[rng.Uniform(std::size(kShares))];
      // Half the shares state GPU memory: up to the type's memory (so some do
      // not fit beside others), now and then more than any GPU has.
      if (rng.Uniform(2) == 0 && p.alloc.node.valid() && p.alloc.node.value() < c.num_nodes()) {
        const auto& node = c.node(p.alloc.node);
        const MiB type_mem = node.gpu_type.valid() ? c.gpu_types()[node.gpu_type.value()].memory_mib : 0;
        p.alloc.gpu_memory_mib = static_cast<MiB>(rng.Uniform(static_cast<uint64_t>(type_mem / 2 + 2)));
        if (rng.Uniform(20) == 0) p.alloc.gpu_memory_mib = type_mem + 1;
      }
    } else if (kind == 8) {  // malformed: a GPU the node lacks, or a zero share
      p.alloc.gpu_mask = rng.Uniform(2) ? uint64_t{1} << std::min(gpus, 63) : 1;
      p.alloc.milli_per_gpu = rng.Uniform(2) ? kMilliPerGpu : 0;
      if (rng.Uniform(4) == 0) p.alloc.milli_per_gpu = kMilliPerGpu + 1;
    }
    if (p.alloc.node.valid() && p.alloc.node.value() < c.num_nodes()) {
      const auto& node = c.node(p.alloc.node);
      p.alloc.cpu_milli = static_cast<MilliCpu>(rng.Uniform(node.cpu_milli / 3 + 2));
      p.alloc.memory_mib = static_cast<MiB>(rng.Uniform(node.memory_mib / 3 + 2));
      if (rng.Uniform(50) == 0) p.alloc.cpu_milli = -1;
    }
    return p;
  }
  if (r < 80) {
    if (m.allocs().empty() || rng.Uniform(20) == 0) return ReleaseTask{TaskKey{JobId(999'999), 0}};
    auto it = m.allocs().begin();
    std::advance(it, rng.Uniform(m.allocs().size()));
    return ReleaseTask{it->first};
  }
  if (rng.Uniform(30) == 0) return SetNodeUp{NodeId(rng.Uniform(2) ? -1 : c.num_nodes()), false};
  const NodeId n(static_cast<int32_t>(rng.Uniform(c.num_nodes())));
  // Bias towards bringing nodes back so that most of the cluster stays usable.
  return SetNodeUp{n, !m.up(n) ? rng.Uniform(4) != 0 : rng.Uniform(3) != 0};
}

struct Shape {
  const char* name;
  std::string source;  // a compact spec or a file under the source tree
  friend void PrintTo(const Shape& s, std::ostream* os) { *os << s.name << " (" << s.source << ")"; }
};

class RandomSequences : public ::testing::TestWithParam<Shape> {};

TEST_P(RandomSequences, KeepEveryIndexExact) {
  std::string source = GetParam().source;
  if (source.ends_with(".yaml")) source = testing::SourceDir() + "/" + source;
  auto loaded = cluster::LoadCluster(source);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  const Cluster& c = *loaded;
  for (uint64_t seed : {1, 2, 3}) {
    ClusterState s(c);
    Model m(c);
    Rng rng(seed * 7919 + c.num_nodes());
    int64_t next_job = 0;
    int applied = 0, rejected = 0;
    ASSERT_EQ(Compare(s, m), "");
    const int steps = c.num_nodes() > 100 ? 1200 : 2500;
    for (int step = 0; step < steps; ++step) {
      const Event e = RandomEvent(c, m, rng, next_job);
      const bool valid = m.Valid(e);
      const Snapshot before = Observe(s);
      const Status checked = s.Check(e);
      ASSERT_EQ(Observe(s), before) << "Check changed the state";
      const Status st = s.Apply(e);
      ASSERT_EQ(st.ok(), valid) << "seed " << seed << " step " << step << ": " << st.ToString();
      ASSERT_EQ(checked.ok(), st.ok()) << "Check and Apply disagree at step " << step;
      if (st.ok()) {
        m.Apply(e);
        ++applied;
      } else {
        ++rejected;
        ASSERT_EQ(Observe(s), before) << "a failed Apply changed state at step " << step << ": " << st.ToString();
      }
      const Status idx = s.CheckIndexes();
      ASSERT_TRUE(idx.ok()) << "seed " << seed << " step " << step << ": " << idx.ToString();
      const std::string diff = Compare(s, m);
      ASSERT_EQ(diff, "") << "seed " << seed << " step " << step;
    }
    // Both kinds of outcome must have been exercised.
    EXPECT_GT(applied, steps / 4);
    EXPECT_GT(rejected, steps / 20);
    // Drain: bring every node up and release everything; the state is as new.
    for (int32_t i = 0; i < c.num_nodes(); ++i) ASSERT_TRUE(s.Apply(SetNodeUp{NodeId(i), true}).ok());
    std::vector<TaskKey> keys;
    for (const auto& [k, a] : m.allocs()) keys.push_back(k);
    for (const TaskKey& k : keys) {
      ASSERT_TRUE(s.Apply(ReleaseTask{k}).ok());
      m.Apply(ReleaseTask{k});
    }
    for (int32_t i = 0; i < c.num_nodes(); ++i) m.Apply(SetNodeUp{NodeId(i), true});
    EXPECT_EQ(Compare(s, m), "");
    EXPECT_EQ(s.free_full_gpus_total(), c.total_gpus());
    EXPECT_EQ(s.allocated_milli(), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, RandomSequences,
    ::testing::Values(Shape{"Flat", "4x8:H100"},
                      Shape{"Heterogeneous", "3x2:T4+2x8:V100/nvl=2+2x0:"},
                      Shape{"MultiLevel", "12x8:H100/leaf=2/spine=3+4x4:A100/leaf=2/region=r2"},
                      Shape{"OverOneWord", "130x8:H100/leaf=16/spine=4"},
                      Shape{"Federation", "examples/clusters/federation-2-regions.yaml"}),
    [](const ::testing::TestParamInfo<Shape>& info) { return std::string(info.param.name); });

class ClusterStateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = cluster::ParseClusterSpec("2x4:A100/leaf=1");
    ASSERT_TRUE(c.ok());
    cluster_ = std::make_unique<Cluster>(std::move(c).value());
  }
  std::unique_ptr<Cluster> cluster_;
};

TEST_F(ClusterStateTest, SharesStackOnOneGpuUntilFull) {
  ClusterState s(*cluster_);
  const NodeId n0(0);
  auto share = [&](int job, MilliGpu milli) {
    return s.Apply(PlaceTask{{JobId(job), 0}, {.node = n0, .gpu_mask = 0b10, .milli_per_gpu = milli}});
  };
  EXPECT_TRUE(share(1, 600).ok());
  EXPECT_EQ(s.full_free_gpus(n0), 3);
  EXPECT_EQ(s.gpu_free(n0, 1), 400);
  EXPECT_TRUE(share(2, 400).ok());
  EXPECT_EQ(s.gpu_free(n0, 1), 0);
  Status full = share(3, 1);
  EXPECT_EQ(full.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(full.message().find("GPU 1"), std::string::npos);
  EXPECT_TRUE(s.Apply(ReleaseTask{{JobId(1), 0}}).ok());
  EXPECT_EQ(s.full_free_gpus(n0), 3);  // still 400 taken
  EXPECT_TRUE(s.Apply(ReleaseTask{{JobId(2), 0}}).ok());
  EXPECT_EQ(s.full_free_gpus(n0), 4);
  EXPECT_TRUE(s.CheckIndexes().ok());
}

TEST_F(ClusterStateTest, DownNodeLeavesTheFreeIndexesButKeepsItsTasks) {
  ClusterState s(*cluster_);
  const NodeId n1(1);
  ASSERT_TRUE(s.Apply(PlaceTask{{JobId(1), 0}, {.node = n1, .gpu_mask = 0b1, .milli_per_gpu = 1000}}).ok());
  const DomainId leaf1 = cluster_->node(n1).domain[static_cast<int>(cluster::Level::kLeaf)];
  EXPECT_EQ(s.domain_full_free_gpus(leaf1), 3);
  const uint64_t version = s.node_version(n1);
  ASSERT_TRUE(s.Apply(SetNodeUp{n1, false}).ok());
  EXPECT_GT(s.node_version(n1), version);
  EXPECT_EQ(s.domain_full_free_gpus(leaf1), 0);
  EXPECT_EQ(s.free_full_gpus_total(), 4);
  EXPECT_FALSE(s.nodes_with_full_free(GpuTypeId(0), 3).Test(1));
  EXPECT_EQ(s.tasks_on(n1).size(), 1u);
  Status placed = s.Apply(PlaceTask{{JobId(2), 0}, {.node = n1, .gpu_mask = 0b10, .milli_per_gpu = 1000}});
  EXPECT_EQ(placed.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(placed.message().find("is down"), std::string::npos);
  ASSERT_TRUE(s.Apply(ReleaseTask{{JobId(1), 0}}).ok());  // a task may leave a down node
  EXPECT_EQ(s.domain_full_free_gpus(leaf1), 0);
  ASSERT_TRUE(s.Apply(SetNodeUp{n1, false}).ok());  // already down: no-op
  ASSERT_TRUE(s.Apply(SetNodeUp{n1, true}).ok());
  EXPECT_EQ(s.domain_full_free_gpus(leaf1), 4);
  EXPECT_TRUE(s.nodes_with_full_free(GpuTypeId(0), 4).Test(1));
  EXPECT_TRUE(s.CheckIndexes().ok());
}

TEST_F(ClusterStateTest, AWhatIfCopyIsIndependent) {
  ClusterState s(*cluster_);
  ClusterState what_if = s;
  ASSERT_TRUE(what_if.Apply(PlaceTask{{JobId(1), 0}, {.node = NodeId(0), .gpu_mask = 0b1111, .milli_per_gpu = 1000}}).ok());
  EXPECT_EQ(what_if.free_full_gpus_total(), 4);
  EXPECT_EQ(s.free_full_gpus_total(), 8);
  EXPECT_EQ(s.Find({JobId(1), 0}), nullptr);
  EXPECT_TRUE(s.CheckIndexes().ok());
  EXPECT_TRUE(what_if.CheckIndexes().ok());
}

TEST_F(ClusterStateTest, ErrorCodesSayWhy) {
  ClusterState s(*cluster_);
  EXPECT_EQ(s.Apply(PlaceTask{{JobId(1), 0}, {.node = NodeId(7)}}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.Apply(PlaceTask{{JobId(1), 0}, {.node = NodeId(0), .gpu_mask = 0b10000, .milli_per_gpu = 1000}}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(s.Apply(PlaceTask{{JobId(1), 0}, {.node = NodeId(0), .cpu_milli = 1'000'000'000}}).code(),
            StatusCode::kFailedPrecondition);
  ASSERT_TRUE(s.Apply(PlaceTask{{JobId(1), 0}, {.node = NodeId(0)}}).ok());
  EXPECT_EQ(s.Apply(PlaceTask{{JobId(1), 0}, {.node = NodeId(1)}}).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(s.Apply(ReleaseTask{{JobId(2), 0}}).code(), StatusCode::kNotFound);
  EXPECT_EQ(s.Apply(SetNodeUp{NodeId(-1), false}).code(), StatusCode::kInvalidArgument);
}

// A gang of 100,000 zero-GPU tasks on one node, released in index order (the
// order a gang ends in): each release is constant time, and the per-node list
// and the tasks' slots in it stay exact.
TEST_F(ClusterStateTest, LargeGangOnOneNodeReleasesInAnyOrder) {
  ClusterState s(*cluster_);
  constexpr int32_t kTasks = 100'000;
  for (int32_t t = 0; t < kTasks; ++t) ASSERT_TRUE(s.Apply(PlaceTask{{JobId(1), t}, {.node = NodeId(0)}}).ok());
  ASSERT_TRUE(s.Apply(PlaceTask{{JobId(2), 0}, {.node = NodeId(0)}}).ok());
  EXPECT_EQ(s.tasks_on(NodeId(0)).size(), kTasks + 1u);
  for (int32_t t = 0; t < kTasks / 2; ++t) ASSERT_TRUE(s.Apply(ReleaseTask{{JobId(1), t}}).ok());
  EXPECT_TRUE(s.CheckIndexes().ok()) << s.CheckIndexes().message();
  for (int32_t t = kTasks - 1; t >= kTasks / 2; t -= 2) ASSERT_TRUE(s.Apply(ReleaseTask{{JobId(1), t}}).ok());
  EXPECT_TRUE(s.CheckIndexes().ok()) << s.CheckIndexes().message();
  for (int32_t t = kTasks / 2; t < kTasks; t += 2) ASSERT_TRUE(s.Apply(ReleaseTask{{JobId(1), t}}).ok());
  ASSERT_EQ(s.tasks_on(NodeId(0)).size(), 1u);
  EXPECT_EQ(s.tasks_on(NodeId(0))[0], (TaskKey{JobId(2), 0}));
  EXPECT_TRUE(s.CheckIndexes().ok()) << s.CheckIndexes().message();
}

}  // namespace
}  // namespace berth::state

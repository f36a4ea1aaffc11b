// The "binpack" score and candidate plugin (see binpack.h for the order and
// why the candidates give the same choice as a full scan).
#include "berth/plugins/candidates/binpack.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <limits>
#include <memory>
#include <vector>

#include "berth/framework/plugin.h"
#include "berth/plugins/builtin.h"

namespace berth::plugins {
namespace {

using framework::CycleContext;
using framework::TaskRequest;
using state::ClusterState;

constexpr int64_t kFreeGpuWeight = 128;  // > any count of fully free GPUs on a node
constexpr MilliGpu kNoFit = std::numeric_limits<MilliGpu>::max();

// Free milli of the tightest GPU of `node` with at least `r` free, or kNoFit.
MilliGpu TightestFit(const ClusterState& s, NodeId node, MilliGpu r) {
  const MilliGpu* free = s.gpu_free_array(node);
  const int count = s.cluster().node(node).gpu_count;
  MilliGpu best = kNoFit;
  for (int g = 0; g < count; ++g)
    if (free[g] >= r && free[g] < best) best = free[g];
  return best;
}

int64_t ShareKey(MilliGpu fit, MilliGpu r, int32_t full_free) {
  const int32_t left_full = full_free - (fit == kMilliPerGpu ? 1 : 0);
  return int64_t{fit - r} * kFreeGpuWeight + left_full;
}

class Binpack final : public framework::CandidatePlugin, public framework::ScorePlugin {
 public:
  static constexpr std::string_view kName = "binpack";
  explicit Binpack(int32_t limit) : limit_(limit) { heap_.reserve(limit); }
  std::string_view Name() const override { return kName; }

  int64_t Score(const CycleContext& ctx, const TaskRequest& req, NodeId n) const override {
    std::optional<int64_t> key = BinpackKey(ctx.state, req, n);
    return key ? -*key : std::numeric_limits<int64_t>::min() / 2;
  }

  void Candidates(const CycleContext& ctx, const TaskRequest& req, std::vector<NodeId>& out) const override {
    if (req.gpus <= 0 || req.gpu_types_unknown) return;
    if (req.milli_per_gpu < kMilliPerGpu && req.gpus != 1) return;
    const ClusterState& s = ctx.state;
    Types types;
    for (size_t t = 0; t < s.cluster().gpu_types().size(); ++t) {
      const GpuTypeId id(static_cast<int16_t>(t));
      if (req.gpu_types.Accepts(id) && s.max_full_free(id) >= req.gpus) types.ids[types.count++] = id;
    }
    if (types.count == 0) return;
    int max_k = 0;
    for (int i = 0; i < types.count; ++i) max_k = std::max(max_k, s.max_full_free(types.ids[i]));
    int32_t remaining = limit_;

    if (req.milli_per_gpu == kMilliPerGpu) {
      for (int k = req.gpus; k <= max_k; ++k) {
        const int64_t key = k - req.gpus;
        auto fits = [key](NodeId) -> std::optional<int64_t> { return key; };
        if (!TakeTier(ctx, types, [k](const ClusterState& st, GpuTypeId t) -> const DenseBitset* {
              return k <= st.max_full_free(t) ? &st.nodes_with_full_free(t, k) : nullptr;
            }, true, fits, remaining, out))
          return;
      }
      return;
    }

    // A share: partly used GPUs that fit, tightest first, then whole-GPU holes.
    const MilliGpu r = req.milli_per_gpu;
    for (int c = ClusterState::ShareClassOf(r); c < state::kNumShareClasses; ++c) {
      auto fits = [&s, r, c](NodeId n) -> std::optional<int64_t> {
        const MilliGpu fit = TightestFit(s, n, r);
        if (fit >= kMilliPerGpu || ClusterState::ShareClassOf(fit) != c) return std::nullopt;
        return ShareKey(fit, r, s.full_free_gpus(n));
      };
      if (!TakeTier(ctx, types, [c](const ClusterState& st, GpuTypeId t) { return &st.nodes_with_share_class(t, c); },
                    false, fits, remaining, out))
        return;
    }
    for (int k = 1; k <= max_k; ++k) {
      const int64_t key = ShareKey(kMilliPerGpu, r, k);
      auto fits = [&s, r, key](NodeId n) -> std::optional<int64_t> {
        if (TightestFit(s, n, r) != kMilliPerGpu) return std::nullopt;  // proposed with its share class
        return key;
      };
      if (!TakeTier(ctx, types, [k](const ClusterState& st, GpuTypeId t) -> const DenseBitset* {
            return k <= st.max_full_free(t) ? &st.nodes_with_full_free(t, k) : nullptr;
          }, true, fits, remaining, out))
        return;
    }
  }

 private:
  struct Types {
    std::array<GpuTypeId, cluster::kMaxGpuTypes> ids;
    int count = 0;
  };
  struct Pick {
    int64_t key;
    int32_t rank;
    int32_t node;
    bool operator<(const Pick& o) const { return key != o.key ? key < o.key : rank < o.rank; }
  };

  // One tier: the nodes of `set_of(state, type)` over the accepted types for
  // which `fits` gives a key. Appends the tier's best `remaining` nodes by
  // (key, rank), or all of them. Returns true when the whole tier was taken
  // and room is left, so the caller may go on to the next tier.
  // `constant_key`: every node of the tier has the same key, so without a
  // custom rank the lowest node ids are the best and the scan may stop early.
  template <typename SetOf, typename Fits>
  bool TakeTier(const CycleContext& ctx, const Types& types, SetOf set_of, bool constant_key, Fits fits,
                int32_t& remaining, std::vector<NodeId>& out) const {
    const bool early_stop = constant_key && ctx.node_rank.empty();
    heap_.clear();
    int64_t seen = 0;
    for (int i = 0; i < types.count; ++i) {
      const DenseBitset* set = set_of(ctx.state, types.ids[i]);
      if (!set) continue;
      int32_t taken_here = 0;
      for (int32_t n = set->FindNext(0); n >= 0; n = set->FindNext(n + 1)) {
        const std::optional<int64_t> key = fits(NodeId(n));
        if (!key) continue;
        ++seen;
        const Pick p{*key, ctx.RankOf(NodeId(n)), n};
        if (static_cast<int32_t>(heap_.size()) < remaining) {
          heap_.push_back(p);
          std::push_heap(heap_.begin(), heap_.end());
        } else if (p < heap_.front()) {
          std::pop_heap(heap_.begin(), heap_.end());
          heap_.back() = p;
          std::push_heap(heap_.begin(), heap_.end());
        }
        if (early_stop && ++taken_here > remaining) break;
      }
    }
    std::sort_heap(heap_.begin(), heap_.end());
    for (const Pick& p : heap_) out.push_back(NodeId(p.node));
    if (seen >= remaining) return false;
    remaining -= static_cast<int32_t>(seen);
    return true;
  }

  int32_t limit_;
  mutable std::vector<Pick> heap_;  // scratch, reused across calls
};

}  // namespace

std::optional<int64_t> BinpackKey(const ClusterState& s, const TaskRequest& req, NodeId n) {
  const int32_t full = s.full_free_gpus(n);
  if (req.gpus <= 0) return full;
  const auto& node = s.cluster().node(n);
  if (node.gpu_count < req.gpus || req.gpu_types_unknown || !req.gpu_types.Accepts(node.gpu_type)) return std::nullopt;
  if (req.milli_per_gpu == kMilliPerGpu) {
    if (full < req.gpus) return std::nullopt;
    return full - req.gpus;
  }
  if (req.gpus == 1) {
    const MilliGpu fit = TightestFit(s, n, req.milli_per_gpu);
    if (fit == kNoFit) return std::nullopt;
    return ShareKey(fit, req.milli_per_gpu, full);
  }
  // Several shares (not produced by valid jobs): least free milli left.
  if (s.node_free_milli(n) < req.total_milli()) return std::nullopt;
  return s.node_free_milli(n) - req.total_milli();
}

Status RegisterCandidatePlugins(framework::PluginRegistry& r) {
  return r.Register(std::string(Binpack::kName),
                    [](const framework::PluginArgs& args) -> StatusOr<std::unique_ptr<framework::Plugin>> {
                      int32_t limit = 8;
                      for (const auto& [key, value] : args) {
                        if (key != "limit") return InvalidArgument("binpack: unknown argument '" + key + "'");
                        auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), limit);
                        if (ec != std::errc() || p != value.data() + value.size() || limit < 1 || limit > 4096)
                          return InvalidArgument("binpack: limit must be an integer in 1..4096, not '" + value + "'");
                      }
                      return std::unique_ptr<framework::Plugin>(std::make_unique<Binpack>(limit));
                    });
}

}  // namespace berth::plugins

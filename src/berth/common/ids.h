// Tagged integer ids. A NodeId cannot be passed where a JobId is expected.
// Ids are dense indexes into the arrays that own the objects (node 0..N-1),
// which keeps hot paths free of hash lookups.
//
//   NodeId n{3};  n.value() == 3;  NodeId() is invalid (-1).
#pragma once

#include <compare>
#include <cstdint>
#include <functional>

namespace berth {

template <typename Tag, typename Rep = int32_t>
class Id {
 public:
  using rep = Rep;
  constexpr Id() = default;
  constexpr explicit Id(Rep v) : v_(v) {}
  constexpr Rep value() const { return v_; }
  constexpr bool valid() const { return v_ >= 0; }
  constexpr auto operator<=>(const Id&) const = default;

 private:
  Rep v_ = -1;
};

using NodeId = Id<struct NodeTag>;
using DomainId = Id<struct DomainTag>;
using GpuTypeId = Id<struct GpuTypeTag, int16_t>;
using JobId = Id<struct JobTag, int64_t>;
using TenantId = Id<struct TenantTag>;

// A task is one member of a job's gang: (job, index within the job).
struct TaskKey {
  JobId job;
  int32_t index = 0;
  auto operator<=>(const TaskKey&) const = default;
};

}  // namespace berth

template <typename Tag, typename Rep>
struct std::hash<berth::Id<Tag, Rep>> {
  size_t operator()(const berth::Id<Tag, Rep>& id) const noexcept { return std::hash<Rep>()(id.value()); }
};
template <>
struct std::hash<berth::TaskKey> {
  size_t operator()(const berth::TaskKey& k) const noexcept {
    return std::hash<int64_t>()(k.job.value() * 1000003 + k.index);
  }
};

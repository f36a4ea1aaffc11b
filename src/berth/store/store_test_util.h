// Helpers shared by the store tests.
#pragma once

#include <future>
#include <utility>
#include <vector>

#include "berth/store/store.h"

namespace berth::store {

// Appends a batch and waits for its outcome: the status and the last revision.
inline std::pair<Status, int64_t> AppendSync(Store& s, Fence f, std::vector<Record> recs) {
  std::promise<std::pair<Status, int64_t>> p;
  auto fut = p.get_future();
  s.Append(f, std::move(recs), [&p](const Status& st, int64_t rev) { p.set_value({st, rev}); });
  return fut.get();
}

}  // namespace berth::store

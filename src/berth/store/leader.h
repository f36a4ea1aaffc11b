// Who holds a replicated store's term and where it can be reached, from its
// announcement (Store::Announce / Store::Leader): replicas of `berth serve`
// and federation dispatchers announce themselves as a JSON object with "id"
// and "address"; anything else is taken as it is.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "berth/store/store.h"

namespace berth::store {

struct LeaderAnnouncement {
  std::string raw;      // as announced; "" when no leader is known
  nlohmann::json who;   // the announced object, or `raw` as a JSON string
  std::string address;  // its "address" when it has one, else `raw`
};

LeaderAnnouncement ReadLeader(const Store& store);

}  // namespace berth::store

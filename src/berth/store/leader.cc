// ReadLeader: the leader's announcement, parsed.
#include "berth/store/leader.h"

namespace berth::store {

LeaderAnnouncement ReadLeader(const Store& store) {
  LeaderAnnouncement a;
  a.raw = store.Leader();
  a.who = nlohmann::json::parse(a.raw, nullptr, false);
  if (a.who.is_discarded()) a.who = a.raw;
  if (a.who.is_object() && a.who.contains("address") && a.who["address"].is_string())
    a.address = a.who["address"].get<std::string>();
  else
    a.address = a.raw;
  return a;
}

}  // namespace berth::store

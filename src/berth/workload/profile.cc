// Adds the service plugins to a profile.
#include "berth/workload/profile.h"

#include <algorithm>

namespace berth::workload {

framework::Profile WithServicePlugins(framework::Profile p) {
  auto add = [](std::vector<framework::PluginRef>& list) {
    if (std::none_of(list.begin(), list.end(), [](const framework::PluginRef& r) { return r.name == "spread"; }))
      list.push_back(framework::PluginRef{"spread"});
  };
  add(p.filter);
  add(p.admit);
  return p;
}

}  // namespace berth::workload

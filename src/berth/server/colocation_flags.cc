// The co-location set-up of `berth serve` (see colocation_flags.h).
#include "berth/server/colocation_flags.h"

#include <cstdio>

#include "berth/plugins/colocation/colocation.h"

namespace berth::server {
namespace {
std::string Ratio(double r) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", r);
  return buf;
}
}  // namespace

Status ValidateColocation(const ServeColocation& c) {
  if (c.mode != "colocate" && c.mode != "static")
    return InvalidArgument("--colocation-mode: expected colocate or static, got '" + c.mode + "'");
  if (!(c.overcommit >= 0 && c.overcommit <= 1))
    return InvalidArgument("--overcommit: expected a ratio in 0..1, got " + Ratio(c.overcommit));
  return Status::Ok();
}

StatusOr<framework::PluginArgs> ColocationArgs(const ServeColocation& c, const cluster::Cluster& cluster,
                                               const tenancy::QueueFile* queues) {
  framework::PluginArgs args;
  if (c.reserved.empty()) return args;
  BERTH_RETURN_IF_ERROR(ValidateColocation(c));
  // Node names to ids; ids and ranges as they are.
  std::string ids;
  size_t pos = 0;
  while (pos <= c.reserved.size()) {
    size_t comma = c.reserved.find(',', pos);
    if (comma == std::string::npos) comma = c.reserved.size();
    std::string item = c.reserved.substr(pos, comma - pos);
    pos = comma + 1;
    if (item.empty()) continue;
    for (size_t n = 0; n < cluster.nodes().size(); ++n)
      if (cluster.nodes()[n].name == item) {
        item = std::to_string(n);
        break;
      }
    ids += (ids.empty() ? "" : ",") + item;
  }
  if (ids.empty()) return InvalidArgument("--reserved-nodes: no node given");
  args["reserved"] = ids;
  args["mode"] = c.mode;
  args["overcommit"] = Ratio(c.overcommit);
  if (c.mode == "colocate") args["spill"] = c.spill ? "true" : "false";
  if (queues != nullptr)
    for (const auto& [queue, r] : queues->overcommit) args["queue." + queue] = Ratio(r);
  StatusOr<plugins::ColocationConfig> parsed = plugins::ParseColocationArgs(args, &cluster);
  if (!parsed.ok()) {
    std::string msg(parsed.status().message());
    const std::string prefix = "plugin 'colocation': reserved: ";
    if (msg.rfind(prefix, 0) == 0)
      return InvalidArgument("--reserved-nodes: " + msg.substr(prefix.size()) + " (or a node name of the cluster)");
    return InvalidArgument("--reserved-nodes: " + msg);
  }
  return args;
}

}  // namespace berth::server

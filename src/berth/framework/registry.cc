// Registries and profile instantiation.
#include "berth/framework/registry.h"

namespace berth::framework {

const char* VerdictCodeName(VerdictCode c) {
  switch (c) {
    case VerdictCode::kSuccess: return "success";
    case VerdictCode::kUnschedulable: return "unschedulable";
    case VerdictCode::kUnresolvable: return "unresolvable";
    case VerdictCode::kWait: return "wait";
    case VerdictCode::kError: return "error";
  }
  return "?";
}

Status Profile::Validate() const {
  if (queue_sort.empty()) return InvalidArgument("profile '" + name + "': no queue-sort plugin");
  for (const auto& s : score)
    if (s.weight < 0) return InvalidArgument("profile '" + name + "': negative weight for " + s.name);
  return Status::Ok();
}

Status PluginRegistry::Register(const std::string& name, Factory factory) {
  return Add(name,
             ContextFactory([f = std::move(factory)](const PluginArgs& args, const PluginContext&) { return f(args); }),
             /*reads_context=*/false);
}

Status PluginRegistry::Register(const std::string& name, ContextFactory factory) {
  return Add(name, std::move(factory), /*reads_context=*/true);
}

Status PluginRegistry::Add(const std::string& name, ContextFactory factory, bool reads_context) {
  if (!factories_.emplace(name, std::move(factory)).second)
    return AlreadyExists("plugin '" + name + "' is already registered");
  if (reads_context) reads_context_.insert(name);
  return Status::Ok();
}

bool ProfileReadsContext(const Profile& profile, const PluginRegistry& registry) {
  if (registry.ReadsContext(profile.queue_sort)) return true;
  for (const auto* refs : {&profile.admit, &profile.plan, &profile.filter, &profile.candidates, &profile.score,
                           &profile.reserve, &profile.permit, &profile.post_filter, &profile.bind, &profile.resize})
    for (const PluginRef& ref : *refs)
      if (registry.ReadsContext(ref.name)) return true;
  return false;
}

StatusOr<std::unique_ptr<Plugin>> PluginRegistry::Create(const std::string& name, const PluginArgs& args,
                                                         const PluginContext& context) const {
  auto it = factories_.find(name);
  if (it == factories_.end()) {
    std::string known;
    for (const auto& [n, f] : factories_) known += (known.empty() ? "" : ", ") + n;
    return NotFound("unknown plugin '" + name + "' (known: " + known + ")");
  }
  return it->second(args, context);
}

std::vector<std::string> PluginRegistry::Names() const {
  std::vector<std::string> out;
  for (const auto& [n, f] : factories_) out.push_back(n);
  return out;
}

StatusOr<PluginArgSpec> ParsePluginArg(const std::string& spec) {
  const size_t eq = spec.find('=');
  const size_t dot = spec.find('.');
  if (eq == std::string::npos || dot == std::string::npos || dot > eq)
    return InvalidArgument("plugin argument '" + spec + "': expected PLUGIN.KEY=VALUE, e.g. goodput.round_s=30");
  PluginArgSpec a{spec.substr(0, dot), spec.substr(dot + 1, eq - dot - 1), spec.substr(eq + 1)};
  if (a.plugin.empty()) return InvalidArgument("plugin argument '" + spec + "': no plugin name before '.'");
  if (a.key.empty()) return InvalidArgument("plugin argument '" + spec + "': no key between '.' and '='");
  return a;
}

bool SetPluginArg(Profile& profile, const PluginArgSpec& arg) {
  bool found = false;
  if (profile.queue_sort == arg.plugin) {
    profile.queue_sort_args[arg.key] = arg.value;
    found = true;
  }
  for (auto* point : {&profile.admit, &profile.plan, &profile.filter, &profile.candidates, &profile.score,
                      &profile.reserve, &profile.permit, &profile.post_filter, &profile.bind, &profile.resize})
    for (PluginRef& ref : *point)
      if (ref.name == arg.plugin) {
        ref.args[arg.key] = arg.value;
        found = true;
      }
  return found;
}

Status ApplyPluginArgs(const std::vector<Profile*>& profiles, const std::vector<std::string>& specs) {
  for (const auto& spec : specs) {
    BERTH_ASSIGN_OR_RETURN(PluginArgSpec a, ParsePluginArg(spec));
    bool used = false;
    std::string names;
    for (Profile* p : profiles) {
      used = SetPluginArg(*p, a) || used;
      names += (names.empty() ? "" : ", ") + p->name;
    }
    if (!used)
      return InvalidArgument("plugin argument '" + spec + "': no policy here uses plugin '" + a.plugin +
                             "' (policies: " + names + ")");
  }
  return Status::Ok();
}

Status PolicyRegistry::Register(const std::string& name, Profile profile, std::string description) {
  BERTH_RETURN_IF_ERROR(profile.Validate());
  profile.name = name;
  if (!policies_.emplace(name, PolicyInfo{std::move(profile), std::move(description)}).second)
    return AlreadyExists("policy '" + name + "' is already registered");
  return Status::Ok();
}

StatusOr<Profile> PolicyRegistry::Find(const std::string& name) const {
  if (name.find('+') != std::string::npos) return Compose(name);
  auto it = policies_.find(name);
  if (it == policies_.end()) {
    std::string known;
    for (const auto& [n, p] : policies_) known += (known.empty() ? "" : ", ") + n;
    return NotFound("unknown policy '" + name + "' (known: " + known + ")");
  }
  return it->second.profile;
}

// BASE+EXTRA[+EXTRA...]: BASE's profile, with each EXTRA's score plugins that
// BASE does not have put in front of BASE's, at their weights. So the order,
// admission, planning and preemption stay BASE's and the node choice weighs
// EXTRA's preference first (e.g. fairshare+hetero-speed).
StatusOr<Profile> PolicyRegistry::Compose(const std::string& name) const {
  std::vector<std::string> parts;
  for (size_t start = 0;;) {
    const size_t plus = name.find('+', start);
    parts.push_back(name.substr(start, plus == std::string::npos ? std::string::npos : plus - start));
    if (plus == std::string::npos) break;
    start = plus + 1;
  }
  for (const auto& part : parts)
    if (part.empty()) return InvalidArgument("policy '" + name + "': an empty name around '+'");
  BERTH_ASSIGN_OR_RETURN(Profile base, Find(parts[0]));
  std::vector<PluginRef> added;
  for (size_t i = 1; i < parts.size(); ++i) {
    BERTH_ASSIGN_OR_RETURN(Profile extra, Find(parts[i]));
    size_t before = added.size();
    for (const auto& ref : extra.score) {
      auto has = [&](const std::vector<PluginRef>& v) {
        for (const auto& r : v)
          if (r.name == ref.name) return true;
        return false;
      };
      if (!has(base.score) && !has(added)) added.push_back(ref);
    }
    if (added.size() == before)
      return InvalidArgument("policy '" + name + "': '" + parts[i] + "' adds no placement score to '" + parts[0] +
                             "' (it scores nodes as '" + parts[0] + "' already does)");
  }
  added.insert(added.end(), base.score.begin(), base.score.end());
  base.score = std::move(added);
  base.name = name;
  BERTH_RETURN_IF_ERROR(base.Validate());
  return base;
}

std::vector<std::string> PolicyRegistry::Names() const {
  std::vector<std::string> out;
  for (const auto& [n, p] : policies_) out.push_back(n);
  return out;
}

Plugin* Framework::Find(std::string_view name) const {
  for (const auto& p : owned_)
    if (p->Name() == name) return p.get();
  return nullptr;
}

namespace {
template <typename T>
StatusOr<T*> As(Plugin* p, const char* point) {
  T* t = dynamic_cast<T*>(p);
  if (!t) return InvalidArgument("plugin '" + std::string(p->Name()) + "' cannot be used as a " + point + " plugin");
  return t;
}
}  // namespace

StatusOr<std::unique_ptr<Framework>> Framework::Create(const Profile& profile, const PluginRegistry& registry,
                                                      const PluginContext& context) {
  BERTH_RETURN_IF_ERROR(profile.Validate());
  std::unique_ptr<Framework> fw(new Framework());
  fw->profile_ = profile;
  std::map<std::string, Plugin*> by_name;
  auto get = [&](const PluginRef& ref) -> StatusOr<Plugin*> {
    auto it = by_name.find(ref.name);
    if (it != by_name.end()) return it->second;
    BERTH_ASSIGN_OR_RETURN(std::unique_ptr<Plugin> p, registry.Create(ref.name, ref.args, context));
    Plugin* raw = p.get();
    fw->owned_.push_back(std::move(p));
    by_name[ref.name] = raw;
    return raw;
  };
  {
    BERTH_ASSIGN_OR_RETURN(Plugin* p, get(PluginRef{profile.queue_sort, profile.queue_sort_args, 1}));
    BERTH_ASSIGN_OR_RETURN(fw->queue_sort_, As<QueueSortPlugin>(p, "queue-sort"));
  }
  auto fill = [&](const std::vector<PluginRef>& refs, auto& out, const char* point) -> Status {
    using T = std::remove_pointer_t<typename std::decay_t<decltype(out)>::value_type>;
    for (const auto& ref : refs) {
      BERTH_ASSIGN_OR_RETURN(Plugin* p, get(ref));
      BERTH_ASSIGN_OR_RETURN(T* t, As<T>(p, point));
      out.push_back(t);
    }
    return Status::Ok();
  };
  BERTH_RETURN_IF_ERROR(fill(profile.admit, fw->admit_, "admit"));
  BERTH_RETURN_IF_ERROR(fill(profile.plan, fw->plan_, "plan"));
  BERTH_RETURN_IF_ERROR(fill(profile.filter, fw->filter_, "filter"));
  BERTH_RETURN_IF_ERROR(fill(profile.candidates, fw->candidates_, "candidates"));
  BERTH_RETURN_IF_ERROR(fill(profile.reserve, fw->reserve_, "reserve"));
  BERTH_RETURN_IF_ERROR(fill(profile.permit, fw->permit_, "permit"));
  BERTH_RETURN_IF_ERROR(fill(profile.post_filter, fw->post_filter_, "post-filter"));
  BERTH_RETURN_IF_ERROR(fill(profile.bind, fw->bind_, "bind"));
  BERTH_RETURN_IF_ERROR(fill(profile.resize, fw->resize_, "resize"));
  for (const auto& ref : profile.score) {
    BERTH_ASSIGN_OR_RETURN(Plugin* p, get(ref));
    BERTH_ASSIGN_OR_RETURN(ScorePlugin* s, As<ScorePlugin>(p, "score"));
    fw->score_.emplace_back(s, ref.weight);
  }
  return fw;
}

}  // namespace berth::framework

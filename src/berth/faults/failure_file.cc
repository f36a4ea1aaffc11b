// The failure-file parser and `--failures` resolution (see failure_file.h).
#include "berth/faults/failure_file.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "berth/common/csv.h"
#include "berth/tenancy/queue_yaml.h"

namespace berth::faults {
namespace {

std::vector<std::string> Words(std::string_view line) {
  std::vector<std::string> out;
  std::istringstream in{std::string(line)};
  std::string w;
  while (in >> w) out.push_back(w);
  return out;
}

StatusOr<DurationDist> ParseDist(const std::string& text) {
  DurationDist d;
  std::string_view v = text;
  if (v.starts_with("exp:")) {
    d.kind = DurationDist::Kind::kExponential;
    v.remove_prefix(4);
  } else if (v.starts_with("fixed:")) {
    v.remove_prefix(6);
  }
  StatusOr<TimeUs> t = tenancy::ParseQueueDuration(v);
  if (!t.ok()) return InvalidArgument("'" + text + "': " + t.status().message());
  if (*t < 0) return InvalidArgument("'" + text + "': must not be negative");
  d.value = *t;
  return d;
}

StatusOr<TimeUs> ParseTime(const std::string& text) {
  StatusOr<TimeUs> t = tenancy::ParseQueueDuration(text);
  if (!t.ok()) return InvalidArgument("'" + text + "': " + t.status().message());
  if (*t < 0) return InvalidArgument("'" + text + "': must not be negative");
  return *t;
}

// The one domain of `level` named `name`; errors when none or several.
StatusOr<DomainId> FindDomain(const cluster::Cluster& c, cluster::Level level, const std::string& name) {
  DomainId found;
  for (DomainId d : c.domains_at(level)) {
    if (c.domain(d).name != name) continue;
    if (found.valid())
      return InvalidArgument(std::string("two ") + cluster::LevelName(level) + " domains are named '" + name + "'");
    found = d;
  }
  if (!found.valid()) return NotFound(std::string("no ") + cluster::LevelName(level) + " domain '" + name + "'");
  return found;
}

Status ResolveTarget(const cluster::Cluster& c, const std::string& target, Fault& f) {
  switch (f.kind) {
    case FaultKind::kGpu:
    case FaultKind::kTask: {
      const size_t slash = target.rfind('/');
      if (slash == std::string::npos) return InvalidArgument("target '" + target + "': expected NODE/GPU");
      auto n = c.FindNode(target.substr(0, slash));
      if (!n) return NotFound("no node '" + target.substr(0, slash) + "'");
      int64_t g = -1;
      if (!ParseInt64(target.substr(slash + 1), g).ok() || g < 0 || g >= c.node(*n).gpu_count)
        return InvalidArgument("node " + c.node(*n).name + " has no GPU '" + target.substr(slash + 1) + "'");
      f.node = *n;
      f.gpu = static_cast<int32_t>(g);
      return Status::Ok();
    }
    case FaultKind::kNode:
    case FaultKind::kLink: {
      auto n = c.FindNode(target);
      if (!n) return NotFound("no node '" + target + "'");
      f.node = *n;
      return Status::Ok();
    }
    case FaultKind::kLeaf:
    case FaultKind::kSpine:
    case FaultKind::kCluster: {
      const cluster::Level level = f.kind == FaultKind::kLeaf    ? cluster::Level::kLeaf
                                   : f.kind == FaultKind::kSpine ? cluster::Level::kSpine
                                                                 : cluster::Level::kCluster;
      BERTH_ASSIGN_OR_RETURN(f.domain, FindDomain(c, level, target));
      return Status::Ok();
    }
    case FaultKind::kMaintenance: {
      if (auto n = c.FindNode(target)) {
        f.node = *n;
        return Status::Ok();
      }
      for (int l = cluster::kNumLevels - 1; l >= 0; --l) {
        StatusOr<DomainId> d = FindDomain(c, static_cast<cluster::Level>(l), target);
        if (d.ok()) {
          f.domain = *d;
          return Status::Ok();
        }
        if (d.status().code() != StatusCode::kNotFound) return d.status();
      }
      return NotFound("no node or domain '" + target + "'");
    }
  }
  return Internal("bad fault kind");
}

// Options after the fixed words: for D, cause C, deadline D, scale X.
struct Options {
  std::string for_text, cause, deadline_text, scale_text;
};

StatusOr<Options> ParseOptions(const std::vector<std::string>& w, size_t from) {
  Options o;
  for (size_t i = from; i < w.size(); i += 2) {
    if (i + 1 >= w.size()) return InvalidArgument("'" + w[i] + "' needs a value");
    const std::string& k = w[i];
    std::string* slot = k == "for" ? &o.for_text : k == "cause" ? &o.cause : k == "deadline" ? &o.deadline_text
                                                 : k == "scale" ? &o.scale_text : nullptr;
    if (slot == nullptr) return InvalidArgument("unknown word '" + k + "' (expected for, cause, deadline or scale)");
    if (!slot->empty()) return InvalidArgument("'" + k + "' given twice");
    *slot = w[i + 1];
  }
  return o;
}

Status ParseLine(const std::vector<std::string>& w, const cluster::Cluster& c, FailureSpec& out) {
  const std::string& verb = w[0];
  if (verb == "at") {
    if (w.size() < 4) return InvalidArgument("usage: at TIME KIND TARGET [for D] [cause C] [deadline D]");
    Fault f;
    BERTH_ASSIGN_OR_RETURN(f.at, ParseTime(w[1]));
    auto kind = ParseFaultKind(w[2]);
    if (!kind) return InvalidArgument("unknown kind '" + w[2] + "'");
    f.kind = *kind;
    BERTH_RETURN_IF_ERROR(ResolveTarget(c, w[3], f));
    BERTH_ASSIGN_OR_RETURN(Options o, ParseOptions(w, 4));
    if (!o.scale_text.empty()) return InvalidArgument("'scale' belongs to profile lines");
    if (!o.for_text.empty()) {
      BERTH_ASSIGN_OR_RETURN(f.duration, ParseTime(o.for_text));
    }
    if (!o.deadline_text.empty()) {
      if (f.kind != FaultKind::kMaintenance) return InvalidArgument("'deadline' is for maintenance only");
      BERTH_ASSIGN_OR_RETURN(f.deadline, ParseTime(o.deadline_text));
    }
    if (f.kind == FaultKind::kTask && f.duration != 0) return InvalidArgument("a task fault takes nothing down: no 'for'");
    if (f.kind != FaultKind::kTask && f.duration <= 0)
      return InvalidArgument("'for DURATION' is required (how long it is down)");
    f.cause = o.cause.empty() ? (f.planned() ? "planned" : FaultKindName(f.kind)) : o.cause;
    out.events.push_back(std::move(f));
    return Status::Ok();
  }
  if (verb == "rate") {
    if (w.size() < 3) return InvalidArgument("usage: rate KIND PER_COMPONENT_HOUR [cause C] [for DIST] [deadline D]");
    FailureRate r;
    auto kind = ParseFaultKind(w[1]);
    if (!kind) return InvalidArgument("unknown kind '" + w[1] + "'");
    r.kind = *kind;
    if (!ParseDouble(w[2], r.per_hour).ok() || !std::isfinite(r.per_hour) || r.per_hour < 0)
      return InvalidArgument("rate '" + w[2] + "': expected a number >= 0 of faults per component-hour");
    BERTH_ASSIGN_OR_RETURN(Options o, ParseOptions(w, 3));
    if (!o.scale_text.empty()) return InvalidArgument("'scale' belongs to profile lines");
    if (!o.for_text.empty()) {
      BERTH_ASSIGN_OR_RETURN(r.recovery, ParseDist(o.for_text));
    }
    if (!o.deadline_text.empty()) {
      BERTH_ASSIGN_OR_RETURN(r.deadline, ParseTime(o.deadline_text));
    }
    if (r.kind != FaultKind::kTask && r.recovery.value <= 0) return InvalidArgument("'for DIST' is required");
    r.cause = o.cause.empty() ? (r.kind == FaultKind::kMaintenance ? "planned" : FaultKindName(r.kind)) : o.cause;
    out.rates.push_back(std::move(r));
    return Status::Ok();
  }
  if (verb == "profile") {
    if (w.size() < 2) return InvalidArgument("usage: profile NAME [scale X]");
    BERTH_ASSIGN_OR_RETURN(Options o, ParseOptions(w, 2));
    double scale = 1;
    if (!o.scale_text.empty() && (!ParseDouble(o.scale_text, scale).ok() || !(scale >= 0) || !std::isfinite(scale)))
      return InvalidArgument("scale '" + o.scale_text + "': expected a number >= 0");
    BERTH_ASSIGN_OR_RETURN(std::vector<FailureRate> rates, BuiltinProfile(w[1]));
    for (FailureRate& r : rates) {
      r.per_hour *= scale;
      out.rates.push_back(std::move(r));
    }
    return Status::Ok();
  }
  return InvalidArgument("unknown entry '" + verb + "' (expected at, rate or profile)");
}

}  // namespace

const char* FaultKindName(FaultKind kind) {
  switch (kind) {
    case FaultKind::kGpu: return "gpu";
    case FaultKind::kTask: return "task";
    case FaultKind::kNode: return "node";
    case FaultKind::kLink: return "link";
    case FaultKind::kLeaf: return "leaf";
    case FaultKind::kSpine: return "spine";
    case FaultKind::kCluster: return "cluster";
    case FaultKind::kMaintenance: return "maintenance";
  }
  return "?";
}

std::optional<FaultKind> ParseFaultKind(std::string_view name) {
  for (FaultKind k : {FaultKind::kGpu, FaultKind::kTask, FaultKind::kNode, FaultKind::kLink, FaultKind::kLeaf,
                      FaultKind::kSpine, FaultKind::kCluster, FaultKind::kMaintenance})
    if (name == FaultKindName(k)) return k;
  if (name == "rail") return FaultKind::kLeaf;
  return std::nullopt;
}

StatusOr<FailureSpec> ParseFailureSpec(std::string_view text, const std::string& source,
                                       const cluster::Cluster& cluster) {
  FailureSpec spec;
  std::istringstream in{std::string(text)};
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (const size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    const std::vector<std::string> w = Words(line);
    if (w.empty()) continue;
    if (Status s = ParseLine(w, cluster, spec); !s.ok())
      return InvalidArgument(source + ":" + std::to_string(line_no) + ": " + s.message());
  }
  std::stable_sort(spec.events.begin(), spec.events.end(), [](const Fault& a, const Fault& b) { return a.at < b.at; });
  return spec;
}

StatusOr<FailureSpec> LoadFailures(const std::string& what, const cluster::Cluster& cluster, const std::string& flag) {
  const size_t star = what.find('*');
  const std::string name = what.substr(0, star);
  StatusOr<std::vector<FailureRate>> builtin = BuiltinProfile(name);
  if (builtin.ok()) {
    const std::string line = "profile " + name + (star == std::string::npos ? "" : " scale " + what.substr(star + 1));
    return ParseFailureSpec(line, flag + " " + what, cluster);
  }
  std::ifstream f(what);
  if (!f) {
    std::string names;
    for (const auto& n : BuiltinProfileNames()) names += (names.empty() ? "" : ", ") + n;
    return NotFound(flag + ": '" + what + "' is neither a failure file nor a profile (" + names + ")");
  }
  std::stringstream buf;
  buf << f.rdbuf();
  return ParseFailureSpec(buf.str(), what, cluster);
}

}  // namespace berth::faults

// The services simulation file (YAML): services with their load and serving
// model, and the autoscaler's options. Format: docs/services.md.
#include <yaml-cpp/yaml.h>

#include <filesystem>

#include "berth/sim/service_sim.h"

namespace berth::sim {
namespace {

struct Ctx {
  const std::string& path;
  Status Error(const std::string& where, const std::string& m) const {
    return InvalidArgument(path + ": " + where + ": " + m);
  }
};

template <typename T>
Status Get(const Ctx& c, const std::string& where, const YAML::Node& n, T& out) {
  try {
    out = n.as<T>();
  } catch (const YAML::Exception&) {
    return c.Error(where, "expected a " + std::string(std::is_same_v<T, std::string> ? "string" : "number"));
  }
  return Status::Ok();
}

Status Seconds(const Ctx& c, const std::string& where, const YAML::Node& n, TimeUs& out, bool allow_never = false) {
  double s = 0;
  BERTH_RETURN_IF_ERROR(Get(c, where, n, s));
  if (allow_never && s == -1) {
    out = -1;
    return Status::Ok();
  }
  if (!(s >= 0) || s > 1e9) return c.Error(where, "seconds must be in 0..1e9" + std::string(allow_never ? " (or -1)" : ""));
  out = SecondsToUs(s);
  return Status::Ok();
}

Status Int(const Ctx& c, const std::string& where, const YAML::Node& n, int64_t lo, int64_t hi, int32_t& out) {
  int64_t v = 0;
  BERTH_RETURN_IF_ERROR(Get(c, where, n, v));
  if (v < lo || v > hi) return c.Error(where, std::to_string(v) + " is outside " + std::to_string(lo) + ".." + std::to_string(hi));
  out = static_cast<int32_t>(v);
  return Status::Ok();
}

Status Autoscaler(const Ctx& c, const YAML::Node& n, workload::AutoscalerOptions& o) {
  if (!n.IsMap()) return c.Error("autoscaler", "expected a map");
  for (const auto& kv : n) {
    const std::string k = kv.first.as<std::string>();
    const std::string w = "autoscaler." + k;
    const YAML::Node& v = kv.second;
    if (k == "period_s") BERTH_RETURN_IF_ERROR(Seconds(c, w, v, o.period));
    else if (k == "tolerance") BERTH_RETURN_IF_ERROR(Get(c, w, v, o.tolerance));
    else if (k == "up_stabilization_s") BERTH_RETURN_IF_ERROR(Seconds(c, w, v, o.up_stabilization));
    else if (k == "down_stabilization_s") BERTH_RETURN_IF_ERROR(Seconds(c, w, v, o.down_stabilization));
    else if (k == "up_pods") BERTH_RETURN_IF_ERROR(Int(c, w, v, 0, 100000, o.up_pods));
    else if (k == "up_percent") BERTH_RETURN_IF_ERROR(Int(c, w, v, 0, 100000, o.up_percent));
    else if (k == "up_period_s") BERTH_RETURN_IF_ERROR(Seconds(c, w, v, o.up_period));
    else if (k == "down_percent") BERTH_RETURN_IF_ERROR(Int(c, w, v, 0, 100, o.down_percent));
    else if (k == "down_period_s") BERTH_RETURN_IF_ERROR(Seconds(c, w, v, o.down_period));
    else if (k == "idle_to_zero_s") BERTH_RETURN_IF_ERROR(Seconds(c, w, v, o.idle_to_zero, true));
    else if (k == "horizon_s") BERTH_RETURN_IF_ERROR(Seconds(c, w, v, o.horizon));
    else if (k == "alpha") BERTH_RETURN_IF_ERROR(Get(c, w, v, o.forecast_options.alpha));
    else if (k == "beta") BERTH_RETURN_IF_ERROR(Get(c, w, v, o.forecast_options.beta));
    else if (k == "season") BERTH_RETURN_IF_ERROR(Int(c, w, v, 1, 1000000, o.forecast_options.season));
    else if (k == "forecast") {
      std::string f;
      BERTH_RETURN_IF_ERROR(Get(c, w, v, f));
      if (!workload::ParseForecastKind(f, o.forecast) || o.forecast == workload::ForecastKind::kNone)
        return c.Error(w, "'" + f + "' is not holt or seasonal");
    } else {
      return c.Error(w, "unknown key");
    }
  }
  return o.Validate().ok() ? Status::Ok() : c.Error("autoscaler", o.Validate().message());
}

Status Service(const Ctx& c, const std::string& where, const YAML::Node& n, const std::filesystem::path& dir,
               SimService& s) {
  if (!n.IsMap()) return c.Error(where, "expected a map");
  job::JobSpec& j = s.spec;
  j.service = job::ServiceSpec{};
  job::ServiceSpec& sv = *j.service;
  job::TaskGroup g;
  g.name = "replica";
  bool has_min = false, has_max = false, has_replicas = false;
  sv.target_utilization_pct = 70;
  for (const auto& kv : n) {
    const std::string k = kv.first.as<std::string>();
    const std::string w = where + "." + k;
    const YAML::Node& v = kv.second;
    if (k == "name") BERTH_RETURN_IF_ERROR(Get(c, w, v, j.name));
    else if (k == "tenant") BERTH_RETURN_IF_ERROR(Get(c, w, v, j.tenant));
    else if (k == "priority") BERTH_RETURN_IF_ERROR(Int(c, w, v, -1000000, 1000000, j.priority));
    else if (k == "gpus") BERTH_RETURN_IF_ERROR(Int(c, w, v, 0, 64, g.gpus));
    else if (k == "milli_per_gpu") BERTH_RETURN_IF_ERROR(Int(c, w, v, 1, kMilliPerGpu, g.milli_per_gpu));
    else if (k == "cpu_milli") BERTH_RETURN_IF_ERROR(Get(c, w, v, g.cpu_milli));
    else if (k == "memory_mib") BERTH_RETURN_IF_ERROR(Get(c, w, v, g.memory_mib));
    else if (k == "gpu_type") BERTH_RETURN_IF_ERROR(Get(c, w, v, g.gpu_type_spec));
    else if (k == "replicas") { BERTH_RETURN_IF_ERROR(Int(c, w, v, 0, 100000, sv.replicas)); has_replicas = true; }
    else if (k == "min_replicas") { BERTH_RETURN_IF_ERROR(Int(c, w, v, 0, 100000, sv.min_replicas)); has_min = true; }
    else if (k == "max_replicas") { BERTH_RETURN_IF_ERROR(Int(c, w, v, 1, 100000, sv.max_replicas)); has_max = true; }
    else if (k == "latency_class") {
      std::string lc;
      BERTH_RETURN_IF_ERROR(Get(c, w, v, lc));
      if (!job::ParseLatencyClass(lc, sv.latency_class)) return c.Error(w, "expected critical or standard");
    } else if (k == "target") {
      if (!v.IsMap()) return c.Error(w, "expected a map (requests_per_s or utilization)");
      sv.target_utilization_pct = 0;
      for (const auto& t : v) {
        const std::string tk = t.first.as<std::string>();
        double x = 0;
        BERTH_RETURN_IF_ERROR(Get(c, w + "." + tk, t.second, x));
        if (tk == "requests_per_s" && x > 0 && x <= 1e9) sv.target_milli_rps = std::llround(x * 1000);
        else if (tk == "utilization" && x > 0 && x <= 1) sv.target_utilization_pct = static_cast<int32_t>(std::lround(x * 100));
        else return c.Error(w + "." + tk, "requests_per_s (> 0) or utilization (0..1]");
      }
    } else if (k == "spread") {
      if (!v.IsMap()) return c.Error(w, "expected a map (max_per_node, max_per_leaf)");
      for (const auto& t : v) {
        const std::string tk = t.first.as<std::string>();
        if (tk == "max_per_node") BERTH_RETURN_IF_ERROR(Int(c, w + "." + tk, t.second, 0, 100000, sv.max_per_node));
        else if (tk == "max_per_leaf") BERTH_RETURN_IF_ERROR(Int(c, w + "." + tk, t.second, 0, 100000, sv.max_per_leaf));
        else return c.Error(w + "." + tk, "unknown key");
      }
    } else if (k == "load") {
      if (!v.IsMap()) return c.Error(w, "expected a map (trace, peak_rps)");
      for (const auto& t : v) {
        const std::string tk = t.first.as<std::string>();
        if (tk == "trace") {
          BERTH_RETURN_IF_ERROR(Get(c, w + ".trace", t.second, s.load_trace));
          std::filesystem::path p(s.load_trace);
          if (p.is_relative()) s.load_trace = (dir / p).string();
        } else if (tk == "peak_rps") {
          BERTH_RETURN_IF_ERROR(Get(c, w + ".peak_rps", t.second, s.peak_rps));
          if (!(s.peak_rps > 0) || s.peak_rps > 1e9) return c.Error(w + ".peak_rps", "must be in (0, 1e9]");
        } else {
          return c.Error(w + "." + tk, "unknown key");
        }
      }
    } else if (k == "serving") {
      if (!v.IsMap()) return c.Error(w, "expected a map (prefill_ms_per_token, decode_ms_per_token, batch)");
      for (const auto& t : v) {
        const std::string tk = t.first.as<std::string>();
        double x = 0;
        if (tk == "prefill_ms_per_token") {
          BERTH_RETURN_IF_ERROR(Get(c, w + "." + tk, t.second, x));
          s.serving.prefill_us_per_token = x * 1000;
        } else if (tk == "decode_ms_per_token") {
          BERTH_RETURN_IF_ERROR(Get(c, w + "." + tk, t.second, x));
          s.serving.decode_us_per_token = x * 1000;
        } else if (tk == "batch") {
          BERTH_RETURN_IF_ERROR(Int(c, w + "." + tk, t.second, 1, 100000, s.serving.batch));
        } else {
          return c.Error(w + "." + tk, "unknown key");
        }
      }
    } else {
      return c.Error(w, "unknown key");
    }
  }
  if (j.name.empty()) return c.Error(where, "name: missing");
  if (s.load_trace.empty()) return c.Error(where, "load.trace: missing");
  if (!has_min) sv.min_replicas = has_replicas ? sv.replicas : 1;
  if (!has_max) sv.max_replicas = std::max(sv.min_replicas, has_replicas ? sv.replicas : 1);
  if (!has_replicas) sv.replicas = std::max(sv.min_replicas, std::min(1, sv.max_replicas));
  if (sv.target_utilization_pct > 0) sv.capacity_milli_rps = 1;  // set from the serving model when run
  j.groups = {g};
  if (Status v = s.serving.Validate(); !v.ok()) return c.Error(where, v.message());
  if (Status v = job::ValidateJob(j); !v.ok()) return c.Error(where, v.message());
  return Status::Ok();
}

Status Ratio(const Ctx& c, const std::string& where, const YAML::Node& n, double& out) {
  BERTH_RETURN_IF_ERROR(Get(c, where, n, out));
  if (!(out >= 0 && out <= 1)) return c.Error(where, "must be a ratio in 0..1");
  return Status::Ok();
}

Status RatioMap(const Ctx& c, const std::string& where, const YAML::Node& n, std::map<std::string, double>& out) {
  if (!n.IsMap()) return c.Error(where, "expected a map of name: ratio");
  for (const auto& kv : n) {
    const std::string name = kv.first.as<std::string>();
    BERTH_RETURN_IF_ERROR(Ratio(c, where + "." + name, kv.second, out[name]));
  }
  return Status::Ok();
}

Status Colocation(const Ctx& c, const YAML::Node& n, ColocationSettings& o) {
  if (!n.IsMap()) return c.Error("colocation", "expected a map");
  for (const auto& kv : n) {
    const std::string k = kv.first.as<std::string>();
    const std::string w = "colocation." + k;
    const YAML::Node& v = kv.second;
    if (k == "reserved_nodes") BERTH_RETURN_IF_ERROR(Int(c, w, v, 1, 10000000, o.reserved_nodes));
    else if (k == "overcommit") BERTH_RETURN_IF_ERROR(Ratio(c, w, v, o.overcommit));
    else if (k == "node_overcommit") BERTH_RETURN_IF_ERROR(RatioMap(c, w, v, o.node_overcommit));
    else if (k == "queue_overcommit") BERTH_RETURN_IF_ERROR(RatioMap(c, w, v, o.queue_overcommit));
    else if (k == "best_effort_deadline_s") BERTH_RETURN_IF_ERROR(Seconds(c, w, v, o.best_effort_deadline));
    else if (k == "training_grace_s") BERTH_RETURN_IF_ERROR(Seconds(c, w, v, o.training_grace));
    else if (k == "spill") {
      const std::string b = v.IsScalar() ? v.as<std::string>() : "";
      if (b != "true" && b != "false") return c.Error(w, "must be true or false");
      o.spill = b == "true";
    } else return c.Error(w, "unknown key");
  }
  return Status::Ok();
}

}  // namespace

StatusOr<ServiceSimConfig> ReadServiceSimConfig(const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    return NotFound(path + ": cannot open file");
  } catch (const YAML::Exception& e) {
    return InvalidArgument(path + ": not valid YAML: " + e.what());
  }
  const Ctx c{path};
  if (!root.IsMap()) return c.Error("top level", "expected a map with services:");
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  ServiceSimConfig cfg;
  for (const auto& kv : root) {
    const std::string k = kv.first.as<std::string>();
    if (k == "services") {
      if (!kv.second.IsSequence()) return c.Error("services", "expected a list");
      for (size_t i = 0; i < kv.second.size(); ++i) {
        SimService s;
        BERTH_RETURN_IF_ERROR(Service(c, "services[" + std::to_string(i) + "]", kv.second[i], dir, s));
        for (const auto& o : cfg.services)
          if (o.spec.name == s.spec.name) return c.Error("services[" + std::to_string(i) + "]", "name '" + s.spec.name + "' twice");
        cfg.services.push_back(std::move(s));
      }
    } else if (k == "autoscaler") {
      BERTH_RETURN_IF_ERROR(Autoscaler(c, kv.second, cfg.autoscaler));
    } else if (k == "repeat") {
      BERTH_RETURN_IF_ERROR(Int(c, k, kv.second, 1, 1000, cfg.repeat));
    } else if (k == "checkpoint_interval_s") {
      BERTH_RETURN_IF_ERROR(Seconds(c, k, kv.second, cfg.checkpoint_interval, true));
      if (cfg.checkpoint_interval == 0) return c.Error(k, "must be positive (or -1: keep the trace's)");
    } else if (k == "colocation") {
      BERTH_RETURN_IF_ERROR(Colocation(c, kv.second, cfg.colocation));
    } else if (k == "window_s") {
      if (!kv.second.IsSequence() || kv.second.size() != 2) return c.Error(k, "expected [from, to] in trace seconds");
      BERTH_RETURN_IF_ERROR(Seconds(c, "window_s[0]", kv.second[0], cfg.window_from));
      BERTH_RETURN_IF_ERROR(Seconds(c, "window_s[1]", kv.second[1], cfg.window_to));
      if (cfg.window_to <= cfg.window_from) return c.Error(k, "to must be after from");
    } else if (k == "openb_qos") {
      BERTH_RETURN_IF_ERROR(Get(c, k, kv.second, cfg.openb_qos));
    } else {
      return c.Error(k, "unknown key");
    }
  }
  if (cfg.services.empty() && cfg.window_to < 0)
    return c.Error("services", "missing or empty (a file without services needs window_s and a trace with services)");
  return cfg;
}

}  // namespace berth::sim

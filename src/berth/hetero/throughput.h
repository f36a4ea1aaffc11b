// How fast each class of job runs on each accelerator type.
//
// A job class is a declared model name (or class label) and a scale factor
// (GPUs per job). MeasuredTable holds measured training throughput (steps/s
// of the whole job) per (class, type, consolidated), e.g. Gavel's
// simulation_throughputs.json. ThroughputModel answers for every (class,
// type): the measured value where there is one, else an estimate from the
// catalog's specs with a roofline-style mix fitted to the measured data:
//
//   step_time(k, t) = exp(a_k) * [ f_k * F_p / F_t + (1 - f_k) * B_p / B_t ] / eta_t
//
// F = peak TFLOP/s at the class's precision, B = memory bandwidth, p = the
// pivot type (the measured type with the highest compute peak), f_k in
// [0, 1] = the share of the class's step time that scales with compute, a_k
// = the class's scale, eta_t = a per-type efficiency (achieved / peak,
// relative to the pivot; 1 for types never measured). f, a and eta are
// fitted by alternating least squares on log throughput.
//
//   StatusOr<MeasuredTable> m = LoadGavelThroughputs(path, catalog);
//   StatusOr<ThroughputModel> model = ThroughputModel::Fit(catalog, *m, {});
//   double h100_vs_v100 = model->Relative({"ResNet-50 (batch size 64)", 1}, "H100", "V100");
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "berth/common/status.h"
#include "berth/hetero/catalog.h"

namespace berth::hetero {

struct JobClass {
  std::string model;   // "ResNet-50 (batch size 64)", or any class label
  int32_t scale = 1;   // GPUs per job
  auto operator<=>(const JobClass&) const = default;
  std::string ToString() const { return model + " x" + std::to_string(scale); }
};

// Measured steps/s per (class, type, consolidated). Types are catalog
// canonical names. A value of 0 means "measured: cannot run" (out of memory).
class MeasuredTable {
 public:
  void Set(const JobClass& c, const std::string& type, bool consolidated, double steps_per_s);
  std::optional<double> Get(const JobClass& c, std::string_view type, bool consolidated) const;
  // Every class, sorted; every type that has at least one value, sorted.
  std::vector<JobClass> Classes() const;
  std::vector<std::string> Types() const;
  size_t size() const { return values_.size(); }

 private:
  struct Key {
    JobClass c;
    std::string type;
    bool consolidated;
    auto operator<=>(const Key&) const = default;
  };
  std::map<Key, double> values_;
};

// Reads Gavel's throughput JSON (worker type -> "('<model>', <scale>)" ->
// "null" -> steps/s; "<type>_unconsolidated" for spread jobs). Worker type
// names are looked up in the catalog ("v100" -> V100-16).
StatusOr<MeasuredTable> LoadGavelThroughputs(const std::string& path, const Catalog& catalog);

struct FitOptions {
  Precision precision = Precision::kFp32;  // Gavel's models train in FP32
  int iterations = 40;
  int grid = 200;  // f is searched on {0, 1/grid, ..., 1}
};

// Where an answer came from.
enum class Source { kMeasured, kFitted, kSpecsOnly, kUnknown };
const char* SourceName(Source s);

struct Estimate {
  double steps_per_s = 0;  // 0 with kUnknown, or when measured as "cannot run"
  Source source = Source::kUnknown;
};

class ThroughputModel {
 public:
  static StatusOr<ThroughputModel> Fit(const Catalog& catalog, const MeasuredTable& table, FitOptions options = {});

  // Steps/s of the whole job on `type` (a catalog name or alias).
  // Consolidated: measured, else the fit. Unconsolidated: measured, else the
  // consolidated answer times the class's measured spread penalty (1 if none).
  // A class with no measured point at all gives kUnknown (no absolute rate).
  Estimate Throughput(const JobClass& c, std::string_view type, bool consolidated = true) const;
  // Speed on `type` relative to `ref` (consolidated). Known classes use
  // Throughput(); unknown ones the specs with the median fitted mix. 0 when
  // the class cannot run on `type`; -1 when a type is not in the catalog.
  double Relative(const JobClass& c, std::string_view type, std::string_view ref) const;

  // The fitted parameters (for reports and tests).
  double compute_fraction(const JobClass& c) const;  // median over classes when unknown
  double efficiency(std::string_view type) const;    // 1 when never measured
  const std::string& pivot() const { return pivot_; }
  const Catalog& catalog() const { return catalog_; }
  const MeasuredTable& table() const { return table_; }
  // Root-mean-square error of the fit in log space over the points it used.
  double fit_rmse_log() const { return fit_rmse_log_; }

 private:
  struct ClassFit {
    double log_scale = 0;  // a_k
    double f = 0.5;
    double spread_penalty = 1;  // unconsolidated / consolidated, geometric mean over measured types
  };
  // Model step-time factor D (without a, eta) of mix f on a type.
  double Mix(double f, const AcceleratorSpec& t) const;
  double FittedThroughput(const ClassFit& fit, const AcceleratorSpec& t) const;

  Catalog catalog_;
  MeasuredTable table_;
  FitOptions options_;
  std::string pivot_;
  double pivot_flops_ = 1, pivot_bw_ = 1;
  std::map<JobClass, ClassFit> fits_;
  std::map<std::string, double> eta_;  // canonical type -> efficiency
  double median_f_ = 0.5;
  double fit_rmse_log_ = 0;
};

// Accuracy of the spec-based estimate on measured points held out of the fit.
struct HeldOutReport {
  struct Row {
    JobClass c;
    std::string type;
    double measured = 0;
    double predicted = 0;
    double abs_pct_error() const;
  };
  std::string mode;  // "leave-one-pair-out" or "leave-one-type-out"
  std::vector<Row> rows;
  double mean_abs_pct_error = 0;
  double median_abs_pct_error = 0;
  double p90_abs_pct_error = 0;
  double within_25pct = 0;  // share of rows with error <= 25%
  std::map<std::string, double> mean_abs_pct_error_by_type;
};

// leave-one-pair-out: each measured consolidated (class, type) is removed in
// turn, the model refitted, and the point predicted (the type's efficiency is
// still learned from other classes). leave-one-type-out: every point of one
// type is removed (so the type is known only by its specs, as H100 is for
// these classes) and predicted from the other types.
StatusOr<HeldOutReport> EvaluateHeldOut(const Catalog& catalog, const MeasuredTable& table, bool leave_type_out,
                                        FitOptions options = {});

}  // namespace berth::hetero

// `berth throughput-fit`: the spec-based throughput estimate, fitted to a
// measured table (Gavel's), with its error on held-out measured points and
// the estimates for every catalog type relative to a reference.
#include <cstdio>
#include <iostream>
#include <memory>

#include "berth/hetero/catalog.h"
#include "berth/hetero/throughput.h"
#include "commands.h"
#include "install_paths.h"

namespace berth::apps {
namespace {

struct FitFlags {
  std::string catalog = "data/accelerators.yaml";
  std::string throughputs = "../shared/data/gavel/simulation_throughputs.json";
  std::string reference = "H100";
  bool rows = false;
};

void Print(const hetero::HeldOutReport& r, bool rows) {
  std::printf("%s: %zu measured points predicted without themselves\n", r.mode.c_str(), r.rows.size());
  std::printf("  abs. error: mean %.1f%%, median %.1f%%, p90 %.1f%%, within 25%%: %.0f%% of points\n",
              r.mean_abs_pct_error, r.median_abs_pct_error, r.p90_abs_pct_error, 100 * r.within_25pct);
  for (const auto& [t, e] : r.mean_abs_pct_error_by_type) std::printf("  %-8s mean abs. error %.1f%%\n", t.c_str(), e);
  if (rows)
    for (const auto& row : r.rows)
      std::printf("    %-40s %-8s measured %9.3f predicted %9.3f (%5.1f%%)\n", row.c.ToString().c_str(),
                  row.type.c_str(), row.measured, row.predicted, row.abs_pct_error());
}

int RunFit(const FitFlags& f) {
  auto cat = hetero::LoadCatalog(f.catalog);
  if (!cat.ok()) return std::cerr << "berth throughput-fit: " << cat.status().message() << "\n", 1;
  auto table = hetero::LoadGavelThroughputs(f.throughputs, *cat);
  if (!table.ok()) return std::cerr << "berth throughput-fit: " << table.status().message() << "\n", 1;
  auto model = hetero::ThroughputModel::Fit(*cat, *table);
  if (!model.ok()) return std::cerr << "berth throughput-fit: " << model.status().message() << "\n", 1;
  if (!cat->Find(f.reference)) return std::cerr << "berth throughput-fit: unknown reference " << f.reference << "\n", 1;
  std::printf("fit: %zu classes, pivot %s, rmse(log) %.3f on the points used; median compute share %.2f\n",
              table->Classes().size(), model->pivot().c_str(), model->fit_rmse_log(),
              model->compute_fraction({"(unknown class)", 1}));
  for (const auto& t : table->Types()) std::printf("  efficiency %-8s %.3f\n", t.c_str(), model->efficiency(t));
  for (bool type_out : {false, true}) {
    auto r = hetero::EvaluateHeldOut(*cat, *table, type_out);
    if (!r.ok()) return std::cerr << "berth throughput-fit: " << r.status().message() << "\n", 1;
    Print(*r, f.rows);
  }
  // Reference-equivalents per GPU of each catalog type, for three example classes.
  const hetero::JobClass examples[] = {{"ResNet-50 (batch size 64)", 1}, {"Transformer (batch size 128)", 1},
                                       {"Recommendation (batch size 2048)", 1}};
  std::printf("\nreference-equivalents per GPU (%s = 1):\n%-12s", f.reference.c_str(), "type");
  for (const auto& c : examples) std::printf(" %34s", c.model.c_str());
  std::printf("\n");
  for (const auto& t : cat->types()) {
    std::printf("%-12s", t.name.c_str());
    for (const auto& c : examples) {
      auto e = model->Throughput(c, t.name);
      std::printf(" %25.3f (%-8s)", model->Relative(c, t.name, f.reference), hetero::SourceName(e.source));
    }
    std::printf("\n");
  }
  return 0;
}

}  // namespace

void AddThroughputFitCommand(CLI::App& app, std::function<int()>& run) {
  auto flags = std::make_shared<FitFlags>();
  CLI::App* cmd = app.add_subcommand("throughput-fit", "Fit the spec-based throughput model; report held-out error");
  cmd->add_option("--catalog", flags->catalog, "Accelerator catalog YAML")->default_val(ShippedFile("data/accelerators.yaml"));
  cmd->add_option("--throughputs", flags->throughputs, "Measured throughputs (Gavel JSON)")
      ->default_val(SharedDataFile("gavel/simulation_throughputs.json"));
  cmd->add_option("--reference-type", flags->reference, "Reference type of normalized units")->default_val("H100");
  cmd->add_flag("--rows", flags->rows, "Print every held-out point");
  cmd->callback([flags, &run] { run = [flags] { return RunFit(*flags); }; });
}

}  // namespace berth::apps

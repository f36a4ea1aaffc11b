// `berth convert`: read any trace Berth can read and write it in the native
// JSON-lines format (docs/trace-formats.md), e.g. to inspect or hand-edit it.
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>

#include "berth/sim/readers/native_writer.h"
#include "berth/sim/readers/readers.h"
#include "commands.h"

namespace berth::apps {
namespace {

struct Flags {
  std::string trace;
  std::string format;
  std::string out;
  std::string tenants;
  sim::ReadOptions read;
};

int Run(Flags& f) {
  std::stringstream ss(f.tenants);
  for (std::string t; std::getline(ss, t, ',');)
    if (!t.empty()) f.read.tenants.push_back(t);
  auto trace = sim::ReadTrace(f.trace, f.format, f.read);
  if (!trace.ok()) {
    std::cerr << "berth convert: " << trace.status().message() << "\n";
    return 1;
  }
  std::printf("%s: %s\n", trace->format.c_str(), trace->report.Summary().c_str());
  if (!trace->time_origin.empty()) std::printf("submit time 0 = %s\n", trace->time_origin.c_str());
  std::fputs(trace->report.SkipDetails().c_str(), stderr);
  Status s = sim::WriteNativeTrace(trace->jobs, f.out);
  if (!s.ok()) {
    std::cerr << "berth convert: " << s.message() << "\n";
    return 1;
  }
  std::printf("wrote %s (%zu jobs)\n", f.out.c_str(), trace->jobs.size());
  return 0;
}

}  // namespace

void AddConvertCommand(CLI::App& app, std::function<int()>& run) {
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand("convert", "Write a trace in Berth's native JSON-lines format");
  cmd->add_option("--trace", flags->trace, "Trace file")->required();
  cmd->add_option("--trace-format", flags->format, "openb|philly|gavel|tiresias|pollux|native (default: guess)");
  cmd->add_option("--out", flags->out, "Output file (.jsonl)")->required();
  cmd->add_flag("--skip-bad-lines", flags->read.skip_bad_lines, "Skip malformed trace lines (counted) instead of stopping");
  cmd->add_option("--max-jobs", flags->read.max_jobs, "Read at most this many jobs");
  cmd->add_option("--from", flags->read.window_from, "philly: keep jobs submitted at or after YYYY-MM-DD[ HH:MM:SS]");
  cmd->add_option("--to", flags->read.window_to, "philly: keep jobs submitted at or before YYYY-MM-DD[ HH:MM:SS]");
  cmd->add_option("--tenants", flags->tenants, "philly: keep only these VCs (comma-separated)");
  cmd->callback([flags, &run] { run = [flags] { return Run(*flags); }; });
}

}  // namespace berth::apps

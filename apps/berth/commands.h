// Subcommands of the berth CLI. Each parses its flags into an options struct
// and calls the library; nothing below apps/ reads flags.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

namespace berth::apps {

// Exit status of a usage error (unknown command, bad or missing flag), as
// getopt-style tools use; a failed operation exits 1.
inline constexpr int kExitUsage = 2;

// "berth 0.1.0 (commit 1a2b3c4d5e6f, Release build)".
std::string VersionLine();

// Adds `simulate` to the app; `run` is set to the action to perform when the
// subcommand is chosen. `argv` (the whole command line) is recorded in the
// reports.
void AddSimulateCommand(CLI::App& app, std::function<int()>& run, std::vector<std::string> argv = {});
// Adds `throughput-fit`: fits the spec-based throughput model to a measured
// table and reports its error on held-out measured points.
void AddThroughputFitCommand(CLI::App& app, std::function<int()>& run);
// Adds `convert` (any trace -> native JSON lines).
void AddConvertCommand(CLI::App& app, std::function<int()>& run);
// Adds `serve` (the daemon).
void AddServeCommand(CLI::App& app, std::function<int()>& run);
// Adds the HTTP clients of `serve`: `submit`, `status`, `cancel`, `launch`, `logs`, `queues`, `nodes`.
void AddClientCommands(CLI::App& app, std::function<int()>& run);
// Adds `agent` (the node agent) and the hidden `agent-supervise`.
void AddAgentCommands(CLI::App& app, std::function<int()>& run);
// `berth queues import` under the queues command (queue_import_cmd.cc).
void AddQueueImportCommand(CLI::App& queues, std::function<int()>& run);
// Adds `version`, `--version`, `help [COMMAND]` and `policies`.
void AddInfoCommands(CLI::App& app, std::function<int()>& run);

}  // namespace berth::apps

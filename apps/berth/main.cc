// berth: the command-line entry point (simulate, convert, serve, submit,
// status, cancel, queues, nodes, version, help, ...). Usage errors (an
// unknown command, a bad or missing flag) exit 2 with the message and a hint;
// a failed operation exits 1.
#include <iostream>

#include "commands.h"

namespace {

// The deepest subcommand that the parse reached ("" for the top level).
std::string CommandPath(const CLI::App& app) {
  std::string path;
  const CLI::App* at = &app;
  for (;;) {
    auto subs = at->get_subcommands();
    if (subs.empty()) return path;
    at = subs.front();
    path += (path.empty() ? "" : " ") + at->get_name();
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Berth: a scheduler for AI clusters", "berth"};
  app.require_subcommand(1);
  std::function<int()> run;
  berth::apps::AddSimulateCommand(app, run, std::vector<std::string>(argv, argv + argc));
  berth::apps::AddThroughputFitCommand(app, run);
  berth::apps::AddConvertCommand(app, run);
  berth::apps::AddServeCommand(app, run);
  berth::apps::AddClientCommands(app, run);
  berth::apps::AddAgentCommands(app, run);
  berth::apps::AddInfoCommands(app, run);
  if (argc < 2) {
    std::cerr << app.help() << "\nberth: a command is required\n";
    return berth::apps::kExitUsage;
  }
  const std::string first = argv[1];
  if (!first.empty() && first[0] != '-' &&
      app.get_subcommands([&first](const CLI::App* sub) { return sub->get_name() == first; }).empty()) {
    std::cerr << "berth: unknown command '" << first << "'; run 'berth help' for the list\n";
    return berth::apps::kExitUsage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    const std::string cmd = CommandPath(app);
    std::cerr << "berth" << (cmd.empty() ? "" : " " + cmd) << ": " << e.what() << "\nrun 'berth help"
              << (cmd.empty() ? "" : " " + cmd) << "' for usage\n";
    return berth::apps::kExitUsage;
  }
  return run ? run() : berth::apps::kExitUsage;
}

// berth: the command-line entry point (simulate, convert, serve, submit, status, queues, nodes, ...).
#include <iostream>

#include "commands.h"

int main(int argc, char** argv) {
  CLI::App app{"Berth: a scheduler for AI clusters"};
  app.require_subcommand(1);
  std::function<int()> run;
  berth::apps::AddSimulateCommand(app, run);
  berth::apps::AddThroughputFitCommand(app, run);
  berth::apps::AddConvertCommand(app, run);
  berth::apps::AddServeCommand(app, run);
  berth::apps::AddClientCommands(app, run);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return run ? run() : 2;
}

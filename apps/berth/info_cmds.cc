// `berth version` (and `berth --version`), `berth help [COMMAND]` and
// `berth policies`.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "berth/hetero/allocation_policy.h"
#include "berth/hetero/speed_score.h"
#include "berth/plugins/builtin.h"
#include "commands.h"
#include "version_info.h"

namespace berth::apps {

std::string VersionLine() {
  return std::string("berth ") + BERTH_VERSION + " (commit " + BERTH_GIT_COMMIT + ", " + BERTH_BUILD_TYPE + " build)";
}

namespace {

// Every policy name with its description: those of trace replay, the FGD
// protocol and `berth serve`, then those of `--workload gavel`.
int Policies() {
  framework::PolicyRegistry policies;
  hetero::AllocationPolicyRegistry rounds;
  for (const Status& s : {plugins::RegisterBuiltinPolicies(policies), hetero::RegisterHeteroPolicies(policies),
                          hetero::RegisterAllocationPolicies(rounds)})
    if (!s.ok()) {
      std::cerr << "berth policies: " << s.message() << "\n";
      return 1;
    }
  std::printf("berth simulate (trace replay, FGD protocol) and berth serve, --policy NAME[,NAME...]:\n");
  for (const auto& [name, info] : policies.all()) std::printf("  %-22s %s\n", name.c_str(), info.description.c_str());
  std::printf("  %-22s %s\n", "BASE+EXTRA",
              "BASE's order, admission, planning and preemption with EXTRA's node scores weighed first "
              "(e.g. fairshare+hetero-speed)");
  std::printf("\nberth simulate --workload gavel (or --workload gavel --trace FILE), --policy NAME[,NAME...]:\n");
  for (const auto& name : rounds.Names())
    std::printf("  %-22s %s\n", name.c_str(), rounds.Description(name).c_str());
  return 0;
}

}  // namespace

void AddInfoCommands(CLI::App& app, std::function<int()>& run) {
  app.add_subcommand("policies", "List the scheduling policies and what each does")->callback([&run] {
    run = [] { return Policies(); };
  });
  app.set_version_flag("--version", VersionLine(), "Print the version, git commit and build type, and exit");
  {
    auto json_out = std::make_shared<bool>(false);
    CLI::App* cmd = app.add_subcommand("version", "Print the version, git commit and build type");
    cmd->add_flag("--json", *json_out, "print {\"version\", \"commit\", \"build_type\"}");
    cmd->callback([json_out, &run] {
      run = [json_out] {
        if (*json_out) {
          std::cout << nlohmann::json({{"version", BERTH_VERSION},
                                       {"commit", BERTH_GIT_COMMIT},
                                       {"build_type", BERTH_BUILD_TYPE}})
                           .dump()
                    << "\n";
        } else {
          std::cout << VersionLine() << "\n";
        }
        return 0;
      };
    });
  }
  {
    auto topic = std::make_shared<std::string>();
    CLI::App* cmd = app.add_subcommand("help", "Show the commands, or the flags of one command");
    cmd->add_option("COMMAND", *topic, "a command, e.g. status");
    cmd->callback([topic, &app, &run] {
      run = [topic, &app] {
        if (topic->empty()) {
          std::cout << app.get_formatter()->make_help(&app, app.get_name(), CLI::AppFormatMode::Normal);
          return 0;
        }
        for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
          if (sub->get_name() == *topic) {
            std::cout << sub->help(app.get_name());
            return 0;
          }
        std::cerr << "berth help: unknown command '" << *topic << "'; run 'berth help' for the list\n";
        return kExitUsage;
      };
    });
  }
}

}  // namespace berth::apps

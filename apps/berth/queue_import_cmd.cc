// `berth queues import kueue|volcano|kai FILE`: another scheduler's queue
// objects as a Berth queue file (src/berth/tenancy/import/queue_import.h),
// printed or written with -o, what was not mapped listed on stderr; with
// --cluster the tree is also built against that cluster (GPU types checked).
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "berth/tenancy/import/queue_import.h"
#include "berth/tenancy/queue_yaml.h"
#include "cluster_flags.h"
#include "commands.h"
#include "install_paths.h"

namespace berth::apps {

void AddQueueImportCommand(CLI::App& queues, std::function<int()>& run) {
  struct Flags {
    std::string dialect, file, out, cluster;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* cmd = queues.add_subcommand(
      "import", "Convert Kueue (ClusterQueue, Cohort, LocalQueue, ResourceFlavor), Volcano or KAI Queue objects into "
                "a Berth queue file (docs/queues.md)");
  cmd->add_option("FORMAT", f->dialect, "kueue, volcano or kai")->required()->check(CLI::IsMember({"kueue", "volcano", "kai"}));
  cmd->add_option("FILE", f->file, "YAML with the objects (several documents or a List; - for stdin)")->required();
  cmd->add_option("-o,--output", f->out, "write the queue file here (default: standard output)");
  cmd->add_option("--cluster", f->cluster, "also build the tree against this cluster (file or compact spec): GPU types and guarantees checked");
  cmd->callback([f, &run] {
    run = [f]() -> int {
      std::string text;
      if (f->file == "-") {
        std::ostringstream s;
        s << std::cin.rdbuf();
        text = s.str();
      } else {
        std::ifstream in(f->file, std::ios::binary);
        if (!in) {
          std::cerr << "berth queues import: " << f->file << ": cannot open\n";
          return 1;
        }
        std::ostringstream s;
        s << in.rdbuf();
        text = s.str();
      }
      const std::string source = f->file == "-" ? "stdin" : f->file;
      auto imported = tenancy::ImportQueues(text, source, tenancy::ParseQueueDialect(f->dialect));
      if (!imported.ok()) {
        std::cerr << "berth queues import: " << imported.status().message() << "\n";
        return 1;
      }
      for (const std::string& n : imported->notes) std::cerr << "note: " << n << "\n";
      const std::string yaml = "# Imported from " + source + " (" + f->dialect + ") by berth queues import.\n" +
                               tenancy::QueueFileToYaml(imported->file);
      if (!f->cluster.empty()) {
        auto loader = MakeClusterLoader(f->cluster, {}, ShippedFile("data/accelerators.yaml"), false);
        if (!loader.ok()) {
          std::cerr << "berth queues import: " << loader.status().message() << "\n";
          return 1;
        }
        auto cluster = (*loader)(f->cluster);
        if (!cluster.ok()) {
          std::cerr << "berth queues import: " << cluster.status().message() << "\n";
          return 1;
        }
        auto tree = tenancy::BuildQueueTree(imported->file, source, *cluster);
        if (!tree.ok()) {
          std::cerr << "berth queues import: " << tree.status().message() << "\n";
          return 1;
        }
      }
      if (f->out.empty()) {
        std::cout << yaml;
      } else {
        std::ofstream out(f->out);
        if (!(out << yaml)) {
          std::cerr << "berth queues import: " << f->out << ": cannot write\n";
          return 1;
        }
        std::cerr << "wrote " << f->out << " (" << imported->file.queues.size() << " queues)\n";
      }
      return 0;
    };
  });
}

}  // namespace berth::apps

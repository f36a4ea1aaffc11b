// `berth agent`: the node agent (docs/agent.md), and the hidden
// `berth agent-supervise DIR` each of its tasks runs under.
#include <signal.h>

#include <atomic>
#include <cctype>
#include <fstream>
#include <iostream>
#include <thread>

#include "berth/agent/agent.h"
#include "berth/agent/node_config.h"
#include "berth/agent/supervisor.h"
#include "client_util.h"
#include "commands.h"

namespace berth::apps {
namespace {

struct AgentFlags {
  std::string server;
  std::string node_token_file;
  std::string config;
  std::string name;
  std::string work_dir = "./berth-agent";
  std::string nvidia_smi = "nvidia-smi";
  std::string address;
  std::string gpu_health_file;
};

StatusOr<std::string> ReadNodeToken(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound("--node-token-file " + path + ": cannot open");
  std::string token((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) token.pop_back();
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.front()))) token.erase(token.begin());
  if (token.empty()) return InvalidArgument("--node-token-file " + path + ": empty");
  if (token.find_first_of(" \t\r\n") != std::string::npos)
    return InvalidArgument("--node-token-file " + path + ": the token has whitespace inside");
  return token;
}

int RunAgent(const AgentFlags& f) {
  auto server = NormalizeServer(f.server);
  if (!server.ok()) {
    std::cerr << "berth agent: " << server.status().message() << "\n";
    return kExitUsage;
  }
  auto token = ReadNodeToken(f.node_token_file);
  if (!token.ok()) {
    std::cerr << "berth agent: " << token.status().message() << "\n";
    return kExitUsage;
  }
  agent::NodeConfig config;
  if (!f.config.empty()) {
    auto c = agent::LoadNodeConfig(f.config);
    if (!c.ok()) {
      std::cerr << "berth agent: --config " << c.status().message() << "\n";
      return kExitUsage;
    }
    config = std::move(c).value();
  }
  if (!f.name.empty()) config.name = f.name;  // --name wins over the file
  if (!f.address.empty()) config.address = f.address;
  if (Status s = agent::CompleteNodeConfig(config, f.nvidia_smi); !s.ok()) {
    std::cerr << "berth agent: " << s.message() << "\n";
    return 1;
  }
  // SIGTERM / SIGINT stop the agent (its tasks keep running); a thread waits
  // for them so the loop needs no signal handler.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  std::atomic<bool> stop{false};
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    stop = true;
  });
  waiter.detach();
  agent::AgentOptions o;
  o.server = *server;
  o.node_token = *token;
  o.work_dir = f.work_dir;
  o.gpu_health_file = f.gpu_health_file;
  agent::Agent a(o, std::move(config));
  return a.Run(stop);
}

}  // namespace

void AddAgentCommands(CLI::App& app, std::function<int()>& run) {
  auto flags = std::make_shared<AgentFlags>();
  CLI::App* cmd = app.add_subcommand("agent", "Run the node agent: register this machine with berth serve and run "
                                              "the tasks placed on it (docs/agent.md)");
  cmd->add_option("--server", flags->server, "the server's URL, http://HOST:PORT")->required();
  cmd->add_option("--node-token-file", flags->node_token_file,
                  "file holding the node token (the server's --node-token-file)")
      ->required();
  cmd->add_option("--config", flags->config,
                  "node.yaml: name, cpu_milli, memory_mib, gpus [{index, type, memory_mib}], labels (default: "
                  "discovered; GPUs from nvidia-smi)");
  cmd->add_option("--name", flags->name, "the node's name (overrides the configuration's; default: the host name)");
  cmd->add_option("--address", flags->address,
                  "where the other nodes reach this one (launch specs' MASTER_ADDR, MPI host files); default: the "
                  "configuration's address, else the node's name");
  cmd->add_option("--work-dir", flags->work_dir,
                  "the agent's state, and one directory per task (its working directory and log)")
      ->capture_default_str();
  cmd->add_option("--nvidia-smi", flags->nvidia_smi,
                  "the nvidia-smi to discover GPUs with when the configuration lists none (\"\" = no discovery)")
      ->capture_default_str();
  cmd->add_option("--gpu-health-file", flags->gpu_health_file,
                  "a file listing the device indexes of failed GPUs (written by an XID/DCGM watcher), read at "
                  "every heartbeat: those GPUs leave the scheduler, the node keeps serving the others");
  cmd->callback([flags, &run] { run = [flags] { return RunAgent(*flags); }; });

  auto dir = std::make_shared<std::string>();
  CLI::App* sup = app.add_subcommand("agent-supervise", "");  // hidden: one task's supervisor
  sup->group("");
  sup->add_option("dir", *dir, "the task directory")->required();
  sup->callback([dir, &run] { run = [dir] { return agent::RunSupervisor(*dir); }; });
}

}  // namespace berth::apps

#include "command.h"

#include <algorithm>
#include <vector>

namespace expnet::cli {
namespace {
std::vector<CommandSpec>& registry() {
  static std::vector<CommandSpec> commands;
  return commands;
}
int g_exit_code = 0;
}  // namespace

bool register_command(CommandSpec spec) {
  registry().push_back(std::move(spec));
  return true;
}

void install_commands(CLI::App& root) {
  auto commands = registry();
  std::stable_sort(commands.begin(), commands.end(),
                   [](const CommandSpec& a, const CommandSpec& b) { return a.order < b.order; });
  for (auto& command : commands) command.install(root);
}

CLI::App* command_group(CLI::App& root, const std::string& name, const std::string& description) {
  for (auto* existing : root.get_subcommands({}))
    if (existing->get_name() == name) return existing;
  auto* group = root.add_subcommand(name, description);
  group->require_subcommand(1);
  return group;
}

CLI::App* bench_group(CLI::App& root) {
  return command_group(root, "bench", "Benchmarks that print measured figures (medians)");
}

CLI::App* checkpoint_group(CLI::App& root) {
  return command_group(root, "checkpoint", "Read, convert and inspect PyTorch checkpoints (.pth)");
}

CLI::App* dataset_group(CLI::App& root) {
  return command_group(root, "dataset", "Captioning datasets: statistics, vocabulary, demo set, index");
}

std::shared_ptr<RuntimeOptions> add_runtime_options(CLI::App* command) {
  auto options = std::make_shared<RuntimeOptions>();
  // More threads than 4 per core only contend; tens of thousands never start.
  command->add_option("--threads", options->threads, "CPU threads for LibTorch and OpenBLAS (0 = all cores; at most 4 per core)")
      ->check(CLI::Range(0, 4 * hardware_threads()));
  command->add_option("--device", options->device, "cpu, cuda or cuda:N");
  return options;
}

void set_exit_code(int code) { g_exit_code = std::max(g_exit_code, code); }
int exit_code() { return g_exit_code; }

void add_host_store_options(CLI::App* command, std::string* host, std::string* store) {
  command->add_option("--host", *host, "The host (`expnet hosts`, or an ssh destination)")->required();
  command->add_option("--store", *store, "Its run store there (relative: in the host's work folder)")->required();
}

}  // namespace expnet::cli

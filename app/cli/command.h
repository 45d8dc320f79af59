// Subcommand registry of the `expnet` CLI. Each subcommand is one .cpp file that
// registers itself at static-initialisation time, e.g.
//   static const bool registered = expnet::cli::register_command(
//       {"doctor", 10, [](CLI::App& root) { ... }});
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "expnet/system/system.h"

namespace expnet::cli {

struct CommandSpec {
  std::string name;
  int order = 100;  // position in `expnet --help`
  std::function<void(CLI::App& root)> install;
};

bool register_command(CommandSpec spec);
void install_commands(CLI::App& root);

// A command group shared by several files (e.g. "bench", "dataset",
// "checkpoint"): returns the existing subcommand or creates it.
CLI::App* command_group(CLI::App& root, const std::string& name, const std::string& description);
// The groups that subcommands of several files join, each described once.
CLI::App* bench_group(CLI::App& root);
CLI::App* checkpoint_group(CLI::App& root);
CLI::App* dataset_group(CLI::App& root);

// --threads and --device, which every subcommand takes. Call apply_runtime()
// (expnet/system/system.h) with the result at the start of the command's callback.
std::shared_ptr<RuntimeOptions> add_runtime_options(CLI::App* command);

// --host and --store of a run store on a remote host (docs/remote.md), both
// required: `runs fetch` and `runs mirror`.
void add_host_store_options(CLI::App* command, std::string* host, std::string* store);

// The subcommand `name` of `parent` with --threads and --device and an Args for
// the options the caller adds; when it runs, it applies the runtime options (on
// this computer: not the --device of a command given --host) and
// calls run(runtime, args) or run(args). Returns the subcommand and its Args.
template <typename Args, typename Run>
std::pair<CLI::App*, Args*> add_command(CLI::App* parent, const std::string& name, const std::string& description, Run run) {
  auto* command = parent->add_subcommand(name, description);
  auto runtime = add_runtime_options(command);
  auto args = std::make_shared<Args>();
  command->callback([command, runtime, args, run] {
    // With --host, --device names a device of the host, which this computer may lack.
    const CLI::Option* host = command->get_option_no_throw("--host");
    if (host && host->count() > 0)
      apply_runtime(RuntimeOptions{runtime->threads, "cpu"});
    else
      apply_runtime(*runtime);
    if constexpr (std::is_invocable_v<Run, const RuntimeOptions&, const Args&>)
      run(*runtime, *args);
    else
      run(*args);
  });
  return {command, args.get()};
}

// Exit status of the process once the command returns (partial failures, e.g.
// some images could not be read, set it to 1 but let the command finish).
void set_exit_code(int code);
int exit_code();

}  // namespace expnet::cli

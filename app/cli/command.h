// Subcommand registry of the `expnet` CLI. Each subcommand is one .cpp file that
// registers itself at static-initialisation time, e.g.
//   static const bool registered = expnet::cli::register_command(
//       {"doctor", 10, [](CLI::App& root) { ... }});
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <memory>
#include <string>

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

// --threads and --device, which every subcommand takes. Call apply_runtime()
// (expnet/system/system.h) with the result at the start of the command's callback.
std::shared_ptr<RuntimeOptions> add_runtime_options(CLI::App* command);

// Exit status of the process once the command returns (partial failures, e.g.
// some images could not be read, set it to 1 but let the command finish).
void set_exit_code(int code);
int exit_code();

}  // namespace expnet::cli

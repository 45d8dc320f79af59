// expnet: the command-line front end of ExpansionNet Studio's engine.
// stdout carries results (compact JSON with --json); logs and progress go to stderr.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <csignal>
#include <iostream>

#include "command.h"
#include "expnet/system/system.h"

namespace {

void print_version() {
  const auto info = expnet::version_info();
  std::cout << "expnet " << info.program << "\n"
            << "LibTorch " << info.libtorch << "\n"
            << "OpenCV " << info.opencv << "\n"
#ifdef EXPNET_QT_VERSION
            << "Qt " << EXPNET_QT_VERSION << "\n"
#else
            << "Qt (not built: EXPNET_BUILD_GUI=OFF)\n"
#endif
            << "SQLite " << info.sqlite << "\n"
            << "device " << info.device << " (threads " << expnet::torch_threads() << ")\n";
}

}  // namespace

int main(int argc, char** argv) {
  // Past `ulimit -f` writes fail with EFBIG and are reported (file, reason, exit 1)
  // instead of SIGXFSZ killing the process silently; children inherit it.
  std::signal(SIGXFSZ, SIG_IGN);
  expnet::restart_with_passive_openmp_wait(argv);
  expnet::keep_freed_memory_for_reuse();
  spdlog::set_default_logger(spdlog::stderr_color_mt("expnet"));
  spdlog::set_pattern("[%H:%M:%S] %^%l%$ %v");

  CLI::App app{"expnet: ExpansionNet v2 image captioning engine (ExpansionNet Studio)"};
  app.require_subcommand(0, 1);
  auto runtime = expnet::cli::add_runtime_options(&app);
  bool version = false;
  app.add_flag("--version", version, "Print program, LibTorch, OpenCV, Qt, SQLite versions and the device");
  expnet::cli::install_commands(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  try {
    if (version) {
      expnet::apply_runtime(*runtime);
      print_version();
      return 0;
    }
    if (app.get_subcommands().empty()) {
      std::cout << app.help();
      return 0;
    }
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return expnet::cli::exit_code();
}

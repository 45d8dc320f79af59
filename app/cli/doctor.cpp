// expnet doctor: is this machine fit to run the engine fast?
#include <nlohmann/json.hpp>

#include <filesystem>
#include <iostream>

#include "command.h"
#include "expnet/model/precision.h"
#include "expnet/system/paths.h"

namespace expnet::cli {
namespace {

struct DoctorArgs {
  bool json = false;
  std::string folder;  // --free-of: a folder whose free space is reported (a remote host's work folder)
};

// Free bytes for an unprivileged user in `folder`, or -1 with the reason when it cannot be asked.
int64_t free_bytes(const std::string& folder, std::string* why) {
  std::error_code error;
  const auto space = std::filesystem::space(folder, error);
  if (error) {
    *why = "cannot ask the free space of '" + folder + "' (" + error.message() + ")";
    return -1;
  }
  return static_cast<int64_t>(space.available);
}

void run(const DoctorArgs& args) {
  const bool json = args.json;
  const DoctorReport report = run_doctor();
  std::string bf16_why;
  const bool bf16 = bf16_is_fast(current_device(), &bf16_why);
  const std::string precision_auto = bf16 ? "bf16" : "fp32";
  std::string int8_why;
  const bool int8 = int8_is_available(current_device(), &int8_why);
  std::string free_why;
  const int64_t free = args.folder.empty() ? -1 : free_bytes(args.folder, &free_why);
  if (json) {
    nlohmann::json gpus = nlohmann::json::array();
    for (const auto& gpu : report.gpus) gpus.push_back({{"name", gpu.name}, {"memory_bytes", gpu.memory_bytes}});
    nlohmann::json out = {{"version", EXPNET_VERSION}, {"gpus", std::move(gpus)}, {"gflops", report.gflops},
                          {"matmul_ms", report.matmul_ms}, {"threads", report.threads},
                          {"blas_threads", report.blas_threads}, {"blas_library", report.blas_library},
                          {"cuda", report.cuda}, {"bf16", bf16}, {"bf16_reason", bf16_why},
                          {"precision_auto", precision_auto}, {"int8", int8}, {"int8_reason", int8_why},
                          {"devices", report.devices}, {"warnings", report.warnings}, {"data_dir", data_dir()},
                          {"cache_dir", cache_dir()}, {"config_dir", config_dir()}};
    if (!args.folder.empty()) {
      out["folder"] = args.folder;
      out["free_bytes"] = free >= 0 ? nlohmann::json(free) : nlohmann::json(nullptr);
      if (free < 0) out["free_reason"] = free_why;
    }
    std::cout << out.dump() << std::endl;
  } else {
    std::cout << "matmul 1024x1024 float32: " << report.gflops << " GFLOP/s (" << report.matmul_ms
              << " ms, median)\n"
              << "LibTorch threads: " << report.threads << "\n"
              << "BLAS: " << report.blas_library << "\n"
              << "BLAS threads: " << (report.blas_threads < 0 ? std::string("unknown") : std::to_string(report.blas_threads)) << "\n"
              << "CUDA: " << (report.cuda ? "available" : "not available") << "\n"
              << bf16_why << " (--precision auto: " << precision_auto << " on " << current_device() << ")\n"
              << int8_why << (int8 ? " (--precision int8 available)" : " (--precision int8 runs as fp32)") << "\n"
              << "devices:";
    for (const auto& d : report.devices) std::cout << " " << d;
    std::cout << "\n";
    for (const auto& gpu : report.gpus)
      std::cout << "GPU: " << gpu.name << ", " << gpu.memory_bytes / (1 << 20) << " MiB\n";
    if (!args.folder.empty())
      std::cout << "free in " << args.folder << ": "
                << (free >= 0 ? std::to_string(free / (1 << 20)) + " MiB" : free_why) << "\n";
    std::cout << "version: " << EXPNET_VERSION << "\n"
              << "data: " << data_dir() << "\ncache: " << cache_dir() << "\nconfig: " << config_dir() << "\n";
  }
  for (const auto& warning : report.warnings) std::cerr << "warning: " << warning << "\n";
}

const bool registered = register_command({"doctor", 10, [](CLI::App& root) {
  auto [command, args] =
      add_command<DoctorArgs>(&root, "doctor", "Measure matrix-multiply speed, threads, BLAS and CUDA devices", run);
  command->add_flag("--json", args->json, "Print one compact JSON object");
  command->add_option("--free-of", args->folder, "Also report the free space of this folder (bytes, as `free_bytes`)");
}});

}  // namespace
}  // namespace expnet::cli

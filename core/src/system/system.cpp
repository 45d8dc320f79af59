#include "expnet/system/system.h"

#include <dlfcn.h>
#include <link.h>
#include <malloc.h>
#include <sqlite3.h>

#include <algorithm>
#include <cstdlib>
#include <chrono>
#include <cstring>
#include <opencv2/core/version.hpp>
#include <stdexcept>
#include <thread>
#include <torch/torch.h>
#include <torch/version.h>

#ifdef EXPNET_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#endif

#include <unistd.h>

#include <cstdlib>

namespace expnet {
namespace {

std::string g_device = "cpu";

// OpenBLAS has its own thread pool that at::set_num_threads does not reach.
// It is looked up at run time because which BLAS libblas.so.3 resolves to is
// a Debian "alternatives" choice, not a link-time fact.
using SetThreadsFn = void (*)(int);
using GetThreadsFn = int (*)();

SetThreadsFn openblas_set_threads() {
  return reinterpret_cast<SetThreadsFn>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
}
GetThreadsFn openblas_get_threads() {
  return reinterpret_cast<GetThreadsFn>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
}

int find_blas_object(struct dl_phdr_info* info, size_t, void* data) {
  auto* found = static_cast<std::string*>(data);
  const std::string name = info->dlpi_name ? info->dlpi_name : "";
  // cuBLAS (and hipBLAS) serve the GPU's products, not the CPU's.
  const bool gpu_blas = name.find("cublas") != std::string::npos || name.find("hipblas") != std::string::npos;
  if (found->empty() && name.find("blas") != std::string::npos && !gpu_blas) *found = name;
  return 0;
}

}  // namespace

int hardware_threads() { return std::max(1u, std::thread::hardware_concurrency()); }
int torch_threads() { return at::get_num_threads(); }

int blas_threads() {
  auto get = openblas_get_threads();
  return get ? get() : -1;
}

std::string blas_library() {
  std::string path;
  dl_iterate_phdr(find_blas_object, &path);
  // PyTorch's own LibTorch builds link MKL statically: no BLAS library of its own is loaded.
  if (path.empty()) return "none loaded (built into LibTorch, as in PyTorch's own builds)";
  // libblas.so.3 is a Debian alternatives link: name what it resolves to.
  if (char* real = realpath(path.c_str(), nullptr)) {
    path = real;
    free(real);
  }
  if (path.find("openblas-pthread") != std::string::npos) return "openblas-pthread (" + path + ")";
  if (path.find("openblas-openmp") != std::string::npos) return "openblas-openmp (" + path + ")";
  if (path.find("openblas") != std::string::npos) return "openblas (" + path + ")";
  if (path.find("blis") != std::string::npos) return "blis (" + path + ")";
  if (path.find("mkl") != std::string::npos) return "mkl (" + path + ")";
  return "reference BLAS (" + path + ")";
}

void check_device(const std::string& device) {
  torch::Device parsed(torch::kCPU);
  try {
    parsed = torch::Device(device);
  } catch (const std::exception&) {
    throw std::runtime_error("unknown device '" + device + "': use cpu, cuda or cuda:N");
  }
  if (parsed.is_cpu()) return;
  if (!parsed.is_cuda()) throw std::runtime_error("unsupported device '" + device + "': use cpu, cuda or cuda:N");
  if (!torch::cuda::is_available())
    throw std::runtime_error("device '" + device +
                             "' requested but this build has no CUDA (Debian's LibTorch is CPU-only); "
                             "use --device cpu, or build against an official CUDA LibTorch (see README)");
  const int count = static_cast<int>(torch::cuda::device_count());
  if (parsed.has_index() && parsed.index() >= count)
    throw std::runtime_error("device '" + device + "' does not exist: " + std::to_string(count) +
                             " CUDA device(s) visible");
}

void restart_with_passive_openmp_wait(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr) return;
  if (setenv("OMP_WAIT_POLICY", "PASSIVE", 1) != 0) return;
  execv("/proc/self/exe", argv);
  // exec failed (no /proc?): go on with the default policy; it is only slower.
}

void keep_freed_memory_for_reuse() {
  for (const char* tunable : {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_"})
    if (std::getenv(tunable) != nullptr) return;
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables != nullptr && std::strstr(tunables, "glibc.malloc.") != nullptr) return;
  constexpr int kMiB = 1 << 20;
  mallopt(M_MMAP_THRESHOLD, 256 * kMiB);
  mallopt(M_TRIM_THRESHOLD, 1024 * kMiB);
  mallopt(M_TOP_PAD, 64 * kMiB);
}

void apply_runtime(const RuntimeOptions& options) {
  if (options.threads < 0) throw std::runtime_error("--threads must be >= 0 (0 = all cores)");
  check_device(options.device);
  g_device = options.device;
  const int threads = options.threads > 0 ? options.threads : hardware_threads();
  at::set_num_threads(threads);
  if (auto set = openblas_set_threads()) set(threads);
}

const std::string& current_device() { return g_device; }

void wait_for_device(const std::string& device) {
  const torch::Device parsed(device);
  if (parsed.is_cuda()) torch::cuda::synchronize(parsed.has_index() ? parsed.index() : -1);
}

VersionInfo version_info() {
  VersionInfo info;
  info.program = EXPNET_VERSION;
  info.libtorch = TORCH_VERSION;
  info.opencv = CV_VERSION;
  info.sqlite = sqlite3_libversion();
  info.device = g_device;
  return info;
}

DoctorReport run_doctor(int repeats) {
  DoctorReport report;
  constexpr int64_t n = 1024;
  torch::NoGradGuard no_grad;
  auto a = torch::randn({n, n});
  auto b = torch::randn({n, n});
  auto c = torch::mm(a, b);  // warm-up: thread pools start, pages fault in
  std::vector<double> ms;
  for (int i = 0; i < std::max(1, repeats); ++i) {
    const auto start = std::chrono::steady_clock::now();
    c = torch::mm(a, b);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(ms.begin(), ms.end());
  report.matmul_ms = ms[ms.size() / 2];
  report.gflops = 2.0 * n * n * n / (report.matmul_ms * 1e-3) / 1e9;
  report.threads = torch_threads();
  report.blas_threads = blas_threads();
  report.blas_library = blas_library();
  report.cuda = torch::cuda::is_available();
  report.devices.push_back("cpu");
  if (report.cuda) {
    for (int i = 0; i < static_cast<int>(torch::cuda::device_count()); ++i) {
      std::string name = "cuda:" + std::to_string(i);
      DoctorReport::Gpu gpu{name, 0};
#ifdef EXPNET_WITH_CUDA
      const auto* properties = at::cuda::getDeviceProperties(i);
      name += std::string(" (") + properties->name + ")";
      gpu = {properties->name, static_cast<int64_t>(properties->totalGlobalMem)};
#endif
      report.devices.push_back(name);
      report.gpus.push_back(std::move(gpu));
    }
  }
  if (report.gflops < kMinHealthyGflops) {
    report.warnings.push_back(
        "matrix multiply runs at " + std::to_string(static_cast<int>(report.gflops)) +
        " GFLOP/s (< 20): LibTorch is using a slow BLAS (" + report.blas_library +
        "); fix: apt-get install libopenblas0-pthread (a Swin-L forward drops from ~160 s to ~3.5 s)");
  }
  if (report.blas_threads > 0 && report.blas_threads != report.threads) {
    report.warnings.push_back("BLAS uses " + std::to_string(report.blas_threads) + " threads but LibTorch " +
                              std::to_string(report.threads) + ": pass --threads N to set both");
  }
  return report;
}

}  // namespace expnet

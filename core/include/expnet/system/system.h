// Process-wide runtime settings (threads, device) and the machine report that
// `expnet doctor` and `expnet --version` print. No LibTorch types here.
#pragma once

#include <string>
#include <vector>

namespace expnet {

// What every subcommand accepts: --threads N, --device cpu|cuda[:i].
struct RuntimeOptions {
  int threads = 0;            // 0 = all cores
  std::string device = "cpu";  // "cpu", "cuda", "cuda:1"
};

// Call first thing in main(). LibTorch's OpenMP workers spin after every
// parallel region by default, taking the cores OpenBLAS's own threads need
// next (docs/performance.md, "Runtime settings"). OpenMP reads
// OMP_WAIT_POLICY only at start-up, so when it is unset this sets it to
// PASSIVE and re-executes the program (same arguments); a value the user set
// is respected. Returns only if no re-exec happened (or it failed, which is
// harmless).
void restart_with_passive_openmp_wait(char** argv);

// Call first thing in main() too. LibTorch allocates every tensor with plain
// malloc, and glibc serves blocks above 128 KB (at first) with fresh mmap
// pages that it unmaps on free, so every large temporary is page-faulted and
// zeroed again. This keeps blocks up to 256 MB in the heap and up to 1 GB of
// freed memory for reuse (figures: docs/performance.md, "Runtime settings").
// A MALLOC_* tunable set in the environment is respected.
void keep_freed_memory_for_reuse();

// Applies the thread count to LibTorch's intra-op pool and to OpenBLAS's own
// pool (OpenBLAS ignores at::set_num_threads). Throws std::runtime_error with
// a user-facing message when the device does not exist on this build/machine.
void apply_runtime(const RuntimeOptions& options);

// Validates a device string ("cpu", "cuda", "cuda:0"); throws with what to do.
void check_device(const std::string& device);

// The device string currently in use (set by apply_runtime).
const std::string& current_device();

// Waits until the work queued on `device` has finished: CUDA kernels run
// asynchronously, so a timer read without this measures only their launch.
// Returns at once for the CPU.
void wait_for_device(const std::string& device);

int hardware_threads();
int torch_threads();
// Threads of the BLAS library LibTorch calls; -1 when it is not OpenBLAS.
int blas_threads();
// Name of the BLAS shared object loaded in this process ("openblas-pthread", "reference", ...).
std::string blas_library();

struct VersionInfo {
  std::string program;
  std::string libtorch;
  std::string opencv;
  std::string sqlite;
  std::string device;
};
VersionInfo version_info();

struct DoctorReport {
  double gflops = 0;               // 1024x1024 float32 matmul, median of runs
  double matmul_ms = 0;
  int threads = 0;
  int blas_threads = -1;
  std::string blas_library;
  bool cuda = false;
  std::vector<std::string> devices;  // "cpu", "cuda:0 (NVIDIA ...)" ...
  struct Gpu {
    std::string name;          // "NVIDIA H200"; "cuda:N" where this build cannot ask
    int64_t memory_bytes = 0;  // 0 where this build cannot ask
  };
  std::vector<Gpu> gpus;
  std::vector<std::string> warnings;
};
inline constexpr double kMinHealthyGflops = 20.0;
DoctorReport run_doctor(int repeats = 7);

}  // namespace expnet

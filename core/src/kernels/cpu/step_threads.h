// The threads that run a decoding step's own kernels (few_rows_linear and
// step_kernels). Why not LibTorch's OpenMP pool: a step runs some forty short
// parallel regions (tens to hundreds of microseconds each), and under the
// passive wait policy the programs set (README: with spinning OpenMP workers
// OpenBLAS loses the cores it needs) each region pays for waking a sleeping
// worker, up to half of a one-image step (docs/performance.md).
// These workers instead keep polling for the next region for a short while
// after each one, giving the core away at every poll (sched_yield), so a BLAS
// or OpenMP thread that needs the core gets it at once, and sleep after that.
#pragma once

#include <cstdint>
#include <functional>

namespace expnet {

// Runs fn(first, last) over [0, n) in contiguous parts, one per thread: at
// most at::get_num_threads() threads, the caller included, each part a whole
// multiple of `granule` (except the last). Runs fn(0, n) on the calling thread
// when there is one thread, one part, or when another thread is already in a
// run (two captioners at once share nothing and stay correct). Exceptions from
// fn are caught and rethrown on the calling thread.
void parallel_step(int64_t n, int64_t granule, const std::function<void(int64_t, int64_t)>& fn);

// How long a worker keeps polling after a part before it sleeps.
inline constexpr int64_t kStepThreadPollMicroseconds = 2000;

}  // namespace expnet

// See step_threads.h.
#include "kernels/cpu/step_threads.h"

#include <ATen/Parallel.h>

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace expnet {
namespace {

using Clock = std::chrono::steady_clock;
using Job = std::function<void(int64_t, int64_t)>;

// The bounds of part k of `parts` over [0, n), in whole granules.
std::pair<int64_t, int64_t> part_bounds(int64_t n, int64_t granule, int64_t parts, int64_t k) {
  const int64_t blocks = (n + granule - 1) / granule;
  return {std::min(n, blocks * k / parts * granule), std::min(n, blocks * (k + 1) / parts * granule)};
}

class StepThreads {
 public:
  explicit StepThreads(int workers) {
    for (int w = 1; w <= workers; ++w) threads_.emplace_back([this, w] { work(w); });
  }
  // Never destroyed (see pool()): workers may be asleep or polling at exit.
  int workers() const { return static_cast<int>(threads_.size()); }

  // Caller holds the pool (one run at a time).
  void run(int64_t n, int64_t granule, int64_t parts, const Job& fn) {
    job_ = &fn;
    n_ = n;
    granule_ = granule;
    error_ = nullptr;
    pending_.store(static_cast<int>(parts - 1));
    // Generation and part count in one word, so a worker never pairs one
    // run's generation with another run's part count.
    const uint64_t word = ((state_.load() >> 8) + 1) << 8 | static_cast<uint64_t>(parts);
    state_.store(word);
    if (sleepers_.load() > 0) {
      std::lock_guard<std::mutex> lock(sleep_mutex_);
      wake_.notify_all();
    }
    run_part(0, parts);
    while (pending_.load(std::memory_order_acquire) > 0) sched_yield();
    if (error_) std::rethrow_exception(error_);
  }

 private:
  void run_part(int64_t k, int64_t parts) {
    const auto [first, last] = part_bounds(n_, granule_, parts, k);
    if (first >= last) return;
    try {
      (*job_)(first, last);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex_);
      if (!error_) error_ = std::current_exception();
    }
  }

  void work(int w) {
    // Not state_.load(): the first run may have been posted before this thread started.
    uint64_t seen = 0;
    for (;;) {
      uint64_t word = wait_for_change(seen);
      seen = word;
      const int64_t parts = static_cast<int64_t>(word & 0xff);
      if (w >= parts) continue;  // not in this run: job fields are not ours to read
      run_part(w, parts);
      pending_.fetch_sub(1, std::memory_order_release);
    }
  }

  // Polls (yielding the core each time) for kStepThreadPollMicroseconds, then sleeps.
  uint64_t wait_for_change(uint64_t seen) {
    const auto give_up = Clock::now() + std::chrono::microseconds(kStepThreadPollMicroseconds);
    for (;;) {
      const uint64_t word = state_.load(std::memory_order_acquire);
      if (word != seen) return word;
      if (Clock::now() > give_up) break;
      sched_yield();
    }
    std::unique_lock<std::mutex> lock(sleep_mutex_);
    sleepers_.fetch_add(1);
    wake_.wait(lock, [&] { return state_.load() != seen; });
    sleepers_.fetch_sub(1);
    return state_.load(std::memory_order_acquire);
  }

  std::vector<std::thread> threads_;
  std::atomic<uint64_t> state_{0};  // generation << 8 | parts of the current run
  std::atomic<int> pending_{0};     // workers still in the current run
  std::atomic<int> sleepers_{0};
  std::mutex sleep_mutex_;
  std::condition_variable wake_;
  const Job* job_ = nullptr;
  int64_t n_ = 0, granule_ = 1;
  std::mutex error_mutex_;
  std::exception_ptr error_;
};

std::atomic<bool> g_busy{false};
StepThreads* g_pool = nullptr;  // guarded by g_busy
pid_t g_pool_pid = 0;

// The pool for `workers` workers, made anew when the thread count changed or
// after a fork (the child has none of the parent's threads). The old one is
// left behind: its workers sleep until the process ends.
StepThreads& pool(int workers) {
  if (!g_pool || g_pool->workers() != workers || g_pool_pid != getpid()) {
    g_pool = new StepThreads(workers);
    g_pool_pid = getpid();
  }
  return *g_pool;
}

}  // namespace

void parallel_step(int64_t n, int64_t granule, const Job& fn) {
  if (n <= 0) return;
  granule = std::max<int64_t>(granule, 1);
  const int64_t threads = std::min<int64_t>(at::get_num_threads(), 255);
  const int64_t parts = std::min<int64_t>(threads, (n + granule - 1) / granule);
  bool expected = false;
  if (parts <= 1 || !g_busy.compare_exchange_strong(expected, true)) {
    fn(0, n);
    return;
  }
  struct Release {
    ~Release() { g_busy.store(false); }
  } release;
  pool(static_cast<int>(threads - 1)).run(n, granule, parts, fn);
}

}  // namespace expnet

// What the `expnet bench ...` subcommands share: medians, wall and CPU timers,
// and the process's peak memory.
#pragma once

#include <chrono>
#include <functional>
#include <vector>

#include "expnet/system/statistics.h"

namespace expnet::cli {

using expnet::median;  // expnet/system/statistics.h

using BenchClock = std::chrono::steady_clock;
double ms_since(BenchClock::time_point start);
double seconds_since(BenchClock::time_point start);
double thread_cpu_ms();  // CPU time of the calling thread so far
// CPU seconds of the whole process (all threads: loader workers included).
// On a shared, loaded machine this is the steadier cost figure.
double process_cpu_seconds();

// Wall time and this thread's CPU time. On a busy machine the wall time
// includes waiting for a core; the CPU time does not.
struct Timing {
  double wall_ms = 0, cpu_ms = 0;
};
Timing time_once(const std::function<void()>& work);
// Medians of `repeats` timed runs (wall and CPU separately), after `warmup` untimed ones.
Timing median_timing(int repeats, const std::function<void()>& work, int warmup = 0);
double wall_ms(const std::function<void()>& work);  // one timed run

double peak_rss_mb();  // VmHWM of this process; -1 where /proc does not say

}  // namespace expnet::cli

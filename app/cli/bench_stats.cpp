#include "bench_stats.h"

#include <time.h>

#include <algorithm>
#include <fstream>
#include <string>

namespace expnet::cli {

double ms_since(BenchClock::time_point start) {
  return std::chrono::duration<double, std::milli>(BenchClock::now() - start).count();
}

double seconds_since(BenchClock::time_point start) {
  return std::chrono::duration<double>(BenchClock::now() - start).count();
}

double thread_cpu_ms() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) * 1e3 + static_cast<double>(now.tv_nsec) * 1e-6;
}

double process_cpu_seconds() {
  timespec now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

Timing time_once(const std::function<void()>& work) {
  const auto start = BenchClock::now();
  const double cpu_start = thread_cpu_ms();
  work();
  const double cpu = thread_cpu_ms() - cpu_start;
  return {ms_since(start), cpu};
}

Timing median_timing(int repeats, const std::function<void()>& work, int warmup) {
  for (int i = 0; i < warmup; ++i) work();
  std::vector<double> wall, cpu;
  for (int i = 0; i < repeats; ++i) {
    const Timing t = time_once(work);
    wall.push_back(t.wall_ms);
    cpu.push_back(t.cpu_ms);
  }
  return {median(wall), median(cpu)};
}

double wall_ms(const std::function<void()>& work) {
  const auto start = BenchClock::now();
  work();
  return ms_since(start);
}

double peak_rss_mb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;  // kB
  return -1;
}

}  // namespace expnet::cli

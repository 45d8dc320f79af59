#include "op_profile.h"

#include <nlohmann/json.hpp>
#include <torch/csrc/autograd/profiler_legacy.h>

#include <algorithm>
#include <fstream>
#include <iomanip>
#include <map>
#include <ostream>
#include <sstream>
#include <vector>

#include "expnet/system/atomic_file.h"

namespace expnet::cli {
namespace {

struct Span {
  std::string name;
  double start = 0, end = 0;
};

struct OpTotal {
  double self_us = 0, total_us = 0;
  int64_t calls = 0;
};

// Self time per operator name: a span's duration minus its direct children's,
// spans nest per thread (the profiler records complete "X" events).
std::map<std::string, OpTotal> self_times(const nlohmann::json& events) {
  std::map<std::string, std::vector<Span>> by_thread;
  for (const auto& e : events) {
    if (!e.is_object() || e.value("ph", "") != "X" || !e.contains("dur")) continue;
    const double ts = e["ts"].get<double>(), dur = e["dur"].get<double>();
    by_thread[e.contains("tid") ? e["tid"].dump() : "0"].push_back({e.value("name", "?"), ts, ts + dur});
  }
  std::map<std::string, OpTotal> totals;
  for (auto& [thread, spans] : by_thread) {
    std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
      return a.start != b.start ? a.start < b.start : a.end > b.end;
    });
    std::vector<std::pair<const Span*, double>> stack;  // span, time of its children
    auto close = [&](double before) {
      while (!stack.empty() && stack.back().first->end <= before) {
        auto [span, children] = stack.back();
        stack.pop_back();
        auto& t = totals[span->name];
        t.self_us += (span->end - span->start) - children;
        t.total_us += span->end - span->start;
        ++t.calls;
        if (!stack.empty()) stack.back().second += span->end - span->start;
      }
    };
    for (const auto& span : spans) {
      close(span.start);
      stack.push_back({&span, 0.0});
    }
    close(1e300);
  }
  return totals;
}

}  // namespace

void profile_ops(const std::string& title, const std::function<void()>& work, std::ostream& out, int top,
                 const std::string& trace_file) {
  std::stringstream trace;
  {
    torch::autograd::profiler::RecordProfile guard(trace);
    work();
  }
  if (!trace_file.empty()) write_file_atomic(trace_file, trace.str());
  const auto events = nlohmann::json::parse(trace.str(), nullptr, /*allow_exceptions=*/false);
  const auto totals = self_times(events.is_object() ? events.value("traceEvents", nlohmann::json::array()) : events);
  std::vector<std::pair<std::string, OpTotal>> rows(totals.begin(), totals.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.self_us > b.second.self_us; });
  double all = 0;
  for (const auto& row : rows) all += row.second.self_us;
  out << "profile: " << title << " (operators by self time, total " << std::fixed << std::setprecision(1)
      << all / 1000.0 << " ms)\n";
  for (int i = 0; i < top && i < static_cast<int>(rows.size()); ++i) {
    const auto& [name, t] = rows[static_cast<size_t>(i)];
    out << "  " << std::left << std::setw(36) << name << std::right << std::setw(7) << t.calls << " calls "
        << std::setw(9) << t.self_us / 1000.0 << " ms " << std::setw(5) << 100.0 * t.self_us / std::max(all, 1.0)
        << " %\n";
  }
  // The model's own scopes (RECORD_USER_SCOPE "expnet::..."): inclusive time.
  bool header = false;
  for (const auto& [name, t] : totals) {
    if (name.rfind("expnet::", 0) != 0) continue;
    if (!header) out << "  stages (inclusive time):\n";
    header = true;
    out << "  " << std::left << std::setw(36) << name << std::right << std::setw(7) << t.calls << " calls "
        << std::setw(9) << t.total_us / 1000.0 << " ms\n";
  }
  out.unsetf(std::ios::fixed);
}

}  // namespace expnet::cli

#include "runs/runcurveaxes.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace {
const double kNaN = std::nan("");

void epochPositions(const std::vector<expnet::StepRecord>& steps,
                    const std::vector<expnet::ValidationRecord>& validations, CurvePositions* out) {
  std::map<int64_t, int64_t> epochs, longest;  // by stage: epochs seen, most steps in one epoch
  const auto groupEnd = [&](size_t i) {  // records of one epoch are consecutive
    size_t j = i;
    while (j < steps.size() && steps[j].stage == steps[i].stage && steps[j].epoch == steps[i].epoch) ++j;
    return j;
  };
  for (size_t i = 0, j; i < steps.size(); i = j) {
    j = groupEnd(i);
    epochs[steps[i].stage] = std::max(epochs[steps[i].stage], steps[i].epoch + 1);
    longest[steps[i].stage] = std::max(longest[steps[i].stage], int64_t(j - i));
  }
  for (const auto& v : validations) epochs[v.stage] = std::max(epochs[v.stage], v.epoch + 1);
  std::map<int64_t, double> offset;  // by stage: the epochs of the stages before it
  double sum = 0;
  for (const auto& [stage, count] : epochs) {
    offset[stage] = sum;
    sum += double(count);
  }
  out->steps.resize(steps.size());
  for (size_t i = 0, j; i < steps.size(); i = j) {
    j = groupEnd(i);
    const double base = offset[steps[i].stage] + double(steps[i].epoch), n = double(longest[steps[i].stage]);
    for (size_t k = i; k < j; ++k) out->steps[k] = base + double(k - i + 1) / n;
  }
  for (const auto& v : validations) out->validations.push_back(offset[v.stage] + double(v.epoch + 1));
}
}  // namespace

CurvePositions curvePositions(const std::vector<expnet::StepRecord>& steps,
                              const std::vector<expnet::ValidationRecord>& validations, CurveXAxis axis) {
  CurvePositions out;
  out.validations.reserve(validations.size());
  if (axis == CurveXAxis::Epoch) {
    epochPositions(steps, validations, &out);
    return out;
  }
  const bool wall = axis == CurveXAxis::WallTime;
  out.steps.reserve(steps.size());
  for (const auto& s : steps) out.steps.push_back(wall ? (s.wall_s > 0 ? s.wall_s : kNaN) : double(s.step));
  for (const auto& v : validations) {
    if (!wall) {
      out.validations.push_back(double(v.step));
      continue;
    }
    const auto after = std::upper_bound(steps.begin(), steps.end(), v.step,
                                        [](int64_t step, const expnet::StepRecord& r) { return step < r.step; });
    out.validations.push_back(after == steps.begin() ? kNaN : out.steps[size_t(after - steps.begin() - 1)]);
  }
  return out;
}

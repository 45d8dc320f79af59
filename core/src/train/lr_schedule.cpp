// Learning-rate schedules (see expnet/train/lr_schedule.h).
#include "expnet/train/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace expnet {

double LrSchedule::rate(int64_t it) const {
  if (kind == LrScheduleKind::fixed) return lr;
  const int64_t per_anneal = std::max<int64_t>(1, batches_per_epoch * std::max<int64_t>(1, anneal_every_epochs));
  const double anneal = std::pow(anneal_factor, static_cast<double>(it / per_anneal));
  double warm;
  if (kind == LrScheduleKind::reference)
    warm = lr / static_cast<double>(std::max<int64_t>(warmup - it, 1));
  else
    warm = warmup > 0 ? lr * std::min(1.0, static_cast<double>(it + 1) / static_cast<double>(warmup)) : lr;
  const double floor_lr = it >= warmup ? min_lr : 0.0;
  return std::max(floor_lr, warm * anneal);
}

LrScheduleKind parse_lr_schedule_kind(const std::string& name) {
  if (name == "reference") return LrScheduleKind::reference;
  if (name == "linear" || name == "linear_warmup") return LrScheduleKind::linear_warmup;
  if (name == "fixed") return LrScheduleKind::fixed;
  throw std::invalid_argument("unknown learning-rate schedule '" + name + "' (use reference, linear or fixed)");
}

std::string to_string(LrScheduleKind kind) {
  switch (kind) {
    case LrScheduleKind::reference: return "reference";
    case LrScheduleKind::linear_warmup: return "linear";
    case LrScheduleKind::fixed: return "fixed";
  }
  return "reference";
}

}  // namespace expnet

// The learning-rate schedules of docs/expansionnet-v2.md ("Training"):
// the reference's warm-up and annealing, a linear warm-up, and a fixed rate.
// See docs/training.md.
#pragma once

#include <cstdint>
#include <string>

namespace expnet {

enum class LrScheduleKind { reference, linear_warmup, fixed };

// Learning rate per iteration (the scheduler steps once per micro-batch).
//  reference:     max([it >= W] * min_lr, lr / max(W - it, 1) * a^floor(it / (B*k)))
//  linear_warmup: max([it >= W] * min_lr, lr * min(1, (it+1)/W) * a^floor(it / (B*k)))
//  fixed:         lr
// with W = warmup, B = batches_per_epoch, k = anneal_every_epochs, a = anneal_factor.
struct LrSchedule {
  LrScheduleKind kind = LrScheduleKind::reference;
  double lr = 2e-4;
  int64_t warmup = 0;
  double anneal_factor = 1.0;
  int64_t anneal_every_epochs = 1;
  int64_t batches_per_epoch = 1;
  double min_lr = 5e-7;

  double rate(int64_t it) const;
};
LrScheduleKind parse_lr_schedule_kind(const std::string& name);  // throws std::invalid_argument
std::string to_string(LrScheduleKind kind);

}  // namespace expnet

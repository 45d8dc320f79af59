// A training run's position (see train_progress.h).
#include "train/train_progress.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace expnet {
namespace {

using nlohmann::json;

// Every key once, for both directions. `optional`: absent from the states of
// older runs (before mixed precision), read as the default.
template <typename Progress, typename Visit>
void visit_fields(Progress& p, Visit&& visit) {
  visit("stage", p.stage, false);
  visit("epoch", p.epoch, false);
  visit("position", p.position, false);
  visit("iteration", p.iteration, false);
  visit("global_step", p.global_step, false);
  visit("best_cider", p.best_cider, false);
  visit("last_cider", p.last_cider, false);
  visit("kept", p.kept, false);
  visit("loader_state", p.loader_state, false);
  visit("loss_scale", p.loss_scale, true);
  visit("scale_good_steps", p.scale_good_steps, true);
}

}  // namespace

void TrainProgress::update_loss_scale(bool finite) {
  if (!finite) {
    loss_scale = std::max(1.0, loss_scale / 2);
    scale_good_steps = 0;
  } else if (++scale_good_steps >= 2000) {
    loss_scale *= 2;
    scale_good_steps = 0;
  }
}

std::string TrainProgress::to_json() const {
  json j = json::object();
  visit_fields(*this, [&j](const char* key, const auto& value, bool) { j[key] = value; });
  return j.dump();
}

TrainProgress TrainProgress::from_json(const std::string& text) {
  const json j = json::parse(text);
  TrainProgress p;
  visit_fields(p, [&j](const char* key, auto& value, bool optional) {
    if (!optional || j.contains(key)) j.at(key).get_to(value);
  });
  return p;
}

}  // namespace expnet

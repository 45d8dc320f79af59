// Autocast (CUDA float16) around a forward pass of the trainer; a no-op when
// off. Private to the train area.
#pragma once

#include <ATen/autocast_mode.h>

namespace expnet {

class AutocastScope {
 public:
  explicit AutocastScope(bool on) : on_(on) {
    if (!on_) return;
    at::autocast::set_enabled(true);
    at::autocast::increment_nesting();
  }
  ~AutocastScope() {
    if (!on_) return;
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    at::autocast::set_enabled(false);
  }
  AutocastScope(const AutocastScope&) = delete;  // one scope, one nesting level
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool on_;
};

}  // namespace expnet

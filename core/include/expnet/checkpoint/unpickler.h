// Unpickling: a restricted Python unpickler for plain data and for the data.pkl
// program of torch.save archives (safety rules: expnet/checkpoint/pickle_value.h).
#pragma once

#include "expnet/checkpoint/pickle_value.h"
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace expnet::pickle {

// What one document may cost (docs/checkpoints.md, "Limits against hostile
// input"): a memory budget (pickle::Budget) proportional to the input's size,
// with a floor for small inputs and a fixed ceiling. Real files use a small
// fraction of it (a torch.save data.pkl about 40 bytes per input byte).
struct Limits {
  size_t max_mark_depth = 10000;                  // nesting of MARKs
  size_t budget_per_input_byte = 1024;            // estimated bytes of values per byte of pickle
  size_t min_budget_bytes = size_t{4} << 20;      // small inputs get this much
  size_t max_budget_bytes = size_t{128} << 20;    // whatever the input's size
  size_t max_key_bytes = Value::kMaxKeyBytes;     // one tuple key's identity (shared items expanded)
  size_t budget_for(size_t input_bytes) const;
};

// The result of unpickling: the root value and the arena that owns it.
struct Document {
  std::shared_ptr<Arena> arena;
  Value* root = nullptr;
  int protocol = 0;
  // Every storage the program named, in order of first appearance.
  std::vector<std::shared_ptr<const StorageRef>> storages;
  size_t budget_used = 0;  // what building it was charged (Limits), for tests and reports
};

// Unpickles one pickle program. `source` names the data in error messages
// (e.g. "model.pth:archive/data.pkl"). Throws PickleError.
Document parse(std::string_view data, const std::string& source, const Limits& limits = {});
// Same, also returning where the program's STOP ended (legacy torch files
// hold several pickles back to back).
Document parse_prefix(std::string_view data, const std::string& source, size_t* consumed, const Limits& limits = {});

// The globals a pickle may name ("collections.OrderedDict", ...).
const std::vector<std::string>& allowed_globals();

}  // namespace expnet::pickle

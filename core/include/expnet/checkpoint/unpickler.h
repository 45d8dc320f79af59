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

struct Limits {
  size_t max_mark_depth = 10000;     // nesting of MARKs
  size_t max_values = 50'000'000;    // values created in one document
  size_t max_memo = 50'000'000;      // memo entries
};

// The result of unpickling: the root value and the arena that owns it.
struct Document {
  std::shared_ptr<Arena> arena;
  Value* root = nullptr;
  int protocol = 0;
  // Every storage the program named, in order of first appearance.
  std::vector<std::shared_ptr<const StorageRef>> storages;
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

// Pickling: writes a value tree as torch.save does, and renders one for people.
#pragma once

#include "expnet/checkpoint/pickle_value.h"
#include <string>

namespace expnet::pickle {

// Writes `root` as a protocol-2 pickle in torch.save's conventions (OrderedDict
// via REDUCE+SETITEMS+BUILD, tensors via _rebuild_tensor_v2 with a persistent
// storage id, bytes via _codecs.encode), which Python's pickle/torch.load read.
// Values referenced more than once are written once and then fetched from
// the memo (BINPUT/BINGET), so shared sub-objects stay shared and the output
// stays proportional to the distinct values. Nesting deeper than `max_depth`
// throws PickleError (guards against cycles).
std::string write(const Value& root, int max_depth = 200);

// Short human-readable rendering for errors and `inspect` (depth-limited).
std::string describe(const Value& value, int max_depth = 3);

}  // namespace expnet::pickle

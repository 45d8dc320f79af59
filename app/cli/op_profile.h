// Where the time goes: runs a piece of work under LibTorch's profiler and
// prints the operators by self time (time not spent in nested operators), so
// `expnet bench ... --profile` can say which layers and kernels dominate.
#pragma once

#include <functional>
#include <iosfwd>
#include <string>

namespace expnet::cli {

// Runs `work` once under the profiler and prints the `top` operators by self
// time to `out` (name, calls, self ms, share). When `trace_file` is not empty
// the raw Chrome trace (chrome://tracing, Perfetto) is also written there.
void profile_ops(const std::string& title, const std::function<void()>& work, std::ostream& out, int top = 15,
                 const std::string& trace_file = {});

}  // namespace expnet::cli

// A program run as a child process with its arguments as a list (argv[0]
// searched on PATH, never a shell): its stdin given, its stdout streamed to a
// callback as it comes, its stderr kept. Used for the user's ssh
// (remote/ssh_remote) and for SLURM's scontrol (train/distributed).
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace expnet {

struct ChildResult {
  int status = -1;  // its exit status, 128 + the signal that ended it, or -1 when it did not end in time
  std::string err;  // its stderr (the first MiB)
};

// Runs `argv` with `input` on its stdin, at most `timeout_s` seconds (then it is
// killed); `on_stdout` gets its stdout as it comes, and a callback that throws
// kills it first. Throws std::runtime_error "cannot start PROGRAM (why)" followed
// by `missing_hint` when it cannot be started.
ChildResult run_child(const std::vector<std::string>& argv, const std::string& input, int timeout_s,
                      const std::function<void(const char* data, size_t size)>& on_stdout, const std::string& missing_hint);

}  // namespace expnet

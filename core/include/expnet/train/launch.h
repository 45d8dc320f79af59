// `expnet train --nproc N`: the local launcher (what torchrun does on one
// machine). No LibTorch here.
#pragma once

#include <string>
#include <vector>

namespace expnet {

struct LaunchOptions {
  int nproc = 2;
  std::vector<std::string> child_args;  // argv of each child after the program (no --nproc)
  std::string program;                  // empty: this executable (/proc/self/exe)
  int grace_seconds = 10;               // after one child fails: SIGTERM the others, SIGKILL after this
};

// A free TCP port on 127.0.0.1 (bound to port 0 and released).
int free_loopback_port();

// Starts nproc children with RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR=127.0.0.1
// and a free MASTER_PORT, forwards SIGINT/SIGTERM to them and waits. Returns 0
// when all exit 0; otherwise stops the others and returns the first failure's
// status (128 + signal for a signalled child), after logging which rank failed.
int launch_local(const LaunchOptions& options);

}  // namespace expnet

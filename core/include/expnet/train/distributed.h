// Data-parallel training over processes with LibTorch's c10d (Gloo on CPU, NCCL
// on CUDA builds that have it). The c10d headers stay in core/src/train/
// distributed.cpp; this header only needs tensors. See docs/training.md
// ("Distributed").
#pragma once

#include <ATen/core/Tensor.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace expnet {

// Where this process sits in the job, as torchrun describes it.
struct DistributedEnv {
  int rank = 0, world_size = 1, local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  // torchrun's agent already hosts the store on MASTER_ADDR:MASTER_PORT
  // (TORCHELASTIC_USE_AGENT_STORE=True); workers use it under
  // "/worker/attempt_<restart_count>" as PyTorch's env:// rendezvous does.
  bool agent_store = false;
  int restart_count = 0;     // TORCHELASTIC_RESTART_COUNT
  std::string gloo_ifname;   // GLOO_SOCKET_IFNAME: the interface Gloo binds to
  bool active() const { return world_size > 1; }
};

// Reads RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT and torchrun's
// TORCHELASTIC_* variables; without WORLD_SIZE, SLURM's (srun): SLURM_NTASKS,
// SLURM_PROCID, SLURM_LOCALID, MASTER_ADDR or else the first host of
// SLURM_JOB_NODELIST (a range expanded by `scontrol show hostnames`), MASTER_PORT
// or else 29500. Otherwise (or with one process) a single process. Throws
// std::runtime_error naming the variable when one is malformed or missing.
DistributedEnv distributed_env_from_environment();

// Whether this build can create a process group for `device` ("cpu": Gloo,
// "cuda...": NCCL); when not, `why` says what is missing.
bool distributed_available(const std::string& device, std::string* why = nullptr);

// The local address this host reaches `peer` from (the source address of the
// route to it): what Gloo binds to off loopback, since the host name may
// resolve to 127.0.0.1 (Debian's /etc/hosts) or be shared by several hosts.
// Throws std::runtime_error naming `peer` when there is no route.
std::string local_address_towards(const std::string& peer);

// This host's name, for messages that say which rank on which host failed.
std::string distributed_host_name();

// What a collective throws when a peer died or did not answer in time (a host
// lost, the network cut): the run stops "interrupted", to be resumed, not "failed".
struct DistributedPeerLost : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A process group: rank 0 hosts the TCP rendezvous store on MASTER_ADDR:MASTER_PORT
// (under torchrun, its agent does).
// Every collective fails (throws std::runtime_error) instead of hanging when a
// peer dies or does not answer within `timeout`.
class ProcessGroup {
 public:
  ProcessGroup(const DistributedEnv& env, std::chrono::milliseconds timeout, const std::string& device);
  ~ProcessGroup();  // rank 0 logs the median time of the gradients' all-reduce
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const;
  int size() const;
  void all_reduce_sum(at::Tensor& tensor);   // in place
  void all_reduce_max(at::Tensor& tensor);   // in place
  void broadcast(at::Tensor& tensor, int root = 0);  // in place
  // Every rank's tensor (same shape and type everywhere), in rank order.
  std::vector<at::Tensor> all_gather(const at::Tensor& tensor);
  void barrier();
  // Rendezvous-store flags: rank 0 announces a step that others wait for
  // (e.g. the generated dataset), with its own timeout.
  void set_flag(const std::string& key);
  void wait_flag(const std::string& key, std::chrono::milliseconds timeout);

 private:
  // It times its collective; the group logs the median on rank 0 when it ends.
  friend std::vector<double> all_reduce_gradients(ProcessGroup& group, const std::vector<at::Tensor>& params,
                                                  const std::vector<double>& extra);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Sums the gradients of `params` over the group in one flattened all-reduce
// (gradients that no rank produced stay undefined) and appends `extra`
// scalars to the same message; returns the summed extras.
std::vector<double> all_reduce_gradients(ProcessGroup& group, const std::vector<at::Tensor>& params,
                                         const std::vector<double>& extra);

}  // namespace expnet

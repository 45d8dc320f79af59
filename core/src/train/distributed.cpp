// c10d process groups for data-parallel training (see expnet/train/distributed.h).
// Debian's LibTorch 1.13 ships c10d with Gloo in libtorch_cpu; the headers only
// declare it under USE_C10D_GLOO (set for this file in core/CMakeLists.txt when
// the Gloo headers exist). CUDA builds add NCCL when its header is there.
#include "expnet/train/distributed.h"

#include <torch/torch.h>
#include <torch/version.h>

#if defined(EXPNET_HAVE_GLOO)
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#if defined(EXPNET_HAVE_GLOO) || defined(EXPNET_HAVE_NCCL)
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#endif
#if defined(EXPNET_HAVE_NCCL)
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <stdexcept>

#include <spdlog/spdlog.h>

#include "system/child_process.h"

namespace expnet {

namespace {

int env_int(const char* name, int fallback, bool required) {
  const char* value = std::getenv(name);
  if (!value || !*value) {
    if (required) throw std::runtime_error(std::string("distributed launch: ") + name + " is not set (torchrun sets RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT; or use expnet train --nproc N)");
    return fallback;
  }
  char* end = nullptr;
  const long parsed = std::strtol(value, &end, 10);
  if (*end || parsed < 0 || parsed > 1000000)
    throw std::runtime_error(std::string("distributed launch: ") + name + "='" + value + "' is not a non-negative integer");
  return static_cast<int>(parsed);
}


// The first host of a SLURM node list: "a,b" is read here; a range ("gpu[01-04]")
// is expanded by SLURM's own `scontrol show hostnames`.
std::string first_slurm_host(const std::string& list) {
  if (list.find('[') == std::string::npos) return list.substr(0, list.find(','));
  std::string out;
  ChildResult result;
  try {
    result = run_child({"scontrol", "show", "hostnames", list}, "", 30, [&](const char* data, size_t size) { out.append(data, size); },
                       "");
  } catch (const std::exception&) {
    throw std::runtime_error("distributed launch: SLURM_JOB_NODELIST '" + list + "' is a range and `scontrol` is not on the "
                             "PATH to expand it: set MASTER_ADDR to the first host of the job");
  }
  const std::string first = out.substr(0, out.find('\n'));
  if (result.status != 0 || first.empty())
    throw std::runtime_error("distributed launch: `scontrol show hostnames " + list + "` failed (status " +
                             std::to_string(result.status) + "): " + result.err + "; set MASTER_ADDR to the first host");
  return first;
}

// srun: SLURM's variables when torchrun's are absent.
bool slurm_env(DistributedEnv& env) {
  if (std::getenv("WORLD_SIZE") || env_int("SLURM_NTASKS", 1, false) <= 1) return false;
  env.world_size = env_int("SLURM_NTASKS", 1, true);
  env.rank = env_int("SLURM_PROCID", 0, true);
  env.local_rank = env_int("SLURM_LOCALID", 0, false);
  env.master_port = env_int("MASTER_PORT", 29500, false);
  if (const char* addr = std::getenv("MASTER_ADDR"); addr && *addr) {
    env.master_addr = addr;
  } else {
    const char* list = std::getenv("SLURM_JOB_NODELIST");
    if (!list || !*list) list = std::getenv("SLURM_NODELIST");
    if (!list || !*list) throw std::runtime_error("distributed launch: SLURM_NTASKS is set but not SLURM_JOB_NODELIST: set MASTER_ADDR");
    env.master_addr = first_slurm_host(list);
  }
  return true;
}

}  // namespace

std::string distributed_host_name() {
  char name[256] = {};
  return ::gethostname(name, sizeof name - 1) == 0 ? name : "?";
}

DistributedEnv distributed_env_from_environment() {
  DistributedEnv env;
  if (slurm_env(env)) return env;
  env.world_size = std::max(1, env_int("WORLD_SIZE", 1, false));
  if (env.world_size == 1) return env;
  env.rank = env_int("RANK", 0, true);
  env.local_rank = env_int("LOCAL_RANK", env.rank, false);
  env.master_port = env_int("MASTER_PORT", 0, true);
  if (const char* addr = std::getenv("MASTER_ADDR"); addr && *addr) env.master_addr = addr;
  else throw std::runtime_error("distributed launch: MASTER_ADDR is not set (the address of rank 0)");
  if (env.rank >= env.world_size)
    throw std::runtime_error("distributed launch: RANK " + std::to_string(env.rank) + " is not below WORLD_SIZE " +
                             std::to_string(env.world_size));
  if (env.master_port < 1 || env.master_port > 65535)
    throw std::runtime_error("distributed launch: MASTER_PORT " + std::to_string(env.master_port) + " is not a TCP port");
  const char* agent = std::getenv("TORCHELASTIC_USE_AGENT_STORE");
  env.agent_store = agent && std::string(agent) == "True";
  env.restart_count = env_int("TORCHELASTIC_RESTART_COUNT", 0, false);
  if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname) env.gloo_ifname = ifname;
  return env;
}

std::string local_address_towards(const std::string& peer) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(peer.c_str(), "9", &hints, &found); rc != 0)
    throw std::runtime_error("distributed launch: cannot resolve MASTER_ADDR '" + peer + "': " + ::gai_strerror(rc));
  std::string address;
  for (addrinfo* a = found; a && address.empty(); a = a->ai_next) {
    const int fd = ::socket(a->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    sockaddr_storage local{};
    socklen_t size = sizeof local;
    // A UDP connect sends nothing: it only picks the route and with it the source address.
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0 && ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &size) == 0) {
      char text[INET6_ADDRSTRLEN] = {};
      const void* raw = local.ss_family == AF_INET ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&local)->sin_addr)
                                                   : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&local)->sin6_addr);
      if (::inet_ntop(local.ss_family, raw, text, sizeof text)) address = text;
    }
    ::close(fd);
  }
  ::freeaddrinfo(found);
  if (address.empty()) throw std::runtime_error("distributed launch: no route from this host to MASTER_ADDR '" + peer + "'");
  return address;
}

bool distributed_available(const std::string& device, std::string* why) {
  const bool cuda = device.rfind("cuda", 0) == 0;
#if defined(EXPNET_HAVE_NCCL)
  if (cuda) return true;
#endif
#if defined(EXPNET_HAVE_GLOO)
  if (!cuda) return true;
#endif
  if (why)
    *why = cuda ? "this build has no NCCL process group (needs a CUDA LibTorch with c10d NCCL and nccl.h); train on --device cpu for Gloo"
                : "this LibTorch has no c10d Gloo process group (headers torch/csrc/distributed/c10d and gloo/ missing at build time)";
  return false;
}

struct ProcessGroup::Impl {
  int rank = 0, size = 1;
  c10::intrusive_ptr<c10d::Store> store;
  // LibTorch 2 made Gloo and NCCL backends of a c10d::ProcessGroup, with the same collectives.
#if TORCH_VERSION_MAJOR >= 2
  c10::intrusive_ptr<c10d::Backend> group;
#else
  c10::intrusive_ptr<c10d::ProcessGroup> group;
#endif
  std::chrono::milliseconds timeout{60000};
  std::vector<double> gradient_reduce_ms;  // each all_reduce_gradients' collective, to its result on the CPU
  int64_t gradient_reduce_bytes = 0;

  // c10d reports a dead or silent peer by throwing from wait(); say what it means.
  template <typename F>
  void run(const char* what, F&& f) {
    try {
      f()->wait();
    } catch (const std::exception& e) {
      throw DistributedPeerLost("distributed rank " + std::to_string(rank) + " (host " + distributed_host_name() +
                                "): " + what + " failed; another rank died, its host was lost or did not answer within " +
                                std::to_string(timeout.count() / 1000) + " s (dist_timeout in the config, or --dist-timeout). " + e.what());
    }
  }
};

ProcessGroup::ProcessGroup(const DistributedEnv& env, std::chrono::milliseconds timeout, const std::string& device)
    : impl_(std::make_unique<Impl>()) {
  std::string why;
  if (!distributed_available(device, &why)) throw std::runtime_error("distributed training: " + why);
  impl_->rank = env.rank;
  impl_->size = env.world_size;
  impl_->timeout = timeout;
#if defined(EXPNET_HAVE_GLOO) || defined(EXPNET_HAVE_NCCL)
  try {
    c10d::TCPStoreOptions so;
    so.port = static_cast<uint16_t>(env.master_port);
    so.isServer = env.rank == 0 && !env.agent_store;
    so.numWorkers = env.world_size;
    so.waitWorkers = false;
    so.timeout = timeout;
    impl_->store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, so);
    // Each restart of a torchrun worker group gets fresh keys in the agent's store.
    if (env.agent_store)
      impl_->store = c10::make_intrusive<c10d::PrefixStore>("/worker/attempt_" + std::to_string(env.restart_count), impl_->store);
  } catch (const std::exception& e) {
    throw std::runtime_error("distributed rank " + std::to_string(env.rank) + ": cannot reach the rendezvous store at " +
                             env.master_addr + ":" + std::to_string(env.master_port) + " within " +
                             std::to_string(timeout.count() / 1000) + " s (is rank 0 running? is the port free?): " + e.what());
  }
  try {
#if defined(EXPNET_HAVE_NCCL)
    if (device.rfind("cuda", 0) == 0) {
      // Without async error handling a dead peer leaves NCCL kernels waiting forever.
      setenv("NCCL_ASYNC_ERROR_HANDLING", "1", 0);
      auto options = c10d::ProcessGroupNCCL::Options::create();
      options->timeout = timeout;
      impl_->group = c10::make_intrusive<c10d::ProcessGroupNCCL>(impl_->store, env.rank, env.world_size, options);
      return;
    }
#endif
#if defined(EXPNET_HAVE_GLOO)
    auto options = c10d::ProcessGroupGloo::Options::create(timeout);
    // GLOO_SOCKET_IFNAME when set; else the address this host reaches rank 0's from
    // (127.0.0.1 for the --nproc launcher), never what the host name resolves to.
    options->devices.push_back(env.gloo_ifname.empty()
                                   ? c10d::ProcessGroupGloo::createDeviceForHostname(local_address_towards(env.master_addr))
                                   : c10d::ProcessGroupGloo::createDeviceForInterface(env.gloo_ifname));
    impl_->group = c10::make_intrusive<c10d::ProcessGroupGloo>(impl_->store, env.rank, env.world_size, options);
#endif
  } catch (const std::runtime_error&) {
    throw;
  } catch (const std::exception& e) {
    throw std::runtime_error("distributed rank " + std::to_string(env.rank) + ": creating the process group failed: " + e.what());
  }
#endif
}

ProcessGroup::~ProcessGroup() {
  // How much of a step the gradients' all-reduce is (docs/distributed.md, "Figures").
  auto& ms = impl_->gradient_reduce_ms;
  if (impl_->rank != 0 || ms.empty()) return;
  std::sort(ms.begin(), ms.end());
  spdlog::info("distributed: the gradients' all-reduce ({:.1f} MB) took a median {:.1f} ms over {} steps (waiting for "
               "the slowest rank included)",
               static_cast<double>(impl_->gradient_reduce_bytes) / 1e6, ms[ms.size() / 2], ms.size());
}

int ProcessGroup::rank() const { return impl_->rank; }
int ProcessGroup::size() const { return impl_->size; }

void ProcessGroup::all_reduce_sum(at::Tensor& tensor) {
  std::vector<at::Tensor> v{tensor};
  impl_->run("all-reduce", [&] { return impl_->group->allreduce(v); });
}

void ProcessGroup::all_reduce_max(at::Tensor& tensor) {
  std::vector<at::Tensor> v{tensor};
  c10d::AllreduceOptions options;
  options.reduceOp = c10d::ReduceOp::MAX;
  impl_->run("all-reduce", [&] { return impl_->group->allreduce(v, options); });
}

void ProcessGroup::broadcast(at::Tensor& tensor, int root) {
  std::vector<at::Tensor> v{tensor};
  c10d::BroadcastOptions options;
  options.rootRank = root;
  impl_->run("broadcast", [&] { return impl_->group->broadcast(v, options); });
}

std::vector<at::Tensor> ProcessGroup::all_gather(const at::Tensor& tensor) {
  std::vector<at::Tensor> input{tensor.contiguous()};
  std::vector<std::vector<at::Tensor>> output(1);
  for (int r = 0; r < impl_->size; ++r) output[0].push_back(torch::empty_like(input[0]));
  impl_->run("all-gather", [&] { return impl_->group->allgather(output, input); });
  return output[0];
}

void ProcessGroup::barrier() {
  impl_->run("barrier", [&] { return impl_->group->barrier(); });
}

void ProcessGroup::set_flag(const std::string& key) { impl_->store->set("expnet/" + key, std::vector<uint8_t>{1}); }

void ProcessGroup::wait_flag(const std::string& key, std::chrono::milliseconds timeout) {
  try {
    impl_->store->wait({"expnet/" + key}, timeout);
  } catch (const std::exception& e) {
    throw std::runtime_error("distributed rank " + std::to_string(impl_->rank) + ": rank 0 did not finish '" + key +
                             "' in time (it may have failed; see its log): " + e.what());
  }
}

std::vector<double> all_reduce_gradients(ProcessGroup& group, const std::vector<at::Tensor>& params,
                                         const std::vector<double>& extra) {
  // One message: [grads..., one "defined" flag per parameter, extras]. A
  // gradient is undefined on a rank that never used the parameter; it stays
  // undefined only when no rank used it (as a single process would see it).
  int64_t numel = 0;
  for (const auto& p : params) numel += p.numel();
  const auto device = params.empty() ? torch::Device(torch::kCPU) : params.front().device();
  const int64_t tail_size = static_cast<int64_t>(params.size() + extra.size());
  auto tail_cpu = torch::zeros({tail_size}, torch::kFloat);
  float* tail_in = tail_cpu.data_ptr<float>();
  std::vector<at::Tensor> pieces;
  for (size_t i = 0; i < params.size(); ++i) {
    const auto& g = params[i].grad();
    tail_in[i] = g.defined() ? 1.0f : 0.0f;
    pieces.push_back(g.defined() ? g.reshape({-1}).to(torch::kFloat) : torch::zeros({params[i].numel()}, params[i].options().dtype(torch::kFloat)));
  }
  for (size_t k = 0; k < extra.size(); ++k) tail_in[params.size() + k] = static_cast<float>(extra[k]);
  pieces.push_back(tail_cpu.to(device));
  auto flat = torch::cat(pieces);
  const int64_t flags = numel;
  const auto began = std::chrono::steady_clock::now();
  group.all_reduce_sum(flat);
  const auto flat_cpu = flat.narrow(0, flags, tail_size).to(torch::kCPU);  // on CUDA: waits for the collective
  group.impl_->gradient_reduce_ms.push_back(
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - began).count());
  group.impl_->gradient_reduce_bytes = flat.numel() * static_cast<int64_t>(flat.element_size());
  const float* tail = flat_cpu.data_ptr<float>();
  int64_t offset = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    auto p = params[i];
    const int64_t n = p.numel();
    if (tail[i] > 0) {
      auto summed = flat.narrow(0, offset, n).view(p.sizes()).to(p.scalar_type());
      if (p.grad().defined()) p.mutable_grad().copy_(summed);
      else p.mutable_grad() = summed.clone();
    }
    offset += n;
  }
  std::vector<double> out;
  for (size_t k = 0; k < extra.size(); ++k) out.push_back(tail[params.size() + k]);
  return out;
}

}  // namespace expnet

// The local launcher of `expnet train --nproc N` (see expnet/train/launch.h).
#include "expnet/train/launch.h"

#include <spdlog/spdlog.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstring>
#include <stdexcept>
#include <thread>

namespace expnet {

namespace {

std::atomic<int> g_forward_signal{0};
extern "C" void remember_signal(int sig) { g_forward_signal = sig; }

int exit_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

pid_t spawn(const LaunchOptions& o, int rank, int port) {
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("expnet train --nproc: fork failed: ") + std::strerror(errno));
  if (pid > 0) return pid;
  // Child: die with the launcher, whatever kills it.
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  std::signal(SIGXFSZ, SIG_IGN);  // a rank's write past `ulimit -f` fails with EFBIG and is reported
  setenv("RANK", std::to_string(rank).c_str(), 1);
  setenv("LOCAL_RANK", std::to_string(rank).c_str(), 1);
  setenv("WORLD_SIZE", std::to_string(o.nproc).c_str(), 1);
  setenv("LOCAL_WORLD_SIZE", std::to_string(o.nproc).c_str(), 1);
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
  const std::string program = o.program.empty() ? "/proc/self/exe" : o.program;
  std::vector<std::string> args{program};
  args.insert(args.end(), o.child_args.begin(), o.child_args.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  execv(program.c_str(), argv.data());
  std::fprintf(stderr, "error: expnet train --nproc: cannot start %s: %s\n", program.c_str(), std::strerror(errno));
  _exit(127);
}

}  // namespace

int free_loopback_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("expnet train --nproc: cannot open a socket to find a free port");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(fd);
    throw std::runtime_error("expnet train --nproc: cannot bind a loopback port");
  }
  const int port = ntohs(addr.sin_port);
  close(fd);
  return port;
}

int launch_local(const LaunchOptions& o) {
  if (o.nproc < 1) throw std::runtime_error("expnet train --nproc: N must be at least 1");
  const int port = free_loopback_port();
  g_forward_signal = 0;
  auto old_int = std::signal(SIGINT, remember_signal);
  auto old_term = std::signal(SIGTERM, remember_signal);
  std::vector<pid_t> children;
  for (int r = 0; r < o.nproc; ++r) children.push_back(spawn(o, r, port));
  spdlog::info("launched {} ranks on 127.0.0.1:{}", o.nproc, port);

  std::vector<bool> done(children.size(), false);
  size_t running = children.size();
  int result = 0;
  int failed_rank = -1;
  auto stop_deadline = std::chrono::steady_clock::time_point::max();
  while (running > 0) {
    if (const int sig = g_forward_signal.exchange(0))
      for (size_t r = 0; r < children.size(); ++r)
        if (!done[r]) kill(children[r], sig);
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      for (size_t r = 0; r < children.size(); ++r) {
        if (children[r] != pid || done[r]) continue;
        done[r] = true;
        --running;
        const int code = exit_status(status);
        if (code != 0 && failed_rank < 0) {
          failed_rank = static_cast<int>(r);
          result = code;
          spdlog::error("rank {} failed (exit status {}); stopping the other ranks", r, code);
          for (size_t k = 0; k < children.size(); ++k)
            if (!done[k]) kill(children[k], SIGTERM);
          stop_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(o.grace_seconds);
        }
      }
      continue;
    }
    if (std::chrono::steady_clock::now() > stop_deadline) {
      for (size_t k = 0; k < children.size(); ++k)
        if (!done[k]) kill(children[k], SIGKILL);
      stop_deadline = std::chrono::steady_clock::time_point::max();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::signal(SIGINT, old_int);
  std::signal(SIGTERM, old_term);
  return result;
}

}  // namespace expnet

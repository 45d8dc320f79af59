#include "system/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>

extern char** environ;

namespace expnet {

namespace {

struct Pipe {
  int fd[2] = {-1, -1};
  Pipe() {
    if (::pipe2(fd, O_CLOEXEC) != 0) throw std::runtime_error(std::string("cannot make a pipe: ") + std::strerror(errno));
  }
  ~Pipe() {
    for (int& f : fd)
      if (f >= 0) ::close(f);
  }
  void close_end(int i) {
    if (fd[i] >= 0) ::close(fd[i]);
    fd[i] = -1;
  }
};

// Starts argv[0] (searched on PATH) with its stdin, stdout and stderr on pipes.
pid_t spawn_with_pipes(const std::vector<std::string>& args, Pipe& in, Pipe& out, Pipe& err, const std::string& missing_hint) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in.fd[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out.fd[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err.fd[1], STDERR_FILENO);
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0)
    throw std::runtime_error("cannot start " + args.front() + " (" + std::strerror(rc) + "): " + missing_hint);
  in.close_end(0);
  out.close_end(1);
  err.close_end(1);
  return pid;
}

void write_all(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the child ended early: its status and stderr say why
    done += static_cast<size_t>(n);
  }
}

}  // namespace

ChildResult run_child(const std::vector<std::string>& argv, const std::string& input, int timeout_s,
                      const std::function<void(const char* data, size_t size)>& on_bytes, const std::string& missing_hint) {
  Pipe in, out, err;
  const pid_t pid = spawn_with_pipes(argv, in, out, err, missing_hint);
  struct sigaction ignore {}, previous {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, &previous);  // it may end before reading its input
  write_all(in.fd[1], input);
  ::sigaction(SIGPIPE, &previous, nullptr);
  in.close_end(1);
  ChildResult result;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  bool timed_out = false;
  try {
    while (out.fd[0] >= 0 || err.fd[0] >= 0) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        timed_out = true;
        ::kill(pid, SIGKILL);
        break;
      }
      pollfd fds[2] = {{out.fd[0], POLLIN, 0}, {err.fd[0], POLLIN, 0}};
      if (::poll(fds, 2, static_cast<int>(std::min<int64_t>(left.count(), 1000))) < 0 && errno != EINTR) break;
      char buffer[65536];
      for (int i = 0; i < 2; ++i) {
        Pipe& p = i == 0 ? out : err;
        if (p.fd[0] < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        const ssize_t n = ::read(p.fd[0], buffer, sizeof buffer);
        if (n <= 0) {
          if (n < 0 && errno == EINTR) continue;
          p.close_end(0);
          continue;
        }
        if (i == 0)
          on_bytes(buffer, static_cast<size_t>(n));
        else if (result.err.size() < (1u << 20))  // its messages; never unbounded
          result.err.append(buffer, static_cast<size_t>(n));
      }
    }
  } catch (...) {  // a callback refused what came: the child ends with it, never left behind
    ::kill(pid, SIGKILL);
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    throw;
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.status = timed_out ? -1 : WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

}  // namespace expnet

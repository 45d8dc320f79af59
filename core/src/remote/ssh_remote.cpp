#include "expnet/remote/ssh_remote.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>
#include <iostream>
#include <stdexcept>

#include "expnet/system/atomic_file.h"
#include "system/child_process.h"

namespace expnet {

using nlohmann::json;
namespace fs = std::filesystem;

std::string RemoteRequest::to_json() const {
  json files_json = json::array();
  for (const auto& file : files) files_json.push_back({{"path", file.path}, {"text", file.text}});
  return json({{"format", "expnet-remote"}, {"version", kRemoteRequestVersion}, {"argv", argv}, {"cwd", cwd},
               {"files", std::move(files_json)}, {"detach", detach}, {"log", log}, {"settle_s", settle_s}})
      .dump();
}

RemoteRequest RemoteRequest::from_json(const std::string& line) {
  json doc;
  try {
    doc = json::parse(line);
  } catch (const json::exception& e) {
    throw std::runtime_error(std::string("expnet remote: the request is not JSON (") + e.what() +
                             "); it is sent by `expnet ... --host` or the studio, not typed");
  }
  if (!doc.is_object() || doc.value("format", "") != "expnet-remote")
    throw std::runtime_error("expnet remote: not a request of expnet's (no \"format\": \"expnet-remote\")");
  const int version = doc.value("version", 0);
  if (version != kRemoteRequestVersion)
    throw std::runtime_error("expnet remote: this host's expnet (" EXPNET_VERSION ") reads requests of version " +
                             std::to_string(kRemoteRequestVersion) + ", and this one is of version " +
                             std::to_string(version) + ": install the same expnet version on both machines");
  RemoteRequest request;
  try {
    request.argv = doc.at("argv").get<std::vector<std::string>>();
    request.cwd = doc.value("cwd", "");
    request.detach = doc.value("detach", false);
    request.log = doc.value("log", "");
    request.settle_s = std::min(60.0, std::max(0.0, doc.value("settle_s", 0.0)));
    for (const auto& file : doc.value("files", json::array()))
      request.files.push_back({file.at("path").get<std::string>(), file.at("text").get<std::string>()});
  } catch (const json::exception& e) {
    throw std::runtime_error(std::string("expnet remote: a malformed request (") + e.what() + ")");
  }
  if (request.argv.empty() || request.argv.front() == "remote")
    throw std::runtime_error("expnet remote: the request names no expnet command to run");
  return request;
}

std::vector<std::string> ssh_argv(const Host& host, int timeout_s) {
  check_host(host);
  const int alive = std::max(1, timeout_s / 3);
  std::vector<std::string> argv{"ssh",
                                "-o", "BatchMode=yes",  // never a password or passphrase prompt: keys and agent only
                                "-o", "ConnectTimeout=" + std::to_string(timeout_s),
                                "-o", "ServerAliveInterval=" + std::to_string(alive),
                                "-o", "ServerAliveCountMax=3"};
  argv.insert(argv.end(), host.ssh_options.begin(), host.ssh_options.end());
  argv.insert(argv.end(), {"--", host.destination, host.program, "remote"});
  return argv;
}

RemoteResult run_remote(const Host& host, const RemoteRequest& request, int timeout_s,
                        const std::function<void(const std::string& line)>& on_line) {
  std::string out, pending;
  RemoteResult result = run_remote_bytes(host, request, timeout_s, [&](const char* data, size_t size) {
    if (!on_line) {  // kept whole only when nobody takes the lines: a follow lasts for days
      out.append(data, size);
      return;
    }
    pending.append(data, size);
    for (size_t end; (end = pending.find('\n')) != std::string::npos; pending.erase(0, end + 1)) on_line(pending.substr(0, end));
  });
  result.out = std::move(out);
  return result;
}

RemoteResult run_remote_bytes(const Host& host, const RemoteRequest& request, int timeout_s,
                              const std::function<void(const char* data, size_t size)>& on_bytes) {
  const ChildResult child = run_child(ssh_argv(host, std::min(timeout_s, 10)), request.to_json() + "\n", timeout_s, on_bytes,
                                      "install OpenSSH's client (apt install openssh-client)");
  RemoteResult result;
  result.status = child.status;
  result.err = child.err;
  return result;
}

std::string explain_remote_failure(const Host& host, const RemoteResult& result, int timeout_s) {
  const std::string who = "host '" + host.name + "' (" + host.destination + ")";
  const std::string& err = result.err;
  const auto has = [&](const char* words) { return err.find(words) != std::string::npos; };
  std::string said = err;
  while (!said.empty() && (said.back() == '\n' || said.back() == '\r')) said.pop_back();
  if (const size_t last = said.rfind('\n'); last != std::string::npos && said.size() > 400) said = said.substr(last + 1);
  if (said.rfind("ssh: ", 0) == 0) said = said.substr(5);
  const std::string ssh_says = said.empty() ? std::string() : " (ssh: " + said + ")";
  if (result.status < 0)
    return who + " did not answer within " + std::to_string(timeout_s) + " s" + ssh_says +
           "; check that it is up and reachable (ssh " + host.destination + ")";
  if (result.status == 255) {  // ssh's own failures; a remote command's status passes through otherwise
    if (has("REMOTE HOST IDENTIFICATION HAS CHANGED") || has("Host key verification failed") || has("host key for"))
      return who + ": its host key is unknown or has changed, so ssh refused it" + ssh_says +
             "; check the key with the host's owner and accept it with ssh itself: run `ssh " + host.destination +
             "` in a terminal (after `ssh-keygen -R` for a key that changed on purpose)";
    if (has("Permission denied"))
      return who + " refused the login" + ssh_says + "; add your key there (ssh-copy-id " + host.destination +
             ") or load it in your agent (ssh-add)";
    return "cannot reach " + who + ssh_says + "; check the name, the network and that sshd runs there";
  }
  if (result.status == 127 || has("command not found"))
    return who + " has no `" + host.program + "`" + ssh_says +
           "; install expnet there (docs/remote.md) or give its absolute path: expnet hosts add " + host.name +
           " --destination " + host.destination + " --program /path/to/expnet";
  if (said.rfind("error: ", 0) == 0) said = said.substr(7);
  return who + ": " + (said.empty() ? "the command failed (status " + std::to_string(result.status) + ")" : said);
}

namespace {

std::string read_request_line(int fd) {
  std::string line;
  char c = 0;
  while (true) {
    const ssize_t n = ::read(fd, &c, 1);  // byte by byte: nothing after the line is taken from the command
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || c == '\n') break;
    line.push_back(c);
    if (line.size() > (16u << 20)) throw std::runtime_error("expnet remote: a request of more than 16 MiB");
  }
  if (line.empty()) throw std::runtime_error("expnet remote: no request on stdin (it is sent by `expnet ... --host`)");
  return line;
}

std::string read_text_tail(const std::string& path, size_t bytes) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  const auto size = static_cast<size_t>(std::max<std::streamoff>(0, in.tellg()));
  in.seekg(static_cast<std::streamoff>(size > bytes ? size - bytes : 0));
  return std::string(std::istreambuf_iterator<char>(in), {});
}

fs::path expand_home(const std::string& folder) {
  const char* home = std::getenv("HOME");
  if (folder == "~") return home ? home : "/";
  if (folder.rfind("~/", 0) == 0) return fs::path(home ? home : "/") / folder.substr(2);
  return folder;
}

fs::path inside(const fs::path& folder, const std::string& relative) {
  const fs::path path(relative);
  if (relative.empty() || path.is_absolute())
    throw std::runtime_error("expnet remote: a file path must be relative to the request's folder, not '" + relative + "'");
  for (const auto& part : path)
    if (part == "..") throw std::runtime_error("expnet remote: a file path must stay inside its folder, not '" + relative + "'");
  return folder / path;
}

// Built before any fork: after it, only async-signal-safe calls until exec.
std::vector<char*> self_argv(const std::vector<std::string>& args) {
  std::vector<char*> argv{const_cast<char*>("expnet")};
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  return argv;
}

[[noreturn]] void exec_self(const std::vector<char*>& argv) {
  ::execv("/proc/self/exe", argv.data());
  static const char kFailed[] = "error: expnet remote: cannot run expnet\n";
  (void)!::write(STDERR_FILENO, kFailed, sizeof kFailed - 1);
  ::_exit(127);
}

}  // namespace

int serve_remote_request(int in_fd) {
  const RemoteRequest request = RemoteRequest::from_json(read_request_line(in_fd));
  const fs::path folder = expand_home(request.cwd.empty() ? "~" : request.cwd);
  std::error_code error;
  fs::create_directories(folder, error);
  if (::chdir(folder.c_str()) != 0)
    throw std::runtime_error("expnet remote: cannot enter the folder '" + folder.string() + "' (" + std::strerror(errno) + ")");
  for (const auto& file : request.files) {
    const fs::path path = inside(folder, file.path);
    fs::create_directories(path.parent_path(), error);
    write_file_atomic(path.string(), file.text);
  }
  const std::vector<char*> argv = self_argv(request.argv);
  if (!request.detach) exec_self(argv);
  const fs::path log = !request.log.empty() && fs::path(request.log).is_absolute()
                          ? fs::path(request.log)
                          : inside(folder, request.log.empty() ? "expnet-remote.log" : request.log);
  fs::create_directories(log.parent_path(), error);
  const int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (null < 0 || out < 0)
    throw std::runtime_error("expnet remote: cannot write the log '" + log.string() + "' (" + std::strerror(errno) + ")");
  const pid_t worker = ::fork();
  if (worker == 0) {
    ::setsid();  // its own session: the SIGHUP of a dropped connection never reaches it
    ::dup2(null, STDIN_FILENO);
    ::dup2(out, STDOUT_FILENO);
    ::dup2(out, STDERR_FILENO);
    exec_self(argv);
  }
  ::close(null);
  ::close(out);
  if (worker < 0) throw std::runtime_error(std::string("expnet remote: cannot start the command (") + std::strerror(errno) + ")");
  json report = {{"pid", worker}, {"log", log.string()}, {"cwd", folder.string()}};
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(request.settle_s);
  int status = 0;
  while (std::chrono::steady_clock::now() < until) {
    if (::waitpid(worker, &status, WNOHANG) == worker) {
      std::string tail;
      try {
        tail = read_text_tail(log.string(), 2000);
      } catch (const std::exception&) {
      }
      report.update({{"ended", true}, {"status", WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)},
                     {"log_tail", tail}});
      std::cout << report.dump() << std::endl;
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::cout << report.dump() << std::endl;  // it goes on, a child of init once we exit
  return 0;
}

}  // namespace expnet

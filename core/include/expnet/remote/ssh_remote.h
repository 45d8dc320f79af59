// Running expnet on a host over the user's OpenSSH (docs/remote.md, "What
// crosses the wire"). The only words a remote shell sees are the host's program
// and "remote" (check_host keeps the program one plain word); the command's
// arguments, folder and files travel as one JSON line on ssh's stdin, which
// `expnet remote` on the host reads and runs without a shell. No Qt, no LibTorch.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "expnet/remote/hosts.h"

namespace expnet {

inline constexpr int kRemoteRequestVersion = 1;

struct RemoteFile {
  std::string path;  // relative to the request's folder
  std::string text;
};

struct RemoteRequest {
  std::vector<std::string> argv;  // expnet's arguments, e.g. {"runs", "follow", "--store", "..."}
  std::string cwd;                // the folder it runs in ("~/" is the home); created when missing
  std::vector<RemoteFile> files;  // written (atomically) before it starts, e.g. a run's config
  bool detach = false;            // started in its own session, surviving the connection; stdout/err to `log`
  std::string log;                // relative to cwd, or absolute
  double settle_s = 0;            // detached: watched this long; ending in it is a failure, with the log's tail
  std::string to_json() const;
  // Throws std::runtime_error naming what is wrong; another version names both.
  static RemoteRequest from_json(const std::string& line);
};

// ssh's argument list: ssh, our options (BatchMode; ConnectTimeout and
// ServerAlive so a dead link is noticed within `timeout_s`; host key checking
// as the user's config says), the host's own options, "--", the destination,
// the program and "remote".
std::vector<std::string> ssh_argv(const Host& host, int timeout_s = 10);

struct RemoteResult {
  int status = -1;  // ssh's exit status (255: ssh itself failed), or -1 when it did not end in time
  std::string out, err;
};

// Runs `request` on the host and waits at most `timeout_s` (then ssh is killed).
// `on_line`, when given, gets each line of its stdout as it comes (and
// `result.out` stays empty); otherwise `result.out` holds it all.
RemoteResult run_remote(const Host& host, const RemoteRequest& request, int timeout_s,
                        const std::function<void(const std::string& line)>& on_line = {});
// The same with its stdout handed to `on_bytes` as it comes, never kept (a
// checkpoint of a gigabyte); `result.out` stays empty.
RemoteResult run_remote_bytes(const Host& host, const RemoteRequest& request, int timeout_s,
                              const std::function<void(const char* data, size_t size)>& on_bytes);

// One sentence for a failed run_remote: the host, what went wrong (host key
// unknown or changed, unreachable, login refused, no expnet there, ...) and what
// to do, with ssh's own words where they matter. Never suggests turning off
// host key checking.
std::string explain_remote_failure(const Host& host, const RemoteResult& result, int timeout_s);

// The host side (`expnet remote`): reads one request line from `in_fd`, writes
// its files, and runs expnet (this executable) with its arguments: in place
// (this process becomes it), or detached (prints {"pid": N, "log": ...} and
// returns 0 once it has run `settle_s` seconds; 1 with {"ended": true, "status",
// "log_tail"} when it ended before).
// Throws std::runtime_error naming what is wrong with the request.
int serve_remote_request(int in_fd);

}  // namespace expnet

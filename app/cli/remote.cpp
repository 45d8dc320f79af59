// expnet remote: the host side of `expnet ... --host` and the studio's remote
// runs (expnet/remote/ssh_remote.h): reads one JSON request on stdin and runs it
// without a shell. Not for typing: ssh starts it.
#include <unistd.h>

#include "command.h"
#include "expnet/remote/ssh_remote.h"

namespace expnet::cli {
namespace {

struct RemoteArgs {};

const bool registered = register_command({"remote", 95, [](CLI::App& root) {
  auto [command, args] = add_command<RemoteArgs>(
      &root, "remote", "Run one request from stdin (what `expnet ... --host` and the studio send over ssh)",
      [](const RemoteArgs&) { set_exit_code(serve_remote_request(STDIN_FILENO)); });
  command->group("");  // not listed in --help: ssh starts it
  (void)args;
}});

}  // namespace
}  // namespace expnet::cli

// Remote hosts (docs/remote.md): machines the studio and `expnet ... --host`
// reach with the user's own OpenSSH. Kept in $XDG_CONFIG_HOME/expnet/hosts.json,
// which the CLI and the studio both read and write. No Qt, no LibTorch.
#pragma once

#include <string>
#include <vector>

namespace expnet {

struct Host {
  std::string name;         // what --host and the studio call it
  std::string destination;  // what ssh connects to: user@gpu1, or an alias of ~/.ssh/config
  std::string program = "expnet";    // the engine there: a name on its PATH, or an absolute path
  std::string work_dir = "~/expnet";  // where runs go there ("~/" is its home)
  std::vector<std::string> ssh_options;  // extra ssh arguments, e.g. {"-F", "/path/ssh_config"}
};

// config_dir()/hosts.json.
std::string hosts_file_path();

// The hosts of `path`; none when the file is absent. Throws std::runtime_error
// naming the file and the entry for a file that is not a hosts list.
std::vector<Host> load_hosts(const std::string& path = hosts_file_path());
// Written to a temporary file, synced and renamed: never half written.
void save_hosts(const std::vector<Host>& hosts, const std::string& path = hosts_file_path());
// check_host, then the host added (or the one of that name replaced) and saved; true when replaced.
bool add_host(const Host& host, const std::string& path = hosts_file_path());
// The host of that name removed and the list saved; throws std::runtime_error naming the file when absent.
void remove_host(const std::string& name, const std::string& path = hosts_file_path());

// Throws std::invalid_argument naming the field and what it accepts. Names,
// destinations and programs reach ssh's argument list, never a shell; the checks
// keep them from being read as options (a leading '-') or as anything but one
// word on the remote side (the program is the one word a remote shell sees).
void check_host(const Host& host);

// The host named `name` in the list; otherwise `name` as a plain ssh destination
// (any host ssh itself reaches) with the default program and work folder.
Host resolve_host(const std::string& name, const std::string& path = hosts_file_path());

}  // namespace expnet

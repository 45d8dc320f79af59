// expnet hosts add|list|remove|check: the remote hosts of hosts.json
// (expnet/remote/hosts.h), shared with the studio. check runs `expnet doctor
// --json` there over ssh and says what is wrong in one sentence.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <iostream>

#include "command.h"
#include "expnet/remote/hosts.h"
#include "expnet/remote/ssh_remote.h"

namespace expnet::cli {
namespace {

struct HostsArgs {
  Host host;
  bool json = false;
  int timeout_s = 30;
};

void add(const HostsArgs& a) {
  const bool replaced = add_host(a.host);
  std::cout << (replaced ? "updated " : "added ") << a.host.name << " (" << a.host.destination << ") in "
            << hosts_file_path() << "\n";
}

void list(const HostsArgs& a) {
  for (const auto& h : load_hosts()) {
    if (a.json) {
      std::cout << nlohmann::json({{"name", h.name}, {"destination", h.destination}, {"program", h.program},
                                   {"work_dir", h.work_dir}, {"ssh_options", h.ssh_options}})
                       .dump()
                << "\n";
      continue;
    }
    std::cout << h.name << "  " << h.destination << "  " << h.program << "  " << h.work_dir << "\n";
  }
}

void remove(const HostsArgs& a) {
  remove_host(a.host.name);
  std::cout << "removed " << a.host.name << "\n";
}

// The host's doctor report, or a one-sentence reason (thrown) naming the host.
void check(const HostsArgs& a) {
  const Host host = resolve_host(a.host.name);
  RemoteRequest request;
  request.cwd = host.work_dir;
  request.argv = {"doctor", "--json", "--free-of", "."};
  const RemoteResult result = run_remote(host, request, a.timeout_s);
  if (result.status != 0) throw std::runtime_error(explain_remote_failure(host, result, a.timeout_s));
  const auto report = nlohmann::json::parse(result.out.substr(0, result.out.find('\n')), nullptr, false);
  if (report.is_discarded() || !report.is_object())
    throw std::runtime_error("host '" + host.name + "': its expnet answered something else than a doctor report: " +
                             result.out.substr(0, 200));
  const std::string version = report.value("version", "(older than 0.1.0)");
  if (version != EXPNET_VERSION)
    throw std::runtime_error("host '" + host.name + "' runs expnet " + version + ", and this one is " + EXPNET_VERSION +
                             ": install the same version on both machines (docs/remote.md)");
  if (a.json) {
    std::cout << nlohmann::json({{"host", host.name}, {"ok", true}, {"doctor", report}}).dump() << "\n";
    return;
  }
  std::cout << host.name << " (" << host.destination << "): expnet " << version << ", "
            << report.value("gflops", 0.0) << " GFLOP/s, ";
  const auto gpus = report.value("gpus", nlohmann::json::array());
  if (gpus.empty()) std::cout << "no GPU";
  for (const auto& gpu : gpus)
    std::cout << gpu.value("name", "?") << " (" << gpu.value("memory_bytes", int64_t{0}) / (1 << 30) << " GiB) ";
  std::cout << ", " << (report["free_bytes"].is_number() ? std::to_string(report["free_bytes"].get<int64_t>() >> 30) + " GiB"
                                                         : std::string("unknown"))
            << " free in " << host.work_dir << "\n";
}

const bool registered = register_command({"hosts", 70, [](CLI::App& root) {
  auto* hosts = command_group(root, "hosts", "Remote hosts reached over ssh (for --host and the studio)");
  {
    auto [command, a] = add_command<HostsArgs>(hosts, "add", "Add or update a host", add);
    command->add_option("NAME", a->host.name, "What --host and the studio call it")->required();
    command->add_option("--destination", a->host.destination, "The ssh destination: user@host or an ssh alias")->required();
    command->add_option("--program", a->host.program, "expnet on the host: a name on its PATH or an absolute path");
    command->add_option("--work-dir", a->host.work_dir, "Where runs go on the host");
    command->add_option("--ssh-option", a->host.ssh_options, "One more ssh argument (repeat: --ssh-option=-F --ssh-option=FILE)")
        ->allow_extra_args(false);
  }
  {
    auto [command, a] = add_command<HostsArgs>(hosts, "list", "List the hosts", list);
    command->add_flag("--json", a->json, "One JSON object per host");
  }
  {
    auto [command, a] = add_command<HostsArgs>(hosts, "remove", "Remove a host", remove);
    command->add_option("NAME", a->host.name, "The host")->required();
  }
  {
    auto [command, a] = add_command<HostsArgs>(
        hosts, "check", "Reach a host over ssh: its expnet version, GPUs and free space, or what is wrong", check);
    command->add_option("NAME", a->host.name, "A host of the list, or any ssh destination")->required();
    command->add_flag("--json", a->json, "One JSON object");
    command->add_option("--timeout", a->timeout_s, "Seconds before giving up")->check(CLI::Range(1, 600));
  }
}});

}  // namespace
}  // namespace expnet::cli

// expnet runs mirror --host H --store F: follows a host's run store into a local
// mirror (expnet/remote/run_mirror.h) that the studio's Runs page and `expnet
// runs` show like a local store, with the host. A dropped connection is retried
// with backoff (1 s doubling to 30 s) from the mirror's cursor: no row lost, none
// twice. Ends when no followed run is still running.
#include <chrono>
#include <iostream>
#include <thread>

#include "command.h"
#include "expnet/remote/hosts.h"
#include "expnet/remote/run_mirror.h"
#include "expnet/remote/ssh_remote.h"
#include "expnet/train/run_registry.h"

namespace expnet::cli {
namespace {

struct MirrorArgs {
  std::string host, store, run, mirror;
  double give_up_s = 0;  // 0: never
  double wait_for_start_s = 0;  // counted from the mirror's start, across reconnections
};

void mirror(const MirrorArgs& a) {
  const Host host = resolve_host(a.host);
  const std::string path = a.mirror.empty() ? mirror_store_path(host.name, a.store) : a.mirror;
  RunMirror copy(path, host.name, a.store);
  register_run_store(path);
  std::cerr << "mirroring " << a.store << " on " << host.name << " into " << path << "\n";
  int wait_s = 1;
  const auto began = std::chrono::steady_clock::now();
  auto failing_since = began;
  while (true) {
    RemoteRequest request;
    request.cwd = host.work_dir;
    request.argv = {"runs", "follow", "--store", a.store};
    if (!a.run.empty()) request.argv.insert(request.argv.end(), {"--run", a.run});
    if (const std::string since = copy.cursor(); !since.empty()) request.argv.insert(request.argv.end(), {"--since", since});
    const double left_s = a.wait_for_start_s - std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    if (left_s > 0) request.argv.insert(request.argv.end(), {"--wait-for-start", std::to_string(left_s)});
    bool ended = false, heard = false;
    const RemoteResult result = run_remote(host, request, 7 * 24 * 3600, [&](const std::string& line) {
      try {
        copy.apply({line});
      } catch (const std::exception& e) {  // the host's answer is unusable (another format): no retry helps
        throw std::runtime_error("host '" + host.name + "': " + e.what());
      }
      if (!heard && wait_s > 1) std::cerr << "reconnected to " << host.name << "\n";  // the studio clears its notice
      heard = true;
      ended = ended || line.find("\"type\":\"end\"") != std::string::npos;
    });
    if (result.status == 0 && ended) {
      std::cerr << "mirrored to the end: " << path << "\n";
      return;
    }
    const std::string why = explain_remote_failure(host, result, 7 * 24 * 3600);
    if (result.status != 255 && result.status >= 0) throw std::runtime_error(why);  // the host's expnet refused: no retry helps
    if (heard) {
      wait_s = 1;
      failing_since = std::chrono::steady_clock::now();
    }
    const double failing = std::chrono::duration<double>(std::chrono::steady_clock::now() - failing_since).count();
    if (a.give_up_s > 0 && failing > a.give_up_s) throw std::runtime_error(why + " (gave up after " + std::to_string(int(failing)) + " s)");
    std::cerr << "reconnecting to " << host.name << " in " << wait_s << " s: " << why << "\n";
    std::this_thread::sleep_for(std::chrono::seconds(wait_s));
    wait_s = std::min(30, wait_s * 2);
  }
}

const bool registered = register_command({"mirror", 62, [](CLI::App& root) {
  auto* runs = command_group(root, "runs", "Inspect training runs (the run stores)");
  auto [command, a] = add_command<MirrorArgs>(
      runs, "mirror", "Follow a host's run store into a local mirror the studio shows, reconnecting when the link drops", mirror);
  add_host_store_options(command, &a->host, &a->store);
  command->add_option("--run", a->run, "Only this run (name or id)");
  command->add_option("--mirror", a->mirror, "The mirror file (default: <data dir>/remote/<host>/<digest>.sqlite)");
  command->add_option("--wait-for-start", a->wait_for_start_s,
                      "The run is being (re)started: not over before its trainer runs, or this many seconds")
      ->check(CLI::Range(0.0, 3600.0));
  command->add_option("--give-up-after", a->give_up_s, "Seconds of failed reconnecting before giving up (default: never)");
}});

}  // namespace
}  // namespace expnet::cli

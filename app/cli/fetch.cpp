// expnet runs fetch RUN --host H --store F [--checkpoint final|best] [--to FILE]:
// a run's checkpoint brought home over ssh (docs/remote.md, "Bring results
// home"): appended to FILE.partial from where an earlier try stopped, checked
// against the host's SHA-256, then renamed into place. The host side is the
// hidden `expnet transfer stat|send`, run by `expnet remote`.
#include <fcntl.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "command.h"
#include "expnet/remote/hosts.h"
#include "expnet/remote/ssh_remote.h"
#include "expnet/system/digest.h"
#include "expnet/train/run_store.h"

namespace expnet::cli {
namespace {

namespace fs = std::filesystem;

struct FetchArgs {
  std::string run, host, store, checkpoint = "final", to, path;
  int64_t offset = 0;
};

std::string checkpoint_path(const RunInfo& run, const std::string& which) {
  if (which == "final") return (fs::path(run.out_dir) / "final.pth").string();
  if (which == "best") return (fs::path(run.out_dir) / "checkpoints" / "best.pth").string();
  throw std::runtime_error("--checkpoint must be final or best, not '" + which + "'");
}

// Host side: where the run's checkpoint is, its size and SHA-256, as one JSON line.
void stat(const FetchArgs& a) {
  const RunStore store(a.store, RunStore::Open::read_only);
  const RunInfo run = store.find_run(a.run);
  const std::string path = checkpoint_path(run, a.checkpoint);
  std::error_code error;
  if (!fs::is_regular_file(path, error))
    throw std::runtime_error("run '" + run.name + "' has no " + a.checkpoint + " checkpoint yet (" + path +
                             (run.status == "finished" ? ")" : "; it is " + run.status + ")"));
  std::cout << nlohmann::json({{"path", fs::absolute(path).string()}, {"size", fs::file_size(path)},
                               {"sha256", sha256_file(path)}, {"run", run.name}})
                   .dump()
            << std::endl;
}

// Host side: the file's bytes from --offset on, raw, on stdout.
void send(const FetchArgs& a) {
  const int fd = ::open(a.path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw std::runtime_error("cannot read '" + a.path + "'");
  if (::lseek(fd, a.offset, SEEK_SET) != a.offset) {
    ::close(fd);
    throw std::runtime_error("cannot seek '" + a.path + "' to " + std::to_string(a.offset));
  }
  std::vector<char> buffer(1 << 20);
  for (ssize_t n; (n = ::read(fd, buffer.data(), buffer.size())) > 0;) std::cout.write(buffer.data(), n);
  ::close(fd);
  std::cout.flush();
}

std::string safe_file_name(const std::string& name) {
  std::string out;
  for (const unsigned char c : name) out += std::isalnum(c) || c == '-' || c == '_' || c == '.' ? static_cast<char>(c) : '_';
  return out.empty() || out.front() == '.' ? "run" + out : out;
}

void fetch(const FetchArgs& a) {
  const Host host = resolve_host(a.host);
  RemoteRequest ask;
  ask.cwd = host.work_dir;
  ask.argv = {"transfer", "stat", "--store", a.store, "--run", a.run, "--checkpoint", a.checkpoint};
  const RemoteResult found = run_remote(host, ask, 600);  // the host hashes the file: seconds a gigabyte
  if (found.status != 0) throw std::runtime_error(explain_remote_failure(host, found, 600));
  const auto info = nlohmann::json::parse(found.out.substr(0, found.out.find('\n')));
  const int64_t size = info.at("size").get<int64_t>();
  const std::string to = a.to.empty() ? safe_file_name(info.at("run").get<std::string>()) + "-" + a.checkpoint + ".pth" : a.to;
  const std::string partial = to + ".partial";
  std::error_code error;
  int64_t offset = fs::exists(partial, error) ? static_cast<int64_t>(fs::file_size(partial, error)) : 0;
  if (offset > size) offset = 0;  // another file's leftovers
  std::ofstream out(partial, offset > 0 ? std::ios::binary | std::ios::app : std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error("cannot write '" + partial + "': check the folder");
  if (offset > 0) std::cerr << "resuming at " << offset << " of " << size << " bytes\n";
  RemoteRequest get;
  get.cwd = host.work_dir;
  get.argv = {"transfer", "send", info.at("path").get<std::string>(), "--offset", std::to_string(offset)};
  int64_t done = offset, shown = -1;
  const RemoteResult sent = run_remote_bytes(host, get, 7 * 24 * 3600, [&](const char* data, size_t n) {
    out.write(data, static_cast<std::streamsize>(n));
    done += static_cast<int64_t>(n);
    const int64_t percent = size > 0 ? done * 100 / size : 100;
    if (percent != shown) std::cerr << "\r" << host.name << ": " << done << " of " << size << " bytes (" << percent << "%)" << std::flush;
    shown = percent;
  });
  std::cerr << "\n";
  out.close();
  if (sent.status != 0 || !out)
    throw std::runtime_error(explain_remote_failure(host, sent, 7 * 24 * 3600) + "; " + std::to_string(done) +
                             " bytes kept in " + partial + ": the same command continues from there");
  if (sha256_file(partial) != info.at("sha256").get<std::string>()) {
    fs::remove(partial, error);
    throw std::runtime_error("the copy of " + info.at("path").get<std::string>() + " from " + host.name +
                             " does not match its SHA-256 there; it was removed: fetch it again");
  }
  fs::rename(partial, to);
  std::cout << to << "  " << info.at("sha256").get<std::string>() << "  (" << size << " bytes from " << host.name << ")\n";
}

const bool registered = register_command({"fetch", 61, [](CLI::App& root) {
  auto* runs = command_group(root, "runs", "Inspect training runs (the run stores)");
  {
    auto [command, a] = add_command<FetchArgs>(runs, "fetch", "Copy a run's checkpoint from a host, resumable, checked by SHA-256", fetch);
    command->add_option("RUN", a->run, "Run name (or id)")->required();
    add_host_store_options(command, &a->host, &a->store);
    command->add_option("--checkpoint", a->checkpoint, "final (default) or best");
    command->add_option("--to", a->to, "Where to put it here (default: <run name>-<checkpoint>.pth)");
  }
  auto* transfer = command_group(root, "transfer", "A host's side of `runs fetch` (run by `expnet remote`)");
  transfer->group("");
  {
    auto [command, a] = add_command<FetchArgs>(transfer, "stat", "A run checkpoint's path, size and SHA-256", stat);
    command->add_option("--store", a->store)->required();
    command->add_option("--run", a->run)->required();
    command->add_option("--checkpoint", a->checkpoint);
  }
  {
    auto [command, a] = add_command<FetchArgs>(transfer, "send", "A file's bytes from an offset, raw", send);
    command->add_option("PATH", a->path)->required();
    command->add_option("--offset", a->offset)->check(CLI::NonNegativeNumber);
  }
}});

}  // namespace
}  // namespace expnet::cli

// expnet runs list | show RUN [--json] | table RUN... [--json] | export RUN --csv | --tensorboard DIR |
// follow --store F [--run RUN] [--since CURSOR] | stop RUN [--host H]: read
// the training run stores (expnet/train/run_store.h). Without --store, every
// store this machine knows (expnet/train/run_registry.h: the default store and
// each run folder's). Safe while a trainer writes.
#include <nlohmann/json.hpp>

#include <iomanip>
#include <iostream>

#include "command.h"
#include "expnet/remote/hosts.h"
#include "expnet/remote/run_mirror.h"
#include "expnet/remote/ssh_remote.h"
#include "expnet/text/terminal_text.h"
#include "expnet/train/run_csv.h"
#include "expnet/train/run_follow.h"
#include "expnet/train/run_lock.h"
#include "expnet/train/run_registry.h"
#include "expnet/train/run_store.h"
#include "expnet/train/runs_table.h"
#include "expnet/train/tfevents_writer.h"

namespace expnet::cli {
namespace {

struct Options {
  std::string store;  // empty: every known store
  std::string run;
  std::vector<std::string> runs;  // table: names, or prefixes ending in '*'
  bool json = false, csv = false;
  std::string tensorboard;  // export: folder for the event file (empty: not asked)
  std::string since;        // follow: a cursor
  std::string host;         // follow: the store is on this host (over ssh)
  int poll_ms = 500;        // follow
  double wait_for_start_s = 0;  // follow: the run is being (re)started
};

// The stores a command reads: --store, else every known one that exists.
std::vector<std::string> store_paths(const Options& o) {
  if (!o.store.empty()) return {o.store};
  std::vector<std::string> paths;
  for (const auto& known : known_run_stores())
    if (known.exists) paths.push_back(known.path);
  if (paths.empty())
    throw std::runtime_error("no run store on this machine yet (" + default_run_store_path() +
                             "): train a model first (expnet train) or pass --store");
  return paths;
}

struct LocatedRun {
  std::unique_ptr<RunStore> store;
  RunInfo info;
};

// A run by name or id in --store, else by name in every known store (ambiguous names are refused).
LocatedRun locate(const Options& o) {
  const auto paths = store_paths(o);
  if (!o.store.empty()) {
    auto store = std::make_unique<RunStore>(paths.front(), RunStore::Open::read_only);
    auto info = store->find_run(o.run);
    return {std::move(store), std::move(info)};
  }
  std::vector<LocatedRun> found;
  for (const auto& path : paths) {
    auto store = std::make_unique<RunStore>(path, RunStore::Open::read_only);
    if (auto info = store->find_run_by_name(o.run)) found.push_back({std::move(store), std::move(*info)});
  }
  if (found.empty()) throw std::runtime_error("no run named '" + o.run + "' in the known run stores (see `expnet runs list`)");
  if (found.size() > 1) {
    std::string where;
    for (const auto& f : found) where += "\n  " + f.store->path();
    throw std::runtime_error("several runs are named '" + o.run + "'; pick one with --store:" + where);
  }
  return std::move(found.front());
}

// True now: a local run's from its trainer's lock; a mirror's as the host said (no lock of it is here).
std::string status_now(const RunInfo& r, const std::string& store) {
  if (mirror_origin(store)) return r.status;
  return run_status(r, run_is_live(store, r.id));
}

nlohmann::json run_json(const RunInfo& r, const std::string& store) {
  // clang-format off
  nlohmann::json j = {{"id", r.id}, {"name", r.name}, {"status", status_now(r, store)}, {"stored_status", r.status},
                      {"store", store}, {"out_dir", r.out_dir}, {"created_at", r.created_at},
                      {"updated_at", r.updated_at}, {"steps", r.steps}, {"last_step", r.last_step},
                      {"images_per_s", r.images_per_s}, {"wall_s", r.wall_s}, {"tags", r.tags}, {"notes", r.notes}};
  // clang-format on
  j["best_cider_d"] = r.best_cider ? nlohmann::json(*r.best_cider) : nlohmann::json(nullptr);
  j["best_epoch"] = r.best_cider ? nlohmann::json(r.best_epoch) : nlohmann::json(nullptr);
  if (!r.error.empty()) j["error"] = r.error;
  return j;
}

void list(const Options& o) {
  for (const auto& path : store_paths(o)) {
    std::vector<RunInfo> runs;
    try {
      runs = RunStore(path, RunStore::Open::read_only).list_runs();
    } catch (const std::exception& e) {
      if (!o.store.empty()) throw;
      std::cerr << "warning: " << e.what() << "\n";  // one unreadable store does not hide the others
      continue;
    }
    for (const auto& r : runs) {
      if (o.json) {
        std::cout << run_json(r, path).dump() << "\n";
        continue;
      }
      // A name is the user's text: a newline or an escape in it must not forge a row or drive the terminal.
      std::cout << std::left << std::setw(5) << r.id << std::setw(24) << terminal_safe(r.name) << std::setw(12)
                << status_now(r, path) << std::setw(10) << r.last_step
                << (r.best_cider ? std::to_string(*r.best_cider) : std::string("-")) << "  " << r.updated_at << "  "
                << terminal_safe(path) << "\n";
    }
  }
}

void show(const Options& o) {
  const auto located = locate(o);
  const RunStore& store = *located.store;
  const RunInfo& r = located.info;
  const auto validations = store.validations(r.id);
  const auto steps = store.steps(r.id);
  const std::string status = status_now(r, store.path());
  if (o.json) {
    auto j = run_json(r, store.path());
    j["config"] = nlohmann::json::parse(r.config_json, nullptr, false);
    j["stages"] = nlohmann::json::array();
    for (const auto& [idx, name] : store.stages(r.id)) j["stages"].push_back({{"index", idx}, {"name", name}});
    j["validation"] = nlohmann::json::array();
    for (const auto& v : validations)
      j["validation"].push_back({{"stage", v.stage}, {"epoch", v.epoch}, {"step", v.step}, {"bleu1", v.bleu1},
                                 {"bleu2", v.bleu2}, {"bleu3", v.bleu3}, {"bleu4", v.bleu4},
                                 {"rouge_l", v.rouge_l}, {"cider_d", v.cider_d}});
    if (!steps.empty())
      j["last_step"] = {{"step", steps.back().step}, {"loss", steps.back().loss}, {"lr", steps.back().lr}};
    int64_t skipped = 0;
    for (const auto& s : steps) skipped += s.skipped;
    j["skipped_steps"] = skipped;
    std::cout << j.dump() << std::endl;
    return;
  }
  std::cout << "run " << r.id << " '" << r.name << "' (" << status << "), folder " << r.out_dir << "\n"
            << "store " << store.path() << "\n"
            << "created " << r.created_at << ", updated " << r.updated_at << ", " << r.steps << " steps logged\n";
  if (!r.error.empty()) std::cout << "error: " << r.error << "\n";
  if (!r.tags.empty()) std::cout << "tags: " << r.tags << "\n";
  if (!r.notes.empty()) std::cout << "notes: " << r.notes << "\n";
  for (const auto& [idx, name] : store.stages(r.id)) std::cout << "stage " << idx << ": " << name << "\n";
  if (!steps.empty())
    std::cout << "last step " << steps.back().step << ": loss " << steps.back().loss << ", lr " << steps.back().lr
              << "\n";
  std::cout << "stage epoch   step  BLEU-1 BLEU-4 ROUGE-L CIDEr-D\n" << std::fixed << std::setprecision(4);
  for (const auto& v : validations)
    std::cout << std::setw(5) << v.stage << std::setw(6) << v.epoch << std::setw(7) << v.step << std::setw(8)
              << v.bleu1 << std::setw(7) << v.bleu4 << std::setw(8) << v.rouge_l << std::setw(8) << v.cider_d << "\n";
}

void export_run(const Options& o) {
  const bool tensorboard = !o.tensorboard.empty();
  if (o.csv == tensorboard)
    throw std::runtime_error(std::string("runs export: ") +
                             (o.csv ? "--csv and --tensorboard both given" : "no format given") +
                             "; pass exactly one: --csv (CSV on stdout) or --tensorboard DIR (TensorBoard event file)");
  const auto located = locate(o);
  if (o.csv) return write_run_csv(std::cout, *located.store, located.info);
  const auto written = write_tensorboard_events(*located.store, located.info, o.tensorboard);
  std::cout << "wrote " << written.path << ": " << written.scalars << " scalars in " << written.records
            << " records (tensorboard --logdir " << o.tensorboard << ")" << std::endl;
}

// Each RUN (or every run whose name starts with PREFIX for "PREFIX*"), in the order given.
void table(const Options& o) {
  std::vector<RunsTableRow> rows;
  for (const auto& name : o.runs) {
    if (name.empty() || name.back() != '*') {
      Options one = o;
      one.run = name;
      const auto located = locate(one);
      rows.push_back(runs_table_row(*located.store, located.info));
      continue;
    }
    const std::string prefix = name.substr(0, name.size() - 1);
    size_t matched = 0;
    for (const auto& path : store_paths(o)) {
      const RunStore store(path, RunStore::Open::read_only);
      for (const auto& r : store.list_runs())
        if (r.name.rfind(prefix, 0) == 0) {
          rows.push_back(runs_table_row(store, r));
          ++matched;
        }
    }
    if (matched == 0) throw std::runtime_error("no run's name starts with '" + prefix + "' (see `expnet runs list`)");
  }
  std::cout << (o.json ? runs_table_json(rows) + "\n" : runs_table_text(rows)) << std::flush;
}

// JSON lines of the store's rows, then its changes, until no followed run is
// running (docs/remote.md): what the studio reads from a host over SSH.
void follow(const Options& o) {
  if (o.store.empty()) throw std::runtime_error("runs follow needs --store FILE (the runs.sqlite of a run folder)");
  FollowOptions options;
  options.store = o.store;
  options.run = o.run;
  options.poll_ms = o.poll_ms;
  options.wait_for_start_s = o.wait_for_start_s;
  if (!o.since.empty()) {
    try {
      options.since = FollowCursor::parse(o.since);
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error(std::string("--since: ") + e.what());
    }
  }
  if (o.host.empty()) {
    follow_run_store(options, [](const std::string& line) { std::cout << line << "\n" << std::flush; });
    return;
  }
  // The same command on the host; its lines pass through as they come. ssh's
  // keepalives notice a dead link (about 10 s): then this ends with its reason,
  // and the last cursor printed continues it.
  const Host host = resolve_host(o.host);
  RemoteRequest request;
  request.cwd = host.work_dir;
  request.argv = {"runs", "follow", "--store", o.store, "--poll-ms", std::to_string(o.poll_ms)};
  if (!o.run.empty()) request.argv.insert(request.argv.end(), {"--run", o.run});
  if (!o.since.empty()) request.argv.insert(request.argv.end(), {"--since", o.since});
  if (o.wait_for_start_s > 0) request.argv.insert(request.argv.end(), {"--wait-for-start", std::to_string(o.wait_for_start_s)});
  constexpr int kFollowTimeout = 7 * 24 * 3600;
  const RemoteResult result = run_remote(host, request, kFollowTimeout, [&](const std::string& line) {
    const auto hello = nlohmann::json::parse(line, nullptr, false);
    if (hello.is_object() && hello.value("type", "") == "hello" && hello.value("version", 0) != kFollowFormatVersion) {
      throw std::runtime_error("host '" + host.name + "' runs expnet " + hello.value("expnet", std::string("?")) + ", which speaks follow format " +
                std::to_string(hello.value("version", 0)) + ", and this expnet (" EXPNET_VERSION ") reads format " +
                std::to_string(kFollowFormatVersion) + ": install the same expnet version on both machines");
    }
    std::cout << line << "\n" << std::flush;
  });
  if (result.status != 0) throw std::runtime_error(explain_remote_failure(host, result, kFollowTimeout));
}

// Ctrl-C for a run trained elsewhere (a detached run on a host): its trainer
// writes a checkpoint and ends "interrupted"; `train --resume` continues it.
void stop(const Options& o) {
  if (!o.host.empty()) {
    if (o.store.empty()) throw std::runtime_error("runs stop --host needs --store (the run folder's runs.sqlite there)");
    const Host host = resolve_host(o.host);
    RemoteRequest request;
    request.cwd = host.work_dir;
    request.argv = {"runs", "stop", o.run, "--store", o.store};
    const RemoteResult result = run_remote(host, request, 30);
    if (result.status != 0) throw std::runtime_error(explain_remote_failure(host, result, 30));
    std::cout << result.out << std::flush;
    return;
  }
  const auto located = locate(o);
  const long long pid = stop_run(located.store->path(), located.info.id);
  std::cout << "stopping '" << terminal_safe(located.info.name) << "' (pid " << pid
            << "): it writes a checkpoint, then ends as interrupted; expnet train --resume continues it\n";
}

// A `runs` subcommand reading the store that --store names (else every known store).
std::pair<CLI::App*, Options*> add_runs_command(CLI::App* runs, const std::string& name, const std::string& description,
                                                void (*run)(const Options&)) {
  auto [command, options] = add_command<Options>(runs, name, description, run);
  command->add_option("--store", options->store,
                      "Run store file (default: every store this machine knows: the data folder's runs.sqlite and "
                      "each run folder's)");
  return {command, options};
}

const bool registered = register_command({"runs", 60, [](CLI::App& root) {
  auto* runs = command_group(root, "runs", "Inspect training runs (the run stores)");
  {
    auto [command, o] = add_runs_command(runs, "list", "List the runs, with the status that is true now", list);
    command->add_flag("--json", o->json, "One compact JSON object per run");
  }
  {
    auto [command, o] = add_runs_command(runs, "show", "Show a run: stages, last step, validation metrics per epoch", show);
    command->add_option("RUN", o->run, "Run name (or id with --store)")->required();
    command->add_flag("--json", o->json, "One compact JSON object");
  }
  {
    auto [command, o] = add_runs_command(
        runs, "table", "Runs side by side: layer kinds, best BLEU-1..4, ROUGE-L, CIDEr-D, parameters, images/s", table);
    command->add_option("RUN", o->runs, "Run names (or ids with --store); NAME* = every run whose name starts with NAME")
        ->required();
    command->add_flag("--json", o->json, "One JSON array");
  }
  {
    auto [command, o] = add_runs_command(runs, "export", "Export a run's steps and validation metrics", export_run);
    command->add_option("RUN", o->run, "Run name (or id with --store)")->required();
    command->add_flag("--csv", o->csv, "CSV on stdout");
    command->add_option("--tensorboard", o->tensorboard,
                        "Folder (created when missing) for a TensorBoard event file: tensorboard --logdir DIR");
  }
  {
    auto [command, o] = add_runs_command(
        runs, "follow", "Print a store's rows, then its changes, as JSON lines until no followed run is running", follow);
    command->add_option("--run", o->run, "Only this run (name or id); it is waited for up to 30 s");
    command->add_option("--since", o->since, "Continue after this cursor (the \"cursor\" of a line printed before)");
    command->add_option("--poll-ms", o->poll_ms, "How often the store is read")->check(CLI::Range(50, 60000));
    command->add_option("--wait-for-start", o->wait_for_start_s,
                        "The run is being (re)started: not over before its trainer runs, or this many seconds")
        ->check(CLI::Range(0.0, 3600.0));
    command->add_option("--host", o->host, "The store is on this host (`expnet hosts`, or an ssh destination); "
                                           "a relative --store is in its work folder");
  }
  {
    auto [command, o] = add_runs_command(runs, "stop", "Stop a running run as Ctrl-C does: a checkpoint, then interrupted", stop);
    command->add_option("RUN", o->run, "Run name (or id with --store)")->required();
    command->add_option("--host", o->host, "The run trains on this host (a relative --store is in its work folder)");
  }
}});

}  // namespace
}  // namespace expnet::cli

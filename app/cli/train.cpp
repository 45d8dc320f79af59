// expnet train --config FILE.json | --preset NAME [--out DIR] [--resume]:
// runs the staged training recipe (expnet/train/trainer.h, docs/training.md).
// expnet train --ablation FILE.json: one run per variant (expnet/train/ablation.h).
#include <nlohmann/json.hpp>

#include <fstream>
#include <optional>
#include <iostream>
#include <sstream>

#include <chrono>
#include <filesystem>

#include "command.h"
#include "expnet/remote/hosts.h"
#include "expnet/remote/ssh_remote.h"
#include "expnet/train/ablation.h"
#include "expnet/system/input_file.h"
#include "expnet/train/launch.h"
#include "expnet/system/paths.h"
#include "expnet/train/run_lock.h"
#include "expnet/train/run_store.h"
#include "expnet/train/runs_table.h"
#include "expnet/train/trainer.h"

namespace expnet::cli {
namespace {

struct Options {
  std::string config, preset, out, store, name, ablation, host;
  std::string resume;  // "": a new run; "exact" (a bare --resume); "auto"
  bool no_progress = false, json = false, print_config = false, autocast = false;
  int nproc = 0;
  double dist_timeout = 0;  // 0: not given (the config's dist_timeout)
};

// The options a rank started by --nproc gets again, with a value (`text`) or as a
// flag: each row registers its option and passes it on, so a new one is one row.
struct ForwardedOption {
  const char* name;
  std::string Options::*text;
  bool Options::*flag;
  const char* help;
};
const ForwardedOption kForwarded[] = {
    {"--config", &Options::config, nullptr, "Training config JSON (schema in docs/training.md)"},
    {"--preset", &Options::preset, nullptr, "Built-in recipe: paper, shapes-demo, shapes-ablation, shapes-pnaic-k2 or shapes-pnaic-k5"},
    {"--store", &Options::store, nullptr, "Run store file (default: <run folder>/runs.sqlite)"},
    {"--name", &Options::name, nullptr, "Run name (default: the config's name)"},
    {"--resume", &Options::resume, nullptr,
     "Continue the run in --out exactly where its last checkpoint left it; `--resume auto`: continue it when there is one, "
     "else start it (what a worker that torchrun restarts needs)"},
    {"--no-progress", nullptr, &Options::no_progress, "No progress bar on stderr"},
    {"--json", nullptr, &Options::json, "Print the outcome as one compact JSON object"},
    {"--autocast", nullptr, &Options::autocast, "Mixed precision (float16 autocast + loss scaling); CUDA devices only (bfloat16 anywhere: \"precision\": \"bf16\" in the config)"},
};

// --nproc N: the same command N times as ranks 0..N-1 on loopback (1 thread each
// unless --threads says otherwise); the children see torchrun's variables.
void launch(const RuntimeOptions& runtime, const Options& o, const std::string& out_dir) {
  if (std::getenv("WORLD_SIZE")) throw std::runtime_error("expnet train --nproc: WORLD_SIZE is already set (launched by torchrun?); drop --nproc");
  std::vector<std::string> args{"train", "--out", out_dir, "--threads", std::to_string(runtime.threads > 0 ? runtime.threads : 1)};
  if (o.dist_timeout > 0) args.insert(args.end(), {"--dist-timeout", std::to_string(o.dist_timeout)});
  for (const auto& option : kForwarded) {
    if (option.text && !(o.*option.text).empty()) args.insert(args.end(), {option.name, o.*option.text});
    if (option.flag && o.*option.flag) args.emplace_back(option.name);
  }
  if (!runtime.device.empty()) args.insert(args.end(), {"--device", runtime.device});
  LaunchOptions lo;
  lo.nproc = o.nproc;
  lo.child_args = args;
  const int status = launch_local(lo);
  if (status == 130) set_exit_code(130);  // interrupted (SIGINT/SIGTERM): checkpoint written
  else if (status != 0)
    throw std::runtime_error("expnet train --nproc " + std::to_string(o.nproc) + ": a rank failed (exit status " +
                             std::to_string(status) + "); its error is above");
}

// --host H: the same command started detached on H over ssh (docs/remote.md).
// The config file travels in the request; every other option applies there.
void remote_launch(const RuntimeOptions& runtime, const Options& o) {
  if (!o.ablation.empty()) throw std::runtime_error("--host with --ablation is not supported yet: start each variant with --host");
  const Host host = resolve_host(o.host);
  RemoteRequest request;
  request.cwd = host.work_dir;
  std::string name = o.name;
  if (!o.config.empty()) {
    const std::string text = read_input_file(o.config, "training config", kMaxConfigBytes);
    const TrainConfig config = TrainConfig::from_json(text, "training config '" + o.config + "'");  // refused here, not there
    if (name.empty()) name = config.name;
    const auto stamp = std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::system_clock::now().time_since_epoch()).count();
    request.files.push_back({"configs/run-" + std::to_string(stamp) + ".json", text});
  } else if (name.empty()) {
    name = train_preset(o.preset).name;
  }
  const std::string out = o.out.empty() ? "runs/" + name : o.out;
  request.argv = {"train", "--out", out, "--no-progress"};
  if (o.dist_timeout > 0) request.argv.insert(request.argv.end(), {"--dist-timeout", std::to_string(o.dist_timeout)});
  for (const auto& option : kForwarded) {
    if (option.text && !(o.*option.text).empty())
      request.argv.insert(request.argv.end(),
                          {option.name, option.text == &Options::config ? request.files.front().path : o.*option.text});
    if (option.flag && o.*option.flag && std::string(option.name) != "--no-progress") request.argv.emplace_back(option.name);
  }
  if (runtime.threads > 0) request.argv.insert(request.argv.end(), {"--threads", std::to_string(runtime.threads)});
  if (!runtime.device.empty()) request.argv.insert(request.argv.end(), {"--device", runtime.device});
  if (o.nproc > 0) request.argv.insert(request.argv.end(), {"--nproc", std::to_string(o.nproc)});
  request.detach = true;
  request.log = out + "/train.log";
  request.settle_s = 3;  // a config the host refuses ends in this time: its error comes back
  const int timeout_s = 30;
  const RemoteResult result = run_remote(host, request, timeout_s);
  const auto report = nlohmann::json::parse(result.out.substr(0, result.out.find('\n')), nullptr, false);
  // A short run (a few steps, a tiny fine-tune) may succeed within the settle time: that is no failure.
  const bool ended = result.status == 1 && report.is_object() && report.value("ended", false);
  if (ended && report.value("status", -1) != 0)
    throw std::runtime_error("host '" + host.name + "': the run ended at once (status " +
                             std::to_string(report.value("status", -1)) + "); its log " + report.value("log", "") +
                             " ends with:\n" + report.value("log_tail", ""));
  if (!ended && (result.status != 0 || !report.is_object()))
    throw std::runtime_error(explain_remote_failure(host, result, timeout_s));
  const std::string store = o.store.empty() ? out + "/runs.sqlite" : o.store;
  if (o.json) {
    std::cout << nlohmann::json({{"host", host.name}, {"status", ended ? "finished" : "started"}, {"pid", report["pid"]},
                                 {"out_dir", out}, {"store", store}, {"log", report["log"]}, {"work_dir", report["cwd"]}})
                     .dump()
              << std::endl;
    return;
  }
  std::cout << (ended ? "started and finished already on " : "started on ") << host.name << " (pid " << report["pid"] << ", log " << report["log"].get<std::string>()
            << "); follow it: ssh " << host.destination << " " << host.program << " runs follow --store " << store
            << " (in " << report["cwd"].get<std::string>() << ")\n";
}

// The run of that name in the variant's store: finished runs are kept, others continue (--resume).
std::optional<RunInfo> existing_run(const std::string& store_path, const std::string& name, bool* live) {
  if (run_store_file_version(store_path) <= 0) return std::nullopt;
  const RunStore store(store_path, RunStore::Open::existing);
  auto info = store.find_run_by_name(name);
  if (info) *live = run_is_live(store.path(), info->id);
  return info;
}

// Each variant in turn, into <out or data dir/runs>/<run name>; an interrupted
// ablation continues where it stopped. Ends with the table of all variants.
void run_ablation(const RuntimeOptions& runtime, const Options& o) {
  if (!o.config.empty() || !o.preset.empty() || !o.name.empty() || o.nproc > 0 || !o.resume.empty())
    throw std::runtime_error("expnet train --ablation: the file names the recipe and the runs; drop --config, --preset, "
                             "--name, --nproc and --resume (an interrupted ablation continues by itself)");
  const auto plan = read_ablation(o.ablation);
  const std::string root = o.out.empty() ? ensure_dir(data_dir() + "/runs") : ensure_dir(o.out);
  std::vector<std::pair<std::string, std::string>> runs;  // store, name
  for (size_t i = 0; i < plan.variants.size(); ++i) {
    const auto& variant = plan.variants[i];
    TrainOptions t;
    t.out_dir = root + "/" + variant.config.name;
    t.store_path = o.store;
    t.autocast = o.autocast;
    t.progress = !o.no_progress;
    t.device = runtime.device.empty() ? "cpu" : runtime.device;
    const std::string store = o.store.empty() ? t.out_dir + "/runs.sqlite" : o.store;
    runs.emplace_back(store, variant.config.name);
    bool live = false;
    const auto existing = existing_run(store, variant.config.name, &live);
    if (existing && live)
      throw std::runtime_error("ablation: run '" + variant.config.name + "' is being trained by another process");
    if (existing && existing->status == "finished") {
      std::cerr << "ablation " << plan.name << ": variant " << (i + 1) << "/" << plan.variants.size() << " '"
                << variant.name << "' already trained (run " << variant.config.name << ")\n";
      continue;
    }
    t.resume = existing.has_value();
    std::cerr << "ablation " << plan.name << ": variant " << (i + 1) << "/" << plan.variants.size() << " '"
              << variant.name << "' -> " << t.out_dir << (t.resume ? " (continuing)" : "") << "\n";
    const auto outcome = run_training(variant.config, t);
    if (outcome.status != "finished") {
      std::cerr << "ablation " << plan.name << ": stopped during '" << variant.name
                << "'; run the same command again to continue\n";
      set_exit_code(130);
      return;
    }
  }
  std::vector<RunsTableRow> rows;
  for (const auto& [store_path, name] : runs) {
    const RunStore store(store_path, RunStore::Open::existing);
    rows.push_back(runs_table_row(store, store.find_run(name)));
  }
  std::cout << (o.json ? runs_table_json(rows) + "\n" : runs_table_text(rows)) << std::flush;
}

// --resume auto: the run folder has a checkpoint, or its store a run of that name (killed before its first checkpoint).
bool run_to_continue(const TrainOptions& t, const std::string& name) {
  std::error_code error;
  if (std::filesystem::exists(t.out_dir + "/checkpoints/latest.json", error)) return true;
  const std::string store = t.store_path.empty() ? t.out_dir + "/runs.sqlite" : t.store_path;
  return run_store_file_version(store) > 0 && RunStore(store, RunStore::Open::read_only).find_run_by_name(name).has_value();
}

void run(const RuntimeOptions& runtime, const Options& o) {
  apply_runtime(runtime);
  if (!o.host.empty()) return remote_launch(runtime, o);
  if (!o.ablation.empty()) return run_ablation(runtime, o);
  if (o.config.empty() == o.preset.empty()) throw std::runtime_error("expnet train: give exactly one of --config FILE or --preset NAME");
  TrainConfig config;
  if (!o.config.empty()) {
    config = TrainConfig::from_json(read_input_file(o.config, "training config", kMaxConfigBytes),
                                    "training config '" + o.config + "'");
  } else {
    config = train_preset(o.preset);
  }
  if (!o.name.empty()) config.name = o.name;
  if (o.print_config) {
    std::cout << config.to_json() << std::endl;
    return;
  }
  TrainOptions t;
  t.out_dir = o.out.empty() ? ensure_dir(data_dir() + "/runs") + "/" + config.name : o.out;
  if (o.nproc > 0) return launch(runtime, o, t.out_dir);
  t.dist_timeout_s = o.dist_timeout;
  t.autocast = o.autocast;
  t.store_path = o.store;
  t.resume = o.resume == "exact" || (o.resume == "auto" && run_to_continue(t, config.name));
  t.progress = !o.no_progress;
  t.device = runtime.device.empty() ? "cpu" : runtime.device;
  const auto outcome = run_training(config, t);
  if (outcome.rank != 0) {  // distributed: rank 0 reports for all
    if (outcome.status != "finished") set_exit_code(130);
    return;
  }
  if (o.json) {
    std::cout << nlohmann::json{{"status", outcome.status}, {"steps", outcome.steps},
                                {"last_cider_d", outcome.last_cider_d}, {"final_checkpoint", outcome.final_checkpoint},
                                {"out_dir", t.out_dir}}
                     .dump()
              << std::endl;
  } else {
    std::cout << outcome.status << ": " << outcome.steps << " steps, last validation CIDEr-D " << outcome.last_cider_d
              << (outcome.final_checkpoint.empty() ? "" : ", final checkpoint " + outcome.final_checkpoint) << "\n";
  }
  if (outcome.status != "finished") set_exit_code(130);
}

const bool registered = register_command({"train", 55, [](CLI::App& root) {
  auto* c = root.add_subcommand("train", "Train a model: staged XE / SCST / PNAIC recipe with checkpoints and a run store");
  auto runtime = add_runtime_options(c);
  auto o = std::make_shared<Options>();
  for (const auto& option : kForwarded) {
    if (option.text) c->add_option(option.name, (*o).*option.text, option.help);
    if (option.flag) c->add_flag(option.name, (*o).*option.flag, option.help);
  }
  c->get_option("--resume")->expected(0, 1)->check(CLI::IsMember({"exact", "auto"}));
  c->add_option("--out", o->out, "Run folder (default: <data dir>/runs/<name>); with --ablation, the folder of the runs");
  c->add_option("--ablation", o->ablation,
                "Ablation file: one run per variant of a base recipe, then their table (docs/training.md, \"Ablations\")");
  c->add_flag("--print-config", o->print_config, "Print the resolved config JSON and exit");
  c->add_option("--host", o->host,
                "Start the run detached on this host over ssh (`expnet hosts`, or any ssh destination); returns once "
                "it runs. --out and dataset paths are the host's (relative: to its work folder)");
  c->add_option("--nproc", o->nproc, "Data-parallel training in N local processes (Gloo on loopback, 1 thread each by default)")
      ->check(CLI::Range(1, 256));
  c->add_option("--dist-timeout", o->dist_timeout, "Distributed: seconds a rank waits for the others before failing (default: the config's dist_timeout, 300)")
      ->check(CLI::PositiveNumber);
  c->callback([c, runtime, o] {
    if (c->count("--resume") > 0 && o->resume.empty()) o->resume = "exact";  // a bare --resume
    run(*runtime, *o);
  });
}});

}  // namespace
}  // namespace expnet::cli

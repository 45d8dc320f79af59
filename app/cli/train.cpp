// expnet train --config FILE.json | --preset NAME [--out DIR] [--resume]:
// runs the staged training recipe (expnet/trainer.h, docs/training.md).
#include <nlohmann/json.hpp>

#include <fstream>
#include <iostream>
#include <sstream>

#include "command.h"
#include "expnet/paths.h"
#include "expnet/trainer.h"

namespace expnet::cli {
namespace {

struct Options {
  std::string config, preset, out, store, name;
  bool resume = false, no_progress = false, json = false, print_config = false;
};

void run(const RuntimeOptions& runtime, const Options& o) {
  apply_runtime(runtime);
  if (o.config.empty() == o.preset.empty()) throw std::runtime_error("expnet train: give exactly one of --config FILE or --preset NAME");
  TrainConfig config;
  if (!o.config.empty()) {
    std::ifstream in(o.config);
    if (!in) throw std::runtime_error("training config '" + o.config + "': cannot read it; check the path");
    std::stringstream text;
    text << in.rdbuf();
    config = TrainConfig::from_json(text.str(), "training config '" + o.config + "'");
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
  t.store_path = o.store;
  t.resume = o.resume;
  t.progress = !o.no_progress;
  t.device = runtime.device.empty() ? "cpu" : runtime.device;
  const auto outcome = run_training(config, t);
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
  auto* c = root.add_subcommand("train", "Train a model: staged XE / SCST recipe with checkpoints and a run store");
  auto runtime = add_runtime_options(c);
  auto o = std::make_shared<Options>();
  c->add_option("--config", o->config, "Training config JSON (schema in docs/training.md)");
  c->add_option("--preset", o->preset, "Built-in recipe: paper or shapes-demo");
  c->add_option("--out", o->out, "Run folder (default: <data dir>/runs/<name>)");
  c->add_option("--store", o->store, "Run store file (default: <run folder>/runs.sqlite)");
  c->add_option("--name", o->name, "Run name (default: the config's name)");
  c->add_flag("--resume", o->resume, "Continue the run in --out exactly where its last checkpoint left it");
  c->add_flag("--no-progress", o->no_progress, "No progress bar on stderr");
  c->add_flag("--print-config", o->print_config, "Print the resolved config JSON and exit");
  c->add_flag("--json", o->json, "Print the outcome as one compact JSON object");
  c->callback([runtime, o] { run(*runtime, *o); });
}});

}  // namespace
}  // namespace expnet::cli

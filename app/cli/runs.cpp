// expnet runs list | show RUN [--json] | export RUN --csv: read the training run
// store (expnet/train/run_store.h). Read-only; safe while a trainer writes.
#include <nlohmann/json.hpp>

#include <filesystem>
#include <iomanip>
#include <iostream>

#include "command.h"
#include "expnet/train/run_store.h"

namespace expnet::cli {
namespace {

struct Options {
  std::string store;  // empty: the default store
  std::string run;
  bool json = false, csv = false;
};

std::string store_path(const Options& o) {
  const std::string path = o.store.empty() ? default_run_store_path() : o.store;
  if (!std::filesystem::exists(path))
    throw std::runtime_error("run store '" + path + "' does not exist: train a model first (expnet train) or pass --store");
  return path;
}

nlohmann::json run_json(const RunInfo& r) {
  nlohmann::json j = {{"id", r.id},         {"name", r.name},           {"status", r.status},
                      {"out_dir", r.out_dir}, {"created_at", r.created_at}, {"updated_at", r.updated_at},
                      {"steps", r.steps}};
  j["best_cider_d"] = r.best_cider ? nlohmann::json(*r.best_cider) : nlohmann::json(nullptr);
  return j;
}

void list(const Options& o) {
  RunStore store(store_path(o));
  for (const auto& r : store.list_runs()) {
    if (o.json) {
      std::cout << run_json(r).dump() << "\n";
      continue;
    }
    std::cout << std::left << std::setw(5) << r.id << std::setw(24) << r.name << std::setw(12) << r.status
              << std::setw(10) << r.steps << (r.best_cider ? std::to_string(*r.best_cider) : std::string("-")) << "  "
              << r.updated_at << "\n";
  }
}

void show(const Options& o) {
  RunStore store(store_path(o));
  const auto r = store.find_run(o.run);
  const auto validations = store.validations(r.id);
  const auto steps = store.steps(r.id);
  if (o.json) {
    auto j = run_json(r);
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
  std::cout << "run " << r.id << " '" << r.name << "' (" << r.status << "), folder " << r.out_dir << "\n"
            << "created " << r.created_at << ", updated " << r.updated_at << ", " << r.steps << " steps logged\n";
  for (const auto& [idx, name] : store.stages(r.id)) std::cout << "stage " << idx << ": " << name << "\n";
  if (!steps.empty())
    std::cout << "last step " << steps.back().step << ": loss " << steps.back().loss << ", lr " << steps.back().lr
              << "\n";
  std::cout << "stage epoch   step  BLEU-1 BLEU-4 ROUGE-L CIDEr-D\n" << std::fixed << std::setprecision(4);
  for (const auto& v : validations)
    std::cout << std::setw(5) << v.stage << std::setw(6) << v.epoch << std::setw(7) << v.step << std::setw(8)
              << v.bleu1 << std::setw(7) << v.bleu4 << std::setw(8) << v.rouge_l << std::setw(8) << v.cider_d << "\n";
}

void export_csv(const Options& o) {
  if (!o.csv) throw std::runtime_error("runs export: only --csv is supported; add --csv");
  RunStore store(store_path(o));
  const auto r = store.find_run(o.run);
  std::cout << "kind,stage,epoch,step,loss,lr,grad_norm,images_per_s,skipped,bleu1,bleu2,bleu3,bleu4,rouge_l,cider_d\n"
            << std::setprecision(10);
  for (const auto& s : store.steps(r.id))
    std::cout << "step," << s.stage << "," << s.epoch << "," << s.step << "," << s.loss << "," << s.lr << ","
              << s.grad_norm << "," << s.images_per_s << "," << s.skipped << ",,,,,,\n";
  for (const auto& v : store.validations(r.id))
    std::cout << "validation," << v.stage << "," << v.epoch << "," << v.step << ",,,,,," << v.bleu1 << ","
              << v.bleu2 << "," << v.bleu3 << "," << v.bleu4 << "," << v.rouge_l << "," << v.cider_d << "\n";
}

// A `runs` subcommand reading the store that --store names.
std::pair<CLI::App*, Options*> add_runs_command(CLI::App* runs, const std::string& name, const std::string& description,
                                                void (*run)(const Options&)) {
  auto [command, options] = add_command<Options>(runs, name, description, run);
  command->add_option("--store", options->store, "Run store file (default: <data dir>/runs.sqlite; a run folder has its own)");
  return {command, options};
}

const bool registered = register_command({"runs", 60, [](CLI::App& root) {
  auto* runs = command_group(root, "runs", "Inspect training runs (the run store)");
  {
    auto [command, o] = add_runs_command(runs, "list", "List the runs in the store", list);
    command->add_flag("--json", o->json, "One compact JSON object per run");
  }
  {
    auto [command, o] = add_runs_command(runs, "show", "Show a run: stages, last step, validation metrics per epoch", show);
    command->add_option("RUN", o->run, "Run name or id")->required();
    command->add_flag("--json", o->json, "One compact JSON object");
  }
  {
    auto [command, o] = add_runs_command(runs, "export", "Export a run's steps and validation metrics", export_csv);
    command->add_option("RUN", o->run, "Run name or id")->required();
    command->add_flag("--csv", o->csv, "CSV on stdout")->required();
  }
}});

}  // namespace
}  // namespace expnet::cli

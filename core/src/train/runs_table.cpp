// Runs side by side (see expnet/train/runs_table.h).
#include "expnet/train/runs_table.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <numeric>
#include <sstream>

#include "expnet/checkpoint/state_dict.h"
#include "expnet/model/model_config.h"
#include "expnet/train/run_lock.h"
#include "train/run_checkpoints.h"

namespace expnet {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string encoder_label(const ModelConfig& c) {
  int64_t slots = 0;
  std::string groups;
  for (const auto g : c.num_exp_enc_list) {
    slots += g;
    groups += (groups.empty() ? "" : "+") + std::to_string(g);
  }
  switch (c.encoder_layer) {
    case EncoderLayerKind::StaticExpansion:
      return "Static Exp NE=" + (c.num_exp_enc_list.size() > 1 ? groups : std::to_string(slots));
    case EncoderLayerKind::DynamicExpansion: return "Dynamic Exp NE=" + std::to_string(slots);
    case EncoderLayerKind::SelfAttention: return "Base";
    case EncoderLayerKind::NgSan: return "NG-SAN";
  }
  return to_string(c.encoder_layer);
}

std::string decoder_label(const ModelConfig& c) {
  return c.decoder_layer == DecoderLayerKind::DynamicExpansion ? "Dynamic Exp NE=" + std::to_string(c.num_exp_dec)
                                                               : std::string("Base");
}

// best.pth, else the newest step checkpoint, else "".
std::string checkpoint_of(const RunInfo& run) {
  const std::string dir = run.out_dir + "/checkpoints";
  std::error_code ec;
  if (fs::is_regular_file(dir + "/best.pth", ec)) return dir + "/best.pth";
  try {
    return RunCheckpoints(dir, 1).latest_path();
  } catch (const std::exception&) {
    return "";
  }
}

std::string fixed(double value, int digits) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(digits) << value;
  return out.str();
}

json validation_json(const std::optional<ValidationRecord>& v) {
  if (!v) return nullptr;
  return {{"stage", v->stage}, {"epoch", v->epoch}, {"bleu1", v->bleu1},     {"bleu2", v->bleu2},
          {"bleu3", v->bleu3}, {"bleu4", v->bleu4}, {"rouge_l", v->rouge_l}, {"cider_d", v->cider_d}};
}

// With runs of more than one precision (a precision ablation): per precision, the
// final models' CIDEr-D over its runs, the figures its seed spread is judged by.
std::string precision_summary(const std::vector<RunsTableRow>& rows) {
  std::vector<std::pair<std::string, std::vector<double>>> groups;
  for (const auto& r : rows) {
    if (!r.last) continue;
    auto group = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == r.precision; });
    if (group == groups.end()) group = groups.insert(groups.end(), {r.precision, {}});
    group->second.push_back(100 * r.last->cider_d);
  }
  if (groups.size() < 2) return "";
  std::ostringstream out;
  out << "\nlast CIDEr-D by precision:\n";
  for (const auto& [precision, values] : groups) {
    const double n = static_cast<double>(values.size());
    const double mean = std::accumulate(values.begin(), values.end(), 0.0) / n;
    double squares = 0;
    for (const double v : values) squares += (v - mean) * (v - mean);
    const auto [low, high] = std::minmax_element(values.begin(), values.end());
    out << "  " << precision << ": " << values.size() << (values.size() == 1 ? " run" : " runs") << ", mean "
        << fixed(mean, 1);
    if (values.size() > 1) out << " (sd " << fixed(std::sqrt(squares / (n - 1)), 1) << ")";
    out << ", range " << fixed(*low, 1) << "-" << fixed(*high, 1) << "\n";
  }
  return out.str();
}

}  // namespace

RunsTableRow runs_table_row(const RunStore& store, const RunInfo& run) {
  RunsTableRow row;
  row.run = run.name;
  row.status = run_status(run, run_is_live(store.path(), run.id));
  const auto config = json::parse(run.config_json, nullptr, false);
  if (config.is_object() && config.contains("model") && config["model"].is_object()) {
    const auto model = ModelConfig::from_json(config["model"].dump(), "run '" + run.name + "' model");
    row.encoder = encoder_label(model);
    row.decoder = decoder_label(model);
    row.encoder_layer = to_string(model.encoder_layer);
    row.decoder_layer = to_string(model.decoder_layer);
  }
  if (config.is_object() && config.contains("seed") && config["seed"].is_number_unsigned())
    row.seed = config["seed"].get<uint64_t>();
  if (config.is_object() && config.contains("precision") && config["precision"].is_string())
    row.precision = config["precision"].get<std::string>();
  for (const auto& v : store.validations(run.id)) {
    if (!row.best || v.cider_d > row.best->cider_d) row.best = v;
    row.last = v;
  }
  if (const auto path = checkpoint_of(run); !path.empty()) {
    row.parameters = row.captioner_parameters = 0;
    for (const auto& [name, tensor] : read_state_dict(path)) {
      row.parameters += tensor.numel();
      if (name.rfind("swin_transf.", 0) != 0) row.captioner_parameters += tensor.numel();
    }
  }
  row.images_per_s = run.images_per_s;
  return row;
}

std::string runs_table_text(const std::vector<RunsTableRow>& rows) {
  // CIDEr-D is the best epoch's, as the other scores; "last" the final model's.
  const std::vector<std::string> header{"run", "encoder", "decoder", "precision", "seed", "B-1",    "B-2",
                                        "B-3", "B-4",     "R-L",     "CIDEr-D",   "last", "params", "img/s"};
  std::vector<std::vector<std::string>> cells{header};
  for (const auto& r : rows) {
    std::vector<std::string> line{r.run, r.encoder, r.decoder, r.precision, std::to_string(r.seed)};
    if (r.best) {
      for (const double v : {r.best->bleu1, r.best->bleu2, r.best->bleu3, r.best->bleu4, r.best->rouge_l})
        line.push_back(fixed(100 * v, 1));
      line.push_back(fixed(100 * r.best->cider_d, 1));
      line.push_back(fixed(100 * r.last->cider_d, 1));
    } else {
      line.insert(line.end(), 7, "-");
    }
    const double millions = static_cast<double>(r.captioner_parameters) / 1e6;
    line.push_back(r.captioner_parameters < 0 ? "-" : fixed(millions, 2) + "M");
    line.push_back(fixed(r.images_per_s, 0));
    if (r.status != "finished") line.front() += " (" + r.status + ")";
    cells.push_back(line);
  }
  std::vector<size_t> width(header.size(), 0);
  for (const auto& line : cells)
    for (size_t i = 0; i < line.size(); ++i) width[i] = std::max(width[i], line[i].size());
  std::ostringstream out;
  for (const auto& line : cells) {
    for (size_t i = 0; i < line.size(); ++i) {
      const bool text = i < 4;  // names left, numbers right
      out << (i ? "  " : "") << (text ? std::left : std::right) << std::setw(static_cast<int>(width[i])) << line[i];
    }
    out << "\n";
  }
  out << precision_summary(rows);
  return out.str();
}

std::string runs_table_json(const std::vector<RunsTableRow>& rows) {
  json out = json::array();
  for (const auto& r : rows) {
    json j = {{"run", r.run},
              {"status", r.status},
              {"encoder", r.encoder},
              {"decoder", r.decoder},
              {"encoder_layer", r.encoder_layer},
              {"decoder_layer", r.decoder_layer},
              {"seed", r.seed},
              {"precision", r.precision},
              {"parameters", r.parameters < 0 ? json(nullptr) : json(r.parameters)},
              {"captioner_parameters", r.captioner_parameters < 0 ? json(nullptr) : json(r.captioner_parameters)},
              {"images_per_s", r.images_per_s}};
    j["best"] = validation_json(r.best);
    j["last"] = validation_json(r.last);
    out.push_back(j);
  }
  return out.dump();
}

}  // namespace expnet

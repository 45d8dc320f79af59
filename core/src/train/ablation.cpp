// Ablation plans (see expnet/train/ablation.h).
#include "expnet/train/ablation.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#include "expnet/model/model_config.h"
#include "expnet/system/input_file.h"

namespace expnet {
namespace {

using nlohmann::json;

// Only what an ablation compares may differ (the model; the seed for noise; the
// precision, to check that bf16 trains as well); everything else is the base's,
// so every row saw the same data and schedule.
const std::set<std::string> kVariantKeys{"name", "model", "seed", "precision"};

TrainConfig base_recipe(const json& base, const std::string& source) {
  if (base.is_string()) return train_preset(base.get<std::string>());
  if (base.is_object()) return TrainConfig::from_json(base.dump(), source + " base");
  throw std::runtime_error(source + ": 'base' must be a training preset name (" + [] {
    std::string names;
    for (const auto& n : train_preset_names()) names += (names.empty() ? "" : ", ") + n;
    return names;
  }() + ") or a training config object");
}

TrainConfig variant_config(const TrainConfig& base, const json& variant, const std::string& ablation,
                           const std::string& where) {
  TrainConfig config = base;
  config.name = ablation + "-" + variant["name"].get<std::string>();
  if (const auto model = variant.find("model"); model != variant.end()) {
    if (!model->is_object()) throw std::runtime_error(where + ": 'model' must be an object of model keys to change");
    json merged = json::parse(base.model_json);
    for (const auto& item : model->items()) merged[item.key()] = item.value();
    const auto parsed = ModelConfig::from_json(merged.dump(), where + " model");
    parsed.validate(where + " model");
    config.model_json = parsed.to_json();
  }
  if (const auto seed = variant.find("seed"); seed != variant.end()) {
    if (!seed->is_number_unsigned()) throw std::runtime_error(where + ": 'seed' must be a non-negative integer");
    config.seed = seed->get<uint64_t>();
  }
  if (const auto precision = variant.find("precision"); precision != variant.end()) {
    // Through the config's own parser: one list of accepted values, one message.
    json with = json::parse(config.to_json());
    with["precision"] = *precision;
    config = TrainConfig::from_json(with.dump(), where);
  }
  return config;
}

}  // namespace

AblationPlan ablation_from_json(const std::string& text, const std::string& source) {
  const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) throw std::runtime_error(source + ": not valid JSON; check its brackets, commas and quotes");
  if (!doc.is_object()) throw std::runtime_error(source + ": an ablation file is a JSON object");
  for (const auto& item : doc.items())
    if (item.key() != "name" && item.key() != "base" && item.key() != "variants")
      throw std::runtime_error(source + ": unknown key '" + item.key() + "' (an ablation has name, base and variants)");
  if (!doc.contains("name") || !doc["name"].is_string() || doc["name"].get<std::string>().empty())
    throw std::runtime_error(source + ": 'name' (the runs' common prefix) must be a non-empty string");
  if (!doc.contains("base")) throw std::runtime_error(source + ": 'base' (the recipe every variant shares) is missing");
  if (!doc.contains("variants") || !doc["variants"].is_array() || doc["variants"].empty())
    throw std::runtime_error(source + ": 'variants' must be a non-empty list");
  AblationPlan plan;
  plan.name = doc["name"].get<std::string>();
  const TrainConfig base = base_recipe(doc["base"], source);
  std::set<std::string> names;
  for (size_t i = 0; i < doc["variants"].size(); ++i) {
    const auto& variant = doc["variants"][i];
    std::string where = source + " variant " + std::to_string(i);
    if (!variant.is_object() || !variant.contains("name") || !variant["name"].is_string() ||
        variant["name"].get<std::string>().empty())
      throw std::runtime_error(where + ": every variant is an object with a non-empty 'name'");
    const std::string name = variant["name"].get<std::string>();
    where += " '" + name + "'";
    if (!names.insert(name).second) throw std::runtime_error(where + ": another variant has this name");
    for (const auto& item : variant.items())
      if (!kVariantKeys.count(item.key()))
        throw std::runtime_error(
            where + ": key '" + item.key() +
            "' cannot differ between variants (only model, seed and precision may: every row trains "
            "with the same data and schedule); change the base recipe instead");
    plan.variants.push_back({name, variant_config(base, variant, plan.name, where)});
  }
  return plan;
}

AblationPlan read_ablation(const std::string& path) {
  return ablation_from_json(read_input_file(path, "ablation file", kMaxConfigBytes), "ablation file '" + path + "'");
}

}  // namespace expnet

#include "expnet/train/config_diff.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <stdexcept>

#include "expnet/train/train_config.h"

namespace expnet {
namespace {

using Json = nlohmann::ordered_json;

void flatten(const Json& value, const std::string& path, std::vector<std::pair<std::string, std::string>>& out) {
  if (value.is_object()) {
    if (value.empty()) out.emplace_back(path, "{}");
    for (auto it = value.begin(); it != value.end(); ++it) flatten(it.value(), path.empty() ? it.key() : path + "." + it.key(), out);
  } else if (value.is_array()) {
    if (value.empty()) out.emplace_back(path, "[]");
    for (size_t i = 0; i < value.size(); ++i) flatten(value[i], path + "[" + std::to_string(i) + "]", out);
  } else {
    out.emplace_back(path, value.dump(-1, ' ', false, Json::error_handler_t::replace));
  }
}

}  // namespace

std::vector<std::pair<std::string, std::string>> flatten_config(const std::string& json_text) {
  std::vector<std::pair<std::string, std::string>> out;
  const Json parsed = Json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_discarded()) flatten(parsed, std::string(), out);
  return out;
}

std::vector<ConfigDifference> diff_configs(const std::vector<std::string>& configs) {
  std::vector<ConfigDifference> out;
  if (configs.size() < 2) return out;
  std::vector<std::map<std::string, std::string>> leaves;
  std::map<std::string, int> keys;  // ordered union
  for (const auto& config : configs) {
    auto& map = leaves.emplace_back();
    for (auto& [key, value] : flatten_config(config)) {
      keys.emplace(key, 0);
      map.emplace(std::move(key), std::move(value));
    }
  }
  const std::string absent = "—";
  for (const auto& [key, unused] : keys) {
    ConfigDifference difference{key, {}};
    for (const auto& map : leaves) {
      const auto it = map.find(key);
      difference.values.push_back(it == map.end() ? absent : it->second);
    }
    const bool same = std::all_of(difference.values.begin(), difference.values.end(),
                                  [&](const std::string& v) { return v == difference.values.front(); });
    if (!same) out.push_back(std::move(difference));
  }
  return out;
}

std::vector<ConfigDifference> resume_config_changes(const std::string& stored_json, const TrainConfig& current) {
  std::string stored = stored_json;
  try {
    stored = TrainConfig::from_json(stored_json, "the run store").to_json();
  } catch (const std::exception&) {
    // Not a config this version reads (a newer one): compared as it is.
  }
  return diff_configs({stored, current.to_json()});
}

std::string describe_changes(const std::vector<ConfigDifference>& differences, size_t most) {
  std::string out;
  for (size_t i = 0; i < differences.size() && i < most; ++i) {
    const auto& d = differences[i];
    out += (i ? ", " : "") + d.key + " " + d.values.front() + " -> " + d.values.back();
  }
  if (differences.size() > most) out += " and " + std::to_string(differences.size() - most) + " more";
  return out;
}

}  // namespace expnet

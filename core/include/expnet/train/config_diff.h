// The keys on which training configs differ, flattened to paths
// ("stages[1].lr", "model.d_model") so nested recipes compare line by line:
// the Runs page's config diff and --resume's check that the recipe is the run's.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace expnet {

struct TrainConfig;

struct ConfigDifference {
  std::string key;                  // flattened path
  std::vector<std::string> values;  // one per config, as compact JSON; "—" where the key is absent
};

// The leaves of one config (JSON text; "" or text that is not JSON: none):
// path -> compact JSON of the value, in the document's order.
std::vector<std::pair<std::string, std::string>> flatten_config(const std::string& json_text);

// Every leaf key whose value is not the same in all `configs` (a key missing in
// some is a difference). Sorted by key; with fewer than two configs, none.
std::vector<ConfigDifference> diff_configs(const std::vector<std::string>& configs);

// What a --resume with `current` would change in a run started with
// `stored_json` (the run store's config). The stored config is read through
// TrainConfig first, so keys added to the schema since, at their defaults, are
// no change. Empty: the same recipe.
std::vector<ConfigDifference> resume_config_changes(const std::string& stored_json, const TrainConfig& current);

// "stages[0].lr 0.001 -> 0.002, seed 7 -> 8" (the first `most` keys, then "and N more").
std::string describe_changes(const std::vector<ConfigDifference>& differences, size_t most = 8);

}  // namespace expnet

// One table of DecodingOptions' JSON keys: the parser of the options a
// checkpoint carries, their writer, and the "options used" of --json output.
#include "expnet/decode/carried_decoding.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <functional>
#include <stdexcept>
#include <type_traits>

#include "system/json_fields.h"

namespace expnet {
namespace {

using nlohmann::json;

struct Key {
  std::string name;
  std::function<json(const DecodingOptions&)> get;
  // Sets the member from `value`; std::invalid_argument (json_fields' wording, naming `where`) when refused.
  std::function<void(const json& value, DecodingOptions&, const std::string& where)> set;
};

template <typename T>
Key member(const char* name, T DecodingOptions::*field) {
  return {name, [field](const DecodingOptions& o) { return json(o.*field); },
          [field](const json& value, DecodingOptions& o, const std::string& where) {
            o.*field = json_fields::value<T>(value, where);
          }};
}

Key search_key() {
  return {"search", [](const DecodingOptions& o) { return json(search_kind_name(o.search)); },
          [](const json& value, DecodingOptions& o, const std::string& where) {
            static const std::vector<std::string> kinds = {"beam", "greedy", "sample"};
            o.search = parse_search_kind(kinds[json_fields::choice(value, kinds, where)]);
          }};
}

// The JSON keys are the members' names (search aside): one spelling per key.
#define EXPNET_MEMBER_KEY(field) member(#field, &DecodingOptions::field)

const std::vector<Key>& table() {
  static const std::vector<Key> keys = {
      search_key(),
      EXPNET_MEMBER_KEY(beam_size),
      EXPNET_MEMBER_KEY(num_hypotheses),
      EXPNET_MEMBER_KEY(max_length),
      EXPNET_MEMBER_KEY(min_length),
      EXPNET_MEMBER_KEY(length_penalty),
      EXPNET_MEMBER_KEY(no_repeat_ngram_size),
      EXPNET_MEMBER_KEY(max_word_run),
      EXPNET_MEMBER_KEY(repetition_penalty),
      EXPNET_MEMBER_KEY(block_bad_endings),
      EXPNET_MEMBER_KEY(sampling_temperature),
      EXPNET_MEMBER_KEY(sampling_topk),
      EXPNET_MEMBER_KEY(sampling_topp),
      EXPNET_MEMBER_KEY(seed),
  };
  return keys;
}

#undef EXPNET_MEMBER_KEY

const Key& key_named(const std::string& name) {
  for (const auto& key : table())
    if (key.name == name) return key;
  throw std::logic_error("decoding options: no key " + name);
}

bool listed(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

}  // namespace

const char* search_kind_name(SearchKind kind) {
  return kind == SearchKind::Greedy ? "greedy" : kind == SearchKind::Sampling ? "sample" : "beam";
}

SearchKind parse_search_kind(const std::string& name) {
  for (const SearchKind kind : {SearchKind::Beam, SearchKind::Greedy, SearchKind::Sampling})
    if (name == search_kind_name(kind)) return kind;
  throw std::invalid_argument("unknown search '" + name + "' (use beam, greedy or sample)");
}

const std::vector<std::string>& decoding_option_keys() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& key : table()) out.push_back(key.name);
    return out;
  }();
  return names;
}

std::string decoding_options_json(const DecodingOptions& options) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const auto& key : table()) out[key.name] = key.get(options);
  return out.dump();
}

bool CarriedDecoding::carries(const std::string& key) const { return listed(keys, key); }

DecodingOptions CarriedDecoding::apply_to(DecodingOptions base, const std::vector<std::string>& keep) const {
  for (const auto& name : keys)
    if (!listed(keep, name)) {
      const Key& key = key_named(name);
      key.set(key.get(options), base, "decoding option '" + name + "'");
    }
  return base;
}

std::string CarriedDecoding::to_json() const {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const auto& name : keys) out[name] = key_named(name).get(options);
  return out.dump();
}

std::string CarriedDecoding::describe(const std::vector<std::string>& skip) const {
  std::string out;
  for (const auto& name : keys) {
    if (listed(skip, name)) continue;
    const json value = key_named(name).get(options);
    out += (out.empty() ? "" : ", ") + name + " " + (value.is_string() ? value.get<std::string>() : value.dump());
  }
  return out;
}

CarriedDecoding CarriedDecoding::from_json(const std::string& text, const std::string& source) {
  const auto fail = [&](const std::string& why) { throw std::runtime_error(source + ": " + why); };
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    fail("the decoding options are not valid JSON (" + std::string(e.what()) + ")");
  }
  if (!j.is_object()) fail("the decoding options must be a JSON object such as {\"beam_size\": 3}");
  CarriedDecoding out;
  for (const auto& item : j.items())
    if (!listed(decoding_option_keys(), item.key()))
      fail("unknown decoding option '" + item.key() + "' (known: " + joined(decoding_option_keys()) +
           "; docs/decoding.md)");
  for (const auto& key : table()) {
    const auto it = j.find(key.name);
    if (it == j.end()) continue;
    try {
      key.set(*it, out.options, "decoding option '" + key.name + "'");
    } catch (const std::invalid_argument& e) {
      fail(e.what());
    }
    out.keys.push_back(key.name);
  }
  // The engine's own checks; max_length 0 (the model's) is completed when a model decodes.
  DecodingOptions check = out.options;
  if (check.max_length == 0) check.max_length = 2;
  try {
    check.validate();
  } catch (const std::invalid_argument& e) {
    fail("decoding options " + out.to_json() + ": " + e.what());
  }
  return out;
}

}  // namespace expnet

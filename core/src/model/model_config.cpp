#include "expnet/model/model_config.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>
#include <sstream>
#include <stdexcept>

#include "expnet/system/input_file.h"
#include "system/json_fields.h"

namespace expnet {
namespace {

using nlohmann::json;

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

// One table drives reading, writing and the list of accepted keys, so the
// three can never disagree.
struct Field {
  const char* name;
  std::function<void(const json&, ModelConfig&, const std::string& where)> read;
  std::function<void(const ModelConfig&, json&)> write;
  bool optional = false;  // our extensions: absent means the reference's behaviour
};

// A member of any type json_fields reads (whole numbers, lists of them, flags, numbers).
template <typename T>
Field plain_field(const char* name, T ModelConfig::*member) {
  return {name,
          [member](const json& v, ModelConfig& c, const std::string& where) {
            c.*member = json_fields::value<T>(v, where);
          },
          [member, name](const ModelConfig& c, json& out) { out[name] = c.*member; }};
}

// A flag of ours that the reference lacks: optional (absent = false) and written
// only when true, so the reference's configurations read and write unchanged.
Field extension_flag(const char* name, bool ModelConfig::*member) {
  Field field = plain_field(name, member);
  field.write = [member, name](const ModelConfig& c, json& out) {
    if (c.*member) out[name] = true;
  };
  field.optional = true;
  return field;
}

// PNAIC's group count (expnet/model/pnaic.h): optional, absent = 0 = an AIC
// model, written only when set; when present it must be at least 1.
Field pnaic_groups_field() {
  return {"pnaic_groups",
          [](const json& v, ModelConfig& c, const std::string& where) {
            c.pnaic_groups = json_fields::whole_number(v, where);
            if (c.pnaic_groups < 1)
              throw std::invalid_argument(where + " must be at least 1 (the number of word groups decoded in "
                                          "parallel), got " + v.dump() + "; remove the key for an AIC model");
          },
          [](const ModelConfig& c, json& out) {
            if (c.pnaic_groups > 0) out["pnaic_groups"] = c.pnaic_groups;
          },
          /*optional=*/true};
}

// A layer kind (ModelConfig::encoder_layer / decoder_layer): optional, absent
// = v2's kind, written only when it is another.
template <typename Kind>
Field layer_kind_field(const char* name, Kind ModelConfig::*member, const std::vector<std::string>& (*names)()) {
  return {name,
          [member, names](const json& v, ModelConfig& c, const std::string& where) {
            c.*member = static_cast<Kind>(json_fields::choice(v, names(), where));
          },
          [member, names, name](const ModelConfig& c, json& out) {
            if (c.*member != Kind{}) out[name] = names()[static_cast<size_t>(c.*member)];
          },
          /*optional=*/true};
}

const std::vector<Field>& fields() {
  static const std::vector<Field> table = {
      plain_field("swin_img_size", &ModelConfig::swin_img_size),
      plain_field("swin_patch_size", &ModelConfig::swin_patch_size),
      plain_field("swin_in_chans", &ModelConfig::swin_in_chans),
      plain_field("swin_embed_dim", &ModelConfig::swin_embed_dim),
      plain_field("swin_depths", &ModelConfig::swin_depths),
      plain_field("swin_num_heads", &ModelConfig::swin_num_heads),
      plain_field("swin_window_size", &ModelConfig::swin_window_size),
      plain_field("swin_mlp_ratio", &ModelConfig::swin_mlp_ratio),
      plain_field("swin_qkv_bias", &ModelConfig::swin_qkv_bias),
      plain_field("swin_ape", &ModelConfig::swin_ape),
      plain_field("swin_patch_norm", &ModelConfig::swin_patch_norm),
      extension_flag("swin_conv_merging", &ModelConfig::swin_conv_merging),
      plain_field("final_swin_dim", &ModelConfig::final_swin_dim),
      plain_field("d_model", &ModelConfig::d_model),
      plain_field("N_enc", &ModelConfig::N_enc),
      plain_field("N_dec", &ModelConfig::N_dec),
      plain_field("ff", &ModelConfig::ff),
      plain_field("num_heads", &ModelConfig::num_heads),
      plain_field("num_exp_enc_list", &ModelConfig::num_exp_enc_list),
      plain_field("num_exp_dec", &ModelConfig::num_exp_dec),
      plain_field("max_seq_len", &ModelConfig::max_seq_len),
      pnaic_groups_field(),
      layer_kind_field("encoder_layer", &ModelConfig::encoder_layer, encoder_layer_names),
      layer_kind_field("decoder_layer", &ModelConfig::decoder_layer, decoder_layer_names),
  };
  return table;
}

std::vector<std::string> field_names() {
  std::vector<std::string> names;
  for (const auto& f : fields()) names.emplace_back(f.name);
  return names;
}

}  // namespace

const std::vector<std::string>& encoder_layer_names() {
  static const std::vector<std::string> names{"static_expansion", "dynamic_expansion", "self_attention", "ngsan"};
  return names;
}

const std::vector<std::string>& decoder_layer_names() {
  static const std::vector<std::string> names{"dynamic_expansion", "self_attention"};
  return names;
}

std::string to_string(EncoderLayerKind kind) { return encoder_layer_names().at(static_cast<size_t>(kind)); }
std::string to_string(DecoderLayerKind kind) { return decoder_layer_names().at(static_cast<size_t>(kind)); }

bool has_expansion(EncoderLayerKind kind) {
  return kind == EncoderLayerKind::StaticExpansion || kind == EncoderLayerKind::DynamicExpansion;
}
bool has_expansion(DecoderLayerKind kind) { return kind == DecoderLayerKind::DynamicExpansion; }

std::vector<std::string> ModelConfig::unused_key_notes() const {
  std::vector<std::string> notes;
  if (!has_expansion(encoder_layer))
    notes.push_back("num_exp_enc_list is unused: encoder_layer \"" + to_string(encoder_layer) + "\" has no expansion");
  if (!has_expansion(decoder_layer))
    notes.push_back("num_exp_dec is unused: decoder_layer \"" + to_string(decoder_layer) + "\" has no expansion");
  return notes;
}

int64_t ModelConfig::stage_window(int64_t stage) const {
  return std::min(stage_resolution(stage), swin_window_size);
}

int64_t ModelConfig::feature_tokens() const {
  const int64_t r = stage_resolution(num_stages() - 1);
  return r * r;
}

int64_t ModelConfig::total_enc_expansions() const {
  return std::accumulate(num_exp_enc_list.begin(), num_exp_enc_list.end(), int64_t{0});
}

void ModelConfig::validate(const std::string& source) const {
  const auto fail = [&](const std::string& why) { throw std::invalid_argument(source + ": " + why); };
  check_ranges(source);
  if (!(swin_mlp_ratio > 0)) fail("swin_mlp_ratio must be positive, got " + std::to_string(swin_mlp_ratio));
  if (swin_depths.empty()) fail("swin_depths must list at least one stage");
  if (swin_depths.size() != swin_num_heads.size())
    fail("swin_depths has " + std::to_string(swin_depths.size()) + " stages but swin_num_heads has " +
         std::to_string(swin_num_heads.size()));
  if (swin_depths.size() > 8) fail("swin_depths lists " + std::to_string(swin_depths.size()) + " stages (at most 8)");
  if (swin_patch_size > swin_img_size)
    fail("swin_patch_size " + std::to_string(swin_patch_size) + " exceeds swin_img_size " + std::to_string(swin_img_size));
  for (int64_t s = 0; s < num_stages(); ++s) {
    const std::string stage = "Swin stage " + std::to_string(s);
    if (swin_depths[s] <= 0) fail("swin_depths[" + std::to_string(s) + "] must be positive");
    if (swin_num_heads[s] <= 0) fail("swin_num_heads[" + std::to_string(s) + "] must be positive");
    const int64_t res = stage_resolution(s), dim = stage_dim(s);
    if (res <= 0)
      fail(stage + " has no tokens left: swin_img_size / swin_patch_size = " + std::to_string(patches_resolution()) +
           " is too small for " + std::to_string(num_stages()) + " stages");
    if (dim % swin_num_heads[s] != 0)
      fail(stage + " has " + std::to_string(dim) + " channels, not divisible by swin_num_heads[" + std::to_string(s) +
           "] = " + std::to_string(swin_num_heads[s]));
    if (static_cast<int64_t>(dim * swin_mlp_ratio) <= 0) fail(stage + ": swin_mlp_ratio gives an empty MLP");
    if (res > swin_window_size && res % swin_window_size != 0)
      fail(stage + " resolution " + std::to_string(res) + " is not a multiple of swin_window_size " +
           std::to_string(swin_window_size));
    if (s + 1 < num_stages() && res % 2 != 0)
      fail(stage + " resolution " + std::to_string(res) + " is odd: patch merging needs an even resolution");
  }
  const int64_t last_dim = stage_dim(num_stages() - 1);
  if (final_swin_dim != last_dim)
    fail("final_swin_dim is " + std::to_string(final_swin_dim) + " but the backbone ends with swin_embed_dim * 2^" +
         std::to_string(num_stages() - 1) + " = " + std::to_string(last_dim) + " channels");
  if (d_model % num_heads != 0)
    fail("d_model " + std::to_string(d_model) + " is not divisible by num_heads " + std::to_string(num_heads));
  if (pnaic_groups < 0) fail("pnaic_groups must be at least 1 (or absent for an AIC model), got " + std::to_string(pnaic_groups));
  if (num_exp_enc_list.empty()) fail("num_exp_enc_list must list at least one group");
  for (size_t i = 0; i < num_exp_enc_list.size(); ++i)
    if (num_exp_enc_list[i] <= 0) fail("num_exp_enc_list[" + std::to_string(i) + "] must be positive");
  // One dynamic expansion per layer has one NE: a list of groups means nothing to it.
  if (encoder_layer == EncoderLayerKind::DynamicExpansion && num_exp_enc_list.size() != 1)
    fail("num_exp_enc_list lists " + std::to_string(num_exp_enc_list.size()) +
         " groups, but encoder_layer \"dynamic_expansion\" takes exactly one coefficient, its NE (e.g. [16])");
  if (is_pnaic() && decoder_layer != DecoderLayerKind::DynamicExpansion)
    fail("pnaic_groups needs decoder_layer \"dynamic_expansion\": PNAIC decoding of a \"" +
         to_string(decoder_layer) + "\" decoder is not available yet");
  check_size(source);
}

// Each key against its range, before anything derived is computed (shifts,
// products) and long before a model is built: a stored config of 10^9 heads
// must not reach LibTorch's allocator.
void ModelConfig::check_ranges(const std::string& source) const {
  const auto check = [&](const std::string& name, int64_t value, int64_t max) {
    if (value >= 1 && value <= max) return;
    throw std::invalid_argument(source + ": " + name + (value <= 0 ? " must be positive, got " : " is ") +
                                std::to_string(value) + (value <= 0 ? " (" : ", outside the ") + "allowed range 1.." +
                                std::to_string(max) + (value <= 0 ? ")" : "") +
                                "; fix the model configuration (a checkpoint's own: rewrite it with "
                                "`expnet checkpoint export --model CONFIG`)");
  };
  const auto check_list = [&](const char* name, const std::vector<int64_t>& values, size_t max_count, int64_t max) {
    if (values.size() > max_count)
      throw std::invalid_argument(source + ": " + name + " lists " + std::to_string(values.size()) +
                                  " values, outside the allowed range 1.." + std::to_string(max_count));
    for (size_t i = 0; i < values.size(); ++i) check(std::string(name) + "[" + std::to_string(i) + "]", values[i], max);
  };
  check("swin_img_size", swin_img_size, 4096);
  check("swin_patch_size", swin_patch_size, 64);
  check("swin_in_chans", swin_in_chans, 16);
  check("swin_embed_dim", swin_embed_dim, 1024);
  check_list("swin_depths", swin_depths, 8, 64);
  check_list("swin_num_heads", swin_num_heads, 8, 256);
  check("swin_window_size", swin_window_size, 64);
  check("final_swin_dim", final_swin_dim, 8192);
  check("d_model", d_model, 8192);
  check("N_enc", N_enc, 64);
  check("N_dec", N_dec, 64);
  check("ff", ff, 65536);
  check("num_heads", num_heads, 256);
  check_list("num_exp_enc_list", num_exp_enc_list, 16, 4096);
  check("num_exp_dec", num_exp_dec, 4096);
  check("max_seq_len", max_seq_len, 4096);
  if (pnaic_groups > 0) check("pnaic_groups", pnaic_groups, 1024);  // negative: explained below
  if (!(swin_mlp_ratio <= 16)) {
    throw std::invalid_argument(source + ": swin_mlp_ratio is " + std::to_string(swin_mlp_ratio) +
                                ", outside the allowed range (0, 16]");
  }
}

// The dominant weight matrices only: below the exact count for every layer kind
// (biases, norms and embeddings are left out), so a checkpoint is never held to more.
double ModelConfig::estimated_parameters() const {
  double swin = 0;
  for (int64_t s = 0; s < num_stages(); ++s) {
    const double dim = static_cast<double>(stage_dim(s));
    swin += static_cast<double>(swin_depths[s]) * (4 + 2 * swin_mlp_ratio) * dim * dim;
    if (s + 1 < num_stages()) swin += 8 * dim * dim;  // patch merging into the next stage
  }
  const double d = static_cast<double>(d_model);
  const double layer = 4 * d * d + 2 * d * static_cast<double>(ff);
  return swin + static_cast<double>(N_enc + N_dec) * layer + static_cast<double>(final_swin_dim) * d;
}

// Every shifted Swin block keeps a mask of (resolution / window)^2 windows of
// window^4 entries: a large image size makes these the bulk of the model.
double ModelConfig::estimated_buffer_elements() const {
  double total = 0;
  for (int64_t s = 0; s < num_stages(); ++s) {
    if (!stage_shifts(s)) continue;
    const double resolution = static_cast<double>(stage_resolution(s));
    const double window = static_cast<double>(stage_window(s));
    total += static_cast<double>(swin_depths[s] / 2) * resolution * resolution * window * window;
  }
  return total;
}

// Keys in range can still multiply into a model no machine holds: the
// dominant weight matrices, estimated, must stay under a ceiling.
void ModelConfig::check_size(const std::string& source) const {
  constexpr double kMaxParameters = 2e9;  // 8 GB of float32; the released model has 0.23e9
  const double total = estimated_parameters();
  if (total > kMaxParameters)
    throw std::invalid_argument(source + ": the configuration would build about " +
                                std::to_string(static_cast<int64_t>(total / 1e6)) + " million parameters, more than the " +
                                std::to_string(static_cast<int64_t>(kMaxParameters / 1e6)) +
                                "M allowed; lower swin_embed_dim, swin_depths, d_model, ff, N_enc or N_dec");
}

ModelConfig ModelConfig::from_json(const std::string& text, const std::string& source) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {  // parse errors, and numbers past double's range ("1e400")
    throw std::invalid_argument(source + ": not valid JSON (" + e.what() + ")");
  }
  if (!doc.is_object()) throw std::invalid_argument(source + ": expected a JSON object of model settings");
  const auto names = field_names();
  for (const auto& item : doc.items())
    if (std::find(names.begin(), names.end(), item.key()) == names.end())
      throw std::invalid_argument(source + ": unknown key '" + item.key() + "' (accepted keys: " + join(names) + ")");
  ModelConfig config;
  std::vector<std::string> missing;
  for (const auto& field : fields()) {
    const auto it = doc.find(field.name);
    if (it == doc.end()) {
      if (!field.optional) missing.emplace_back(field.name);
      continue;
    }
    field.read(*it, config, source + ": '" + field.name + "'");
  }
  if (!missing.empty()) throw std::invalid_argument(source + ": missing key(s) " + join(missing));
  config.validate(source);
  return config;
}

ModelConfig ModelConfig::load(const std::string& path) {
  const std::string text = read_input_file(path, "model config", kMaxConfigBytes);
  try {
    return from_json(text, "model config '" + path + "'");
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(e.what());
  }
}

std::string ModelConfig::to_json(int indent) const {
  json out = json::object();
  for (const auto& field : fields()) field.write(*this, out);
  return out.dump(indent);
}

std::string ModelConfig::backbone_json() const {
  json out = json::object();
  for (const auto& field : fields()) {
    const std::string name = field.name;
    if (name.rfind("swin_", 0) == 0 || name == "final_swin_dim") field.write(*this, out);
  }
  return out.dump();
}

bool ModelConfig::operator==(const ModelConfig& o) const {
  return swin_img_size == o.swin_img_size && swin_patch_size == o.swin_patch_size &&
         swin_in_chans == o.swin_in_chans && swin_embed_dim == o.swin_embed_dim && swin_depths == o.swin_depths &&
         swin_num_heads == o.swin_num_heads && swin_window_size == o.swin_window_size &&
         swin_mlp_ratio == o.swin_mlp_ratio && swin_qkv_bias == o.swin_qkv_bias && swin_ape == o.swin_ape &&
         swin_patch_norm == o.swin_patch_norm && swin_conv_merging == o.swin_conv_merging &&
         final_swin_dim == o.final_swin_dim && d_model == o.d_model &&
         N_enc == o.N_enc && N_dec == o.N_dec && ff == o.ff && num_heads == o.num_heads &&
         num_exp_enc_list == o.num_exp_enc_list && num_exp_dec == o.num_exp_dec && max_seq_len == o.max_seq_len &&
         pnaic_groups == o.pnaic_groups && encoder_layer == o.encoder_layer && decoder_layer == o.decoder_layer;
}

ModelConfig official_model_config() { return ModelConfig{}; }  // the defaults are the released model

namespace {

// What a scaled-down preset sets; the rest is the released model's (patch 4,
// 2 + 2 layers, final_swin_dim = the last Swin stage's width).
struct ScaledSizes {
  int64_t img_size, embed_dim;
  std::vector<int64_t> depths, heads;
  int64_t window, d_model, ff, num_heads;
  std::vector<int64_t> exp_enc;
  int64_t exp_dec, max_seq_len;
};

ModelConfig scaled_config(const ScaledSizes& s) {
  ModelConfig c;
  c.swin_img_size = s.img_size;
  c.swin_embed_dim = s.embed_dim;
  c.swin_depths = s.depths;
  c.swin_num_heads = s.heads;
  c.swin_window_size = s.window;
  c.final_swin_dim = s.embed_dim << (s.depths.size() - 1);
  c.d_model = s.d_model;
  c.N_enc = 2;
  c.N_dec = 2;
  c.ff = s.ff;
  c.num_heads = s.num_heads;
  c.num_exp_enc_list = s.exp_enc;
  c.num_exp_dec = s.exp_dec;
  c.max_seq_len = s.max_seq_len;
  return c;
}

}  // namespace

// Sizes in ScaledSizes' order: image, embed, depths, heads, window | d_model, ff, heads,
// encoder expansion groups, decoder expansion slots, max_seq_len.
ModelConfig tiny_model_config() { return scaled_config({128, 24, {2, 2, 2, 2}, {1, 2, 3, 6}, 4, 64, 128, 4, {4, 8, 16}, 4, 20}); }

// 192x192 input, a 4-stage Swin with 32 base channels (48->24->12->6 token
// grids, window 6: the last stage is one window), d_model 256: 6,570,318
// parameters plus 513 per vocabulary word (embedding, projection, bias).
ModelConfig small_model_config() {
  return scaled_config({192, 32, {2, 2, 2, 2}, {1, 2, 4, 8}, 6, 256, 1024, 8, {16, 32, 64}, 8, 74});
}

// The built-in demo model (the shapes-demo recipe trains it): the training
// issue's calibration configuration (calibration_model_config) with convolutional
// patch merging, without which this small Swin does not learn shape words, and a
// wider Swin (embed 48, heads 2/4/8): on the varied look it named more held-out
// objects than embed 32 for the same steps (docs/training.md, "The varied look").
ModelConfig demo_model_config() {
  ModelConfig c = calibration_model_config();
  c.swin_conv_merging = true;
  c.swin_embed_dim = 48;
  c.swin_num_heads = {2, 4, 8};
  c.final_swin_dim = c.swin_embed_dim << (c.swin_depths.size() - 1);
  return c;
}

// The training issue's calibration configuration, which the authors' code was
// timed on too: what `expnet bench train` measures (docs/performance.md, "Figures behind choices in the code").
ModelConfig calibration_model_config() {
  return scaled_config({96, 32, {2, 2, 2}, {1, 2, 4}, 6, 128, 256, 4, {8, 16}, 4, 22});
}

// v1's captioner (Table 3's best row: static NE=64 encoder, dynamic NE=16
// decoder) on the released backbone, whose cached features it trains on.
ModelConfig v1_model_config() {
  ModelConfig c = official_model_config();
  c.num_exp_enc_list = {64};
  c.num_exp_dec = 16;
  return c;
}

// v1's layers at the demo model's size: trains here in minutes.
ModelConfig v1_shapes_model_config() {
  ModelConfig c = demo_model_config();
  c.num_exp_enc_list = {64};
  c.num_exp_dec = 16;
  return c;
}

namespace {

const std::vector<std::pair<const char*, ModelConfig (*)()>>& presets() {
  static const std::vector<std::pair<const char*, ModelConfig (*)()>> table = {
      {"official", official_model_config}, {"tiny", tiny_model_config},  {"small", small_model_config},
      {"demo", demo_model_config},         {"v1", v1_model_config},      {"v1-shapes", v1_shapes_model_config}};
  return table;
}

}  // namespace

std::vector<std::string> model_preset_names() {
  std::vector<std::string> names;
  for (const auto& [name, make] : presets()) names.emplace_back(name);
  return names;
}

ModelConfig resolve_model_config(const std::string& preset_or_path) {
  for (const auto& [name, make] : presets())
    if (preset_or_path == name) return make();
  if (preset_or_path.empty())
    throw std::runtime_error("--model is empty: give a preset (" + join(model_preset_names()) + ") or a JSON file");
  std::error_code ec;
  if (!std::filesystem::is_regular_file(preset_or_path, ec))
    throw std::runtime_error("--model '" + preset_or_path + "' is neither a preset (" + join(model_preset_names()) +
                             ") nor an existing JSON file");
  return ModelConfig::load(preset_or_path);
}

}  // namespace expnet

// expnet checkpoint export | inspect: converting and looking into .pth files.
#include <torch/torch.h>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "command.h"
#include "expnet/text/terminal_text.h"
#include "expnet/checkpoint/pickler.h"
#include "expnet/checkpoint/pth_file.h"
#include "expnet/checkpoint/state_dict.h"
#include "expnet/checkpoint/pth_writer.h"
#include "expnet/decode/carried_decoding.h"
#include "expnet/model/expansion_net.h"
#include "expnet/model/model_config.h"
#include "expnet/checkpoint/vocabulary_file.h"

namespace expnet::cli {
namespace {

struct ExportArgs {
  std::string model, checkpoint, out, vocab, decoding;
  CLI::Option* decoding_flag = nullptr;  // given: replaces (or with '{}' removes) the carried options
};

using ExpectedShapes = std::map<std::string, std::vector<int64_t>>;

// Names and shapes of every tensor the configured model has (weights left
// uninitialised: building it is cheap, and it is dropped before the file is read).
ExpectedShapes expected_entries(const ModelConfig& config, int64_t vocab_size) {
  ExpansionNet model(config, vocab_size, /*reference_init=*/false);
  ExpectedShapes out;
  for (const auto& p : model->named_parameters(true)) out[p.key()] = p.value().sizes().vec();
  for (const auto& b : model->named_buffers(true)) out[b.key()] = b.value().sizes().vec();
  return out;
}

// An exported file must caption: its tensors must be exactly the model's.
void require_matching(const ExpectedShapes& expected, const NamedTensors& state, const ExportArgs& args) {
  std::vector<std::string> missing, unexpected, misshaped;
  std::set<std::string> seen;
  for (const auto& [name, tensor] : state) {
    seen.insert(name);
    const auto it = expected.find(name);
    if (it == expected.end()) unexpected.push_back(name);
    else if (tensor.sizes().vec() != it->second) misshaped.push_back(name);
  }
  for (const auto& [name, shape] : expected)
    if (!seen.count(name)) missing.push_back(name);
  if (missing.empty() && unexpected.empty() && misshaped.empty()) return;
  const auto list = [](const std::vector<std::string>& names) {
    std::string text;
    for (size_t i = 0; i < names.size() && i < 8; ++i) text += (i ? ", " : "") + names[i];
    return names.size() > 8 ? text + " (+" + std::to_string(names.size() - 8) + " more)" : text;
  };
  std::string detail;
  if (!missing.empty()) detail += "\n  missing from the checkpoint: " + list(missing);
  if (!unexpected.empty()) detail += "\n  not in the model: " + list(unexpected);
  if (!misshaped.empty()) detail += "\n  mis-shaped: " + list(misshaped);
  throw std::runtime_error(args.checkpoint + " does not match --model " + (args.model.empty() ? "(its own config)" : args.model) +
                           " (nothing written; pass the config the checkpoint was trained with):" + detail);
}

void run_export(const ExportArgs& args) {
  CheckpointMetadata metadata;
  std::string wrapper;
  NamedTensors state;
  ModelConfig config;
  {
    PthFile file(args.checkpoint);
    const StateDictRef ref = find_state_dict(file.root(), args.checkpoint);
    wrapper = ref.wrapper;
    for (const auto& [name, info] : ref.entries) state.emplace_back(name, file.tensor(*info));
    const StoredMetadata stored = read_metadata(file);
    if (args.vocab.empty()) metadata.vocabulary_json = stored.vocabulary_json;
    if (!args.model.empty())
      config = resolve_model_config(args.model);
    else if (stored.config_json)
      config = ModelConfig::from_json(*stored.config_json, args.checkpoint);
    else
      throw std::runtime_error(args.checkpoint + " carries no model configuration (the authors' files do not): pass "
                               "--model PRESET|CONFIG.json (official for rf_model.pth)");
    // Kept unless --decoding replaces them; checked again by the writer either way.
    metadata.decoding_json = args.decoding_flag->count() > 0 ? args.decoding : stored.decoding_json;
  }
  metadata.config_json = config.to_json();
  if (!args.vocab.empty()) metadata.vocabulary_json = load_vocabulary(args.vocab).to_json();
  // The vocabulary's size shapes the embedding and projection; without one
  // (a reference file exported without --vocab) the projection's rows tell it.
  int64_t vocab_size = 0;
  if (metadata.vocabulary_json) vocab_size = Vocabulary::from_json(*metadata.vocabulary_json, args.checkpoint).size();
  for (const auto& [name, tensor] : state)
    if (vocab_size == 0 && name == "vocab_linear.weight" && tensor.dim() == 2) vocab_size = tensor.size(0);
  // Bounded before the model is built: a crafted [10^9, 0] tensor would make it allocate 256 GB.
  constexpr int64_t kMaxVocabularySize = 1'000'000;
  if (vocab_size > kMaxVocabularySize)
    throw std::runtime_error(args.checkpoint + ": a vocabulary of " + std::to_string(vocab_size) +
                             " words (the rows of vocab_linear.weight or the carried vocabulary) is more than the " +
                             std::to_string(kMaxVocabularySize) +
                             " a model may have; the file is damaged or not an ExpansionNet checkpoint");
  require_matching(expected_entries(config, std::max<int64_t>(vocab_size, 1)), state, args);
  save_checkpoint(args.out, state, metadata);
  const std::string carried =
      metadata.decoding_json ? CarriedDecoding::from_json(*metadata.decoding_json, args.out).describe() : "";
  spdlog::info("wrote {} ({} tensors from {}{}{}; decoding options: {})", args.out, state.size(), args.checkpoint,
               wrapper.empty() ? "" : ", under ", wrapper, carried.empty() ? "none" : carried);
  std::cout << args.out << "\n";
}

std::string shape_text(const std::vector<int64_t>& sizes) {
  std::string out = "[";
  for (size_t i = 0; i < sizes.size(); ++i) out += (i ? ", " : "") + std::to_string(sizes[i]);
  return out + "]";
}

void emit(const std::string& name, const pickle::TensorInfo& t, bool json) {
  if (json) {
    std::cout << nlohmann::json{{"name", json_safe(name)}, {"dtype", pickle::dtype_name(t.storage->dtype)},
                                {"shape", t.sizes}}.dump()
              << "\n";
  } else {
    std::cout << terminal_safe(name) << "  " << pickle::dtype_name(t.storage->dtype) << " " << shape_text(t.sizes) << "\n";
  }
}

// Every tensor of the file, named by the keys that lead to it ("a/b/3").
// A container met again is not expanded again: a file of shared sub-objects
// would otherwise list exponentially many paths, and a container inside itself
// would never end. The second path is marked instead ("<same object as a/b>",
// "<cycle: back to a>").
class TensorWalk {
 public:
  explicit TensorWalk(bool json) : json_(json) {}

  void visit(const pickle::Value& v, const std::string& path, int depth) {
    if (v.is(pickle::Kind::Tensor)) {
      emit(path, v.tensor, json_);
      ++tensors_;
      return;
    }
    const bool container = v.is(pickle::Kind::Dict) || v.is(pickle::Kind::List) || v.is(pickle::Kind::Tuple);
    if (!container || depth > 64) return;
    if (open_.count(&v)) return marker(path, "cycle_to", first_[&v]);
    if (const auto it = first_.find(&v); it != first_.end()) {
      if (tensors_under_[&v] > 0) marker(path, "same_as", it->second);  // nothing to point at otherwise
      return;
    }
    first_.emplace(&v, path.size() > 160 ? path.substr(0, 160) + "..." : path);
    open_.insert(&v);
    const size_t before = tensors_;
    const auto child = [&](const std::string& key) {
      return (path.empty() ? "" : path + "/") + (key.size() > 200 ? key.substr(0, 200) + "..." : key);
    };
    if (v.is(pickle::Kind::Dict)) {
      for (const auto& [k, item] : v.entries)
        visit(*item, child(k->is(pickle::Kind::Str) ? k->text : pickle::describe(*k)), depth + 1);
    } else {
      for (size_t i = 0; i < v.items.size(); ++i) visit(*v.items[i], child(std::to_string(i)), depth + 1);
    }
    open_.erase(&v);
    tensors_under_[&v] = tensors_ - before;
  }

 private:
  void marker(const std::string& path, const char* kind, const std::string& target) {
    const bool cycle = std::string(kind) == "cycle_to";
    if (json_)
      std::cout << nlohmann::json{{"name", json_safe(path)}, {kind, json_safe(target)}}.dump() << "\n";
    else
      std::cout << terminal_safe(path) << (cycle ? "  <cycle: back to " : "  <same object as ")
                << terminal_safe(target.empty() ? "the root" : target) << ">\n";
  }

  bool json_;
  size_t tensors_ = 0;
  std::unordered_map<const pickle::Value*, std::string> first_;      // container -> its first path
  std::unordered_map<const pickle::Value*, size_t> tensors_under_;   // tensors listed under it
  std::unordered_set<const pickle::Value*> open_;                    // containers on the current path
};

// "AIC", or "PNAIC, K groups, DEL id N" from the configuration and vocabulary
// a checkpoint of ours carries; "not recorded" for the authors' files.
std::string decoder_kind_text(const PthFile& file) {
  try {
    const auto stored = read_metadata(file);
    if (!stored.config_json) return "not recorded (no configuration in the file)";
    const auto config = ModelConfig::from_json(*stored.config_json, file.path());
    if (!config.is_pnaic()) return "AIC (autoregressive)";
    std::string del = "no vocabulary in the file";
    if (stored.vocabulary_json) {
      const auto id = Vocabulary::from_json(*stored.vocabulary_json, file.path()).del_id();
      del = id >= 0 ? "DEL id " + std::to_string(id) : "INVALID: the vocabulary has no DEL";
    }
    return "PNAIC, " + std::to_string(config.pnaic_groups) + " groups, " + del;
  } catch (const std::exception& e) {
    return std::string("INVALID: ") + e.what();
  }
}

struct InspectArgs {
  std::string file;
  bool json = false, all = false;
};

void run_inspect(const InspectArgs& args) {
  const std::string& path = args.file;
  const bool json = args.json;
  PthFile file(path);
  if (args.all) {
    TensorWalk(json).visit(file.root(), "", 0);
    return;
  }
  const StateDictRef ref = find_state_dict(file.root(), path);
  if (!json) {
    std::cout << terminal_safe(path) << ": " << file.format() << " format, state_dict "
              << (ref.wrapper.empty() ? "at the top level" : "under '" + terminal_safe(ref.wrapper) + "'") << ", "
              << ref.entries.size() << " tensors\n";
    std::string carried;
    try {  // a bad entry is reported here; loading the model refuses it
      const auto decoding = read_metadata(file).decoding_json;
      if (decoding) carried = CarriedDecoding::from_json(*decoding, "expnet_decoding").describe();
    } catch (const std::exception& e) {
      carried = std::string("INVALID: ") + e.what();
    }
    std::cout << "decoding options carried: "
              << (carried.empty() ? "none (caption and the studio use their defaults)" : carried) << "\n";
    std::cout << "decoder: " << decoder_kind_text(file) << "\n";
    if (file.root().is(pickle::Kind::Dict))
      for (const auto& [k, v] : file.root().entries)
        if (!(k->is(pickle::Kind::Str) && k->text == ref.wrapper) && !v->is(pickle::Kind::Tensor))
          std::cout << "  " << terminal_safe(pickle::describe(*k)) << ": " << terminal_safe(pickle::describe(*v, 2)) << "\n";
  }
  int64_t total = 0;
  bool overflow = false;  // crafted shapes can sum past int64
  for (const auto& [name, info] : ref.entries) {
    emit(name, *info, json);
    overflow = overflow || __builtin_add_overflow(total, info->numel(), &total);
  }
  if (!json)
    std::cout << "total elements: " << (overflow ? "more than 9223372036854775807 (the shapes cannot be real)" : std::to_string(total))
              << "\n";
}

const bool registered = register_command({"checkpoint", 40, [](CLI::App& root) {
  CLI::App* group = checkpoint_group(root);

  auto [exporter, export_args] = add_command<ExportArgs>(
      group, "export", "Write our .pth layout (model_state_dict + config + vocabulary) from any checkpoint we can read",
      run_export);
  exporter->add_option("--model", export_args->model,
                       "Model preset (official, tiny, small) or config JSON file; default: the checkpoint's own (ours)");
  exporter->add_option("--checkpoint", export_args->checkpoint, "Input checkpoint (.pth: reference, Swin or ours)")
      ->required()->check(CLI::ExistingFile);
  exporter->add_option("--out", export_args->out, "Output .pth")->required();
  exporter->add_option("--vocab", export_args->vocab, "Vocabulary (demo_coco_tokens.pickle or our JSON)")->check(CLI::ExistingFile);
  export_args->decoding_flag = exporter->add_option(
      "--decoding", export_args->decoding,
      "Decoding options the output carries, e.g. '{\"beam_size\": 3, \"max_word_run\": 1}'; '{}' removes them; "
      "default: the input's (docs/decoding.md)");

  auto [inspect, inspect_args] = add_command<InspectArgs>(
      group, "inspect", "List the state_dict entries (name, dtype, shape) of a .pth file", run_inspect);
  inspect->add_option("file", inspect_args->file, "Checkpoint (.pth)")->required()->check(CLI::ExistingFile);
  inspect->add_flag("--json", inspect_args->json, "One compact JSON object per entry: {\"name\",\"dtype\",\"shape\"}");
  inspect->add_flag("--all", inspect_args->all,
                    "Every tensor of the file (optimizer state too), named by its key path a/b/c; a container "
                    "met again is marked (<same object as a/b>, <cycle: back to a>), not listed again");
}});

}  // namespace
}  // namespace expnet::cli

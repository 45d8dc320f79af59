#include "decode_options_cli.h"

#include "expnet/model/demo_model.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace expnet::cli {

DecodingOptions DecodeArgs::options(const CarriedDecoding& carried) const {
  DecodingOptions o = decoding;
  o.search = parse_search_kind(search);
  return carried.apply_to(o, given());
}

std::vector<std::string> DecodeArgs::given() const {
  std::vector<std::string> keys;
  for (const auto& [key, flag] : flags)
    if (flag->count() > 0) keys.push_back(key);
  return keys;
}

void DecodeArgs::report(const CarriedDecoding& carried) const {
  if (carried.empty()) return;
  const std::vector<std::string> overridden = given();
  std::string to_override, overrides;
  for (const auto& [key, flag] : flags) {
    if (!carried.carries(key)) continue;
    const bool by_user = std::find(overridden.begin(), overridden.end(), key) != overridden.end();
    std::string& list = by_user ? overrides : to_override;
    list += (list.empty() ? "" : ", ") + (by_user ? key + " (" + flag->get_name() + ")" : flag->get_name());
  }
  const std::string used = carried.describe(overridden);
  if (used.empty())
    spdlog::info("decoding options of the checkpoint ({}) all overridden on the command line", carried.describe());
  else
    spdlog::info("decoding options from the checkpoint: {} (override with {}){}", used, to_override,
                 overrides.empty() ? std::string() : "; overridden on the command line: " + overrides);
}

nlohmann::json DecodeArgs::used_json(const DecodingOptions& used, const CarriedDecoding& carried) const {
  nlohmann::json out = nlohmann::json::parse(decoding_options_json(used));
  nlohmann::json from = nlohmann::json::array();
  const std::vector<std::string> overridden = given();
  for (const auto& key : carried.keys)
    if (std::find(overridden.begin(), overridden.end(), key) == overridden.end()) from.push_back(key);
  out["from_checkpoint"] = from;
  return out;
}

void add_model_options(CLI::App* command, ModelArgs& args) {
  command->add_option("--model", args.model, "Model preset (official, tiny, small, demo) or config JSON; default: from the checkpoint. --model demo alone is the built-in demo model");
  command->add_option("--checkpoint", args.checkpoint, "Checkpoint .pth (the authors' or ours)");
  command->add_option("--vocab", args.vocab, "Vocabulary (.pickle as released, or our .json); default: from the checkpoint");
  command->add_option("--precision", args.precision,
                      "Matrix products in fp32 (the reference's), bf16 (bfloat16, float32 accumulation), int8 "
                      "(CPU: dynamically quantised Linears) or auto (bf16 where the CPU has avx512_bf16/AMX, or on CUDA)")
      ->check(CLI::IsMember(precision_names()))
      ->capture_default_str();
}

Precision precision_to_run(const std::string& name, const std::string& device) {
  std::string note;
  const Precision precision = effective_precision(parse_precision(name, device), device, &note);
  if (!note.empty()) spdlog::warn("--precision {}: {}", name, note);
  return precision;
}

void add_decode_options(CLI::App* command, DecodeArgs& args) {
  DecodingOptions& d = args.decoding;
  auto& f = args.flags;
  f.emplace_back("search", command->add_option("--search", args.search, "beam, greedy or sample")
                               ->check(CLI::IsMember({"beam", "greedy", "sample"})));
  f.emplace_back("beam_size", command->add_option("--beam", d.beam_size, "Beam size")->check(CLI::Range(1, kMaxBeamSize)));
  f.emplace_back("num_hypotheses",
                 command->add_option("--n-best", d.num_hypotheses, "Captions per image")->check(CLI::PositiveNumber));
  f.emplace_back("max_length", command->add_option("--max-len", d.max_length,
                                                   "Max sequence length counting SOS (default: the model's max_seq_len)"));
  f.emplace_back("min_length", command->add_option("--min-len", d.min_length, "Words before EOS is allowed"));
  f.emplace_back("length_penalty", command->add_option("--length-penalty", d.length_penalty,
                                                       "alpha: score = sum log p / length^alpha (1 = reference)"));
  f.emplace_back("no_repeat_ngram_size", command->add_option("--no-repeat-ngram", d.no_repeat_ngram_size,
                                                             "Block repeated n-grams of this size (0 = off)"));
  f.emplace_back("max_word_run", command->add_option("--max-word-run", d.max_word_run,
                                                     "A word at most this many times in a row (0 = off)"));
  f.emplace_back("repetition_penalty", command->add_option("--repetition-penalty", d.repetition_penalty,
                                                           "Penalise repeated words (1 = off)"));
  f.emplace_back("block_bad_endings", command->add_flag("--block-bad-endings", d.block_bad_endings,
                                                        "No caption ending in a, the, of, on, ... (=false: allow them)"));
  f.emplace_back("sampling_temperature", command->add_option("--temperature", d.sampling_temperature, "Sampling temperature"));
  f.emplace_back("sampling_topk", command->add_option("--top-k", d.sampling_topk,
                                                      "Sampling: keep the k most likely words (0 = all)"));
  f.emplace_back("sampling_topp", command->add_option("--top-p", d.sampling_topp, "Sampling: nucleus mass (1 = off)"));
  f.emplace_back("seed", command->add_option("--seed", d.seed, "Sampling seed"));
  command->add_flag("--token-logprobs", args.token_logprobs, "Include per-token log-probs in --json output");
  command->footer("Decoding options a checkpoint of ours carries (expnet checkpoint inspect shows them) apply unless "
                  "the flag is given.");
}

std::unique_ptr<Captioner> load_captioner(const ModelArgs& args, const RuntimeOptions& runtime) {
  ModelSource source;
  source.model = args.model;
  source.checkpoint = args.checkpoint;
  source.vocab = args.vocab;
  source.device = runtime.device;
  if (source.checkpoint.empty() && !is_builtin_model_name(source.model))
    throw std::runtime_error("no checkpoint given: pass --checkpoint FILE.pth (with --model and --vocab for the authors' files), "
                             "or --model demo (pnaic-demo-k2, pnaic-demo-k5) for a built-in model");
  spdlog::info("loading model {} from {}", source.model.empty() ? std::string("(from checkpoint)") : source.model, source.checkpoint);
  auto captioner = Captioner::load(source);
  spdlog::info("model loaded in {:.0f} ms ({} words, device {})", captioner->load_ms(), captioner->vocabulary().size(), source.device);
  const Precision precision = precision_to_run(args.precision, runtime.device);
  captioner->set_precision(precision);
  if (precision != Precision::FP32) spdlog::info("matrix products in {}", precision_name(precision));
  return captioner;
}

}  // namespace expnet::cli

#include "decode_options_cli.h"

#include <spdlog/spdlog.h>

namespace expnet::cli {

DecodingOptions DecodeArgs::options() const {
  DecodingOptions o = decoding;
  o.search = search == "greedy" ? SearchKind::Greedy : search == "sample" ? SearchKind::Sampling : SearchKind::Beam;
  return o;
}

void add_model_options(CLI::App* command, ModelArgs& args) {
  command->add_option("--model", args.model, "Model preset (official, tiny, small, demo) or config JSON; default: from the checkpoint. --model demo alone is the built-in demo model");
  command->add_option("--checkpoint", args.checkpoint, "Checkpoint .pth (the authors' or ours)");
  command->add_option("--vocab", args.vocab, "Vocabulary (.pickle as released, or our .json); default: from the checkpoint");
}

void add_decode_options(CLI::App* command, DecodeArgs& args) {
  command->add_option("--search", args.search, "beam, greedy or sample")->check(CLI::IsMember({"beam", "greedy", "sample"}));
  DecodingOptions& d = args.decoding;
  command->add_option("--beam", d.beam_size, "Beam size")->check(CLI::PositiveNumber);
  command->add_option("--n-best", d.num_hypotheses, "Captions per image")->check(CLI::PositiveNumber);
  command->add_option("--max-len", d.max_length, "Max sequence length counting SOS (default: the model's max_seq_len)");
  command->add_option("--min-len", d.min_length, "Words before EOS is allowed");
  command->add_option("--length-penalty", d.length_penalty, "alpha: score = sum log p / length^alpha (1 = reference)");
  command->add_option("--no-repeat-ngram", d.no_repeat_ngram_size, "Block repeated n-grams of this size (0 = off)");
  command->add_option("--repetition-penalty", d.repetition_penalty, "Penalise repeated words (1 = off)");
  command->add_flag("--block-bad-endings", d.block_bad_endings, "No caption ending in a, the, of, on, ...");
  command->add_option("--temperature", d.sampling_temperature, "Sampling temperature");
  command->add_option("--top-k", d.sampling_topk, "Sampling: keep the k most likely words (0 = all)");
  command->add_option("--top-p", d.sampling_topp, "Sampling: nucleus mass (1 = off)");
  command->add_option("--seed", d.seed, "Sampling seed");
  command->add_flag("--token-logprobs", args.token_logprobs, "Include per-token log-probs in --json output");
}

std::unique_ptr<Captioner> load_captioner(const ModelArgs& args, const RuntimeOptions& runtime) {
  ModelSource source;
  source.model = args.model;
  source.checkpoint = args.checkpoint;
  source.vocab = args.vocab;
  source.device = runtime.device;
  if (source.checkpoint.empty() && source.model != "demo")
    throw std::runtime_error("no checkpoint given: pass --checkpoint FILE.pth (with --model and --vocab for the authors' files), "
                             "or --model demo for the built-in demo model");
  spdlog::info("loading model {} from {}", source.model.empty() ? std::string("(from checkpoint)") : source.model, source.checkpoint);
  auto captioner = Captioner::load(source);
  spdlog::info("model loaded in {:.0f} ms ({} words, device {})", captioner->load_ms(), captioner->vocabulary().size(), source.device);
  return captioner;
}

}  // namespace expnet::cli

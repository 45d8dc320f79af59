#include "decode_options_cli.h"

#include <spdlog/spdlog.h>

namespace expnet::cli {

DecodingOptions DecodeArgs::options() const {
  DecodingOptions o;
  o.search = search == "greedy" ? SearchKind::Greedy : search == "sample" ? SearchKind::Sampling : SearchKind::Beam;
  o.beam_size = beam;
  o.num_hypotheses = n_best;
  o.max_length = max_len;
  o.min_length = min_len;
  o.length_penalty = length_penalty;
  o.no_repeat_ngram_size = no_repeat_ngram;
  o.repetition_penalty = repetition_penalty;
  o.block_bad_endings = block_bad_endings;
  o.sampling_temperature = temperature;
  o.sampling_topk = top_k;
  o.sampling_topp = top_p;
  o.seed = seed;
  o.return_token_logprobs = true;
  return o;
}

void add_model_options(CLI::App* command, ModelArgs& args) {
  command->add_option("--model", args.model, "Model preset (official, tiny, small, demo) or config JSON; default: from the checkpoint. --model demo alone is the built-in demo model");
  command->add_option("--checkpoint", args.checkpoint, "Checkpoint .pth (the authors' or ours)");
  command->add_option("--vocab", args.vocab, "Vocabulary (.pickle as released, or our .json); default: from the checkpoint");
}

void add_decode_options(CLI::App* command, DecodeArgs& args) {
  command->add_option("--search", args.search, "beam, greedy or sample")->check(CLI::IsMember({"beam", "greedy", "sample"}));
  command->add_option("--beam", args.beam, "Beam size")->check(CLI::PositiveNumber);
  command->add_option("--n-best", args.n_best, "Captions per image")->check(CLI::PositiveNumber);
  command->add_option("--max-len", args.max_len, "Max sequence length counting SOS (default: the model's max_seq_len)");
  command->add_option("--min-len", args.min_len, "Words before EOS is allowed");
  command->add_option("--length-penalty", args.length_penalty, "alpha: score = sum log p / length^alpha (1 = reference)");
  command->add_option("--no-repeat-ngram", args.no_repeat_ngram, "Block repeated n-grams of this size (0 = off)");
  command->add_option("--repetition-penalty", args.repetition_penalty, "Penalise repeated words (1 = off)");
  command->add_flag("--block-bad-endings", args.block_bad_endings, "No caption ending in a, the, of, on, ...");
  command->add_option("--temperature", args.temperature, "Sampling temperature");
  command->add_option("--top-k", args.top_k, "Sampling: keep the k most likely words (0 = all)");
  command->add_option("--top-p", args.top_p, "Sampling: nucleus mass (1 = off)");
  command->add_option("--seed", args.seed, "Sampling seed");
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

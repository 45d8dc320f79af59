// Command-line options shared by the commands that load a model and decode
// (caption, explain, bench): one definition of each flag.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>

#include "expnet/decode/captioner.h"
#include "expnet/decode/decoding.h"
#include "expnet/system/system.h"

namespace expnet::cli {

struct ModelArgs {
  std::string model, checkpoint, vocab;
};

struct DecodeArgs {
  std::string search = "beam";
  int beam = 5, n_best = 1, max_len = 0, min_len = 0, no_repeat_ngram = 0;
  double length_penalty = 1.0, repetition_penalty = 1.0, temperature = 1.0, top_p = 1.0;
  int top_k = 0;
  uint64_t seed = 0;
  bool block_bad_endings = false, token_logprobs = false;
  DecodingOptions options() const;
};

void add_model_options(CLI::App* command, ModelArgs& args);
void add_decode_options(CLI::App* command, DecodeArgs& args);
std::unique_ptr<Captioner> load_captioner(const ModelArgs& args, const RuntimeOptions& runtime);

}  // namespace expnet::cli

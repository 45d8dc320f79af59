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
  DecodingOptions decoding;     // the other flags write straight into it
  bool token_logprobs = false;  // in --json output
  DecodingOptions options() const;  // `decoding` with --search applied
};

void add_model_options(CLI::App* command, ModelArgs& args);
void add_decode_options(CLI::App* command, DecodeArgs& args);
std::unique_ptr<Captioner> load_captioner(const ModelArgs& args, const RuntimeOptions& runtime);

}  // namespace expnet::cli

// Command-line options shared by the commands that load a model and decode
// (caption, explain, bench): one definition of each flag.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "expnet/decode/captioner.h"
#include "expnet/decode/carried_decoding.h"
#include "expnet/decode/decoding.h"
#include "expnet/model/precision.h"
#include "expnet/system/system.h"

namespace expnet::cli {

struct ModelArgs {
  std::string model, checkpoint, vocab;
  std::string precision = "fp32";  // fp32, bf16, int8 or auto (expnet/model/precision.h)
};

struct DecodeArgs {
  std::string search = "beam";
  DecodingOptions decoding;     // the other flags write straight into it
  bool token_logprobs = false;  // in --json output
  // Each decoding option's key (carried_decoding.h) and its flag, to tell which were given.
  std::vector<std::pair<std::string, CLI::Option*>> flags;

  // The options to decode with: the checkpoint's, overridden by every flag given
  // on the command line (--search applied).
  DecodingOptions options(const CarriedDecoding& carried = {}) const;
  // The keys whose flag was given.
  std::vector<std::string> given() const;
  // One stderr line naming the options that came from the checkpoint and the
  // flags that override them; nothing when the checkpoint carries none.
  void report(const CarriedDecoding& carried) const;
  // --json's "decoding": every option used and "from_checkpoint": the keys the checkpoint set.
  nlohmann::json used_json(const DecodingOptions& used, const CarriedDecoding& carried) const;
};

void add_model_options(CLI::App* command, ModelArgs& args);
// --precision NAME as it will run on `device` (effective_precision): fp32,
// with a warning saying why, where the device lacks the one asked for.
Precision precision_to_run(const std::string& name, const std::string& device);
void add_decode_options(CLI::App* command, DecodeArgs& args);
std::unique_ptr<Captioner> load_captioner(const ModelArgs& args, const RuntimeOptions& runtime);

}  // namespace expnet::cli

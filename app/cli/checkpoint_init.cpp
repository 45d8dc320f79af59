// expnet checkpoint init: write a randomly initialised (seeded) model as a
// checkpoint in our layout. Used to test loading and captioning at the
// official size without the released weights.
#include <torch/torch.h>

#include <spdlog/spdlog.h>

#include <iostream>

#include "command.h"
#include "expnet/model/expansion_net.h"
#include "expnet/decode/captioner.h"
#include "expnet/checkpoint/state_dict.h"
#include "expnet/checkpoint/pth_writer.h"
#include "expnet/model/state_entries.h"
#include "expnet/model/expansion_net.h"
#include "expnet/model/model_config.h"
#include "expnet/checkpoint/vocabulary_file.h"

namespace expnet::cli {
namespace {

struct InitArgs {
  std::string model, vocab, out;
  uint64_t seed = 0;
};

void run(const InitArgs& args) {
  auto captioner = Captioner::create_random(resolve_model_config(args.model), load_vocabulary(args.vocab), "cpu", args.seed);
  CheckpointMetadata metadata;
  metadata.config_json = captioner->config().to_json();
  metadata.vocabulary_json = captioner->vocabulary().to_json();
  save_checkpoint(args.out, module_state(captioner->model()), metadata);
  spdlog::info("wrote {} ({} parameters, seed {})", args.out, count_parameters(captioner->model()), args.seed);
}

const bool registered = register_command({"checkpoint-init", 60, [](CLI::App& root) {
  auto [command, args] =
      add_command<InitArgs>(checkpoint_group(root), "init", "Write a randomly initialised (seeded) model as a checkpoint", run);
  command->add_option("--model", args->model, "Model preset or config JSON")->required();
  command->add_option("--vocab", args->vocab, "Vocabulary (.pickle or .json)")->required();
  command->add_option("--out", args->out, "Output .pth")->required();
  command->add_option("--seed", args->seed, "Initialisation seed");
}});

}  // namespace
}  // namespace expnet::cli

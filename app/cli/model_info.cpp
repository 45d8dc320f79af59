// expnet model-info: the state_dict layout (names, shapes, dtypes, parameter or
// buffer) and parameter count of a configuration, as the reference names them.
#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <iomanip>
#include <iostream>
#include <sstream>

#include "command.h"
#include "expnet/checkpoint/pth_file.h"
#include "expnet/model/expansion_net.h"
#include "expnet/model/state_entries.h"

namespace expnet::cli {
namespace {

struct Options {
  std::string model = "official";
  int64_t vocab_size = 10000;
  bool json = false;
};

std::string shape_text(const torch::Tensor& t) {
  std::string out = "[";
  for (int64_t i = 0; i < t.dim(); ++i) out += (i ? ", " : "") + std::to_string(t.size(i));
  return out + "]";
}

void run(const Options& options) {
  const ModelConfig config = resolve_model_config(options.model);
  if (options.vocab_size <= 0) throw std::runtime_error("--vocab-size must be positive");
  // Default initialisation is enough: only names and shapes are reported.
  ExpansionNet model(config, options.vocab_size, /*reference_init=*/false);
  const auto entries = state_entries(*model);
  const int64_t total = count_parameters(*model);
  if (options.json) {
    nlohmann::json out = {{"model", options.model},
                          {"vocab_size", options.vocab_size},
                          {"total_parameters", total},
                          {"pnaic_groups", config.pnaic_groups},
                          {"encoder_layer", to_string(config.encoder_layer)},
                          {"decoder_layer", to_string(config.decoder_layer)},
                          {"notes", config.unused_key_notes()},
                          {"entries", nlohmann::json::array()}};
    for (const auto& e : entries)
      out["entries"].push_back({{"name", e.name},
                                {"shape", e.tensor.sizes().vec()},
                                {"dtype", dtype_name(e.tensor.scalar_type())},
                                {"kind", e.is_buffer ? "buffer" : "parameter"}});
    std::cout << out.dump() << std::endl;
    return;
  }
  size_t width = 0;
  for (const auto& e : entries) width = std::max(width, e.name.size());
  for (const auto& e : entries)
    std::cout << std::left << std::setw(static_cast<int>(width) + 2) << e.name << std::setw(20) << shape_text(e.tensor)
              << std::setw(9) << dtype_name(e.tensor.scalar_type()) << (e.is_buffer ? "buffer" : "parameter") << "\n";
  std::ostringstream mb;
  mb << std::fixed << std::setprecision(1) << static_cast<double>(total) * 4 / 1e6;
  std::cout << entries.size() << " entries, " << total << " parameters (" << mb.str()
            << " MB as float32), vocabulary size " << options.vocab_size << "\n";
  std::cout << "decoder: "
            << (config.is_pnaic() ? "PNAIC, " + std::to_string(config.pnaic_groups) +
                                        " groups (pnaic_group_embed; the vocabulary must hold DEL)"
                                  : std::string("AIC (autoregressive)"))
            << "\n";
  std::cout << "layers: encoder " << to_string(config.encoder_layer) << ", decoder " << to_string(config.decoder_layer)
            << "\n";
  for (const auto& note : config.unused_key_notes()) std::cout << "note: " << note << "\n";
}

const bool registered = register_command({"model-info", 30, [](CLI::App& root) {
  auto [command, options] = add_command<Options>(
      &root, "model-info", "List the state_dict entries and parameter count of a model configuration", run);
  command->add_option("--model", options->model, "Preset (official, tiny, small, demo, v1, v1-shapes) or model config JSON file")
      ->capture_default_str();
  command->add_option("--vocab-size", options->vocab_size,
                      "Vocabulary size (not part of the config; 10000 = the released COCO vocabulary)")
      ->capture_default_str();
  command->add_flag("--json", options->json, "Print one compact JSON object");
}});

}  // namespace
}  // namespace expnet::cli

#include "expnet/decode/captioner.h"

#include <torch/torch.h>

#include <chrono>
#include <optional>
#include <stdexcept>

#include "decode/step_decoders.h"
#include "expnet/checkpoint/pth_file.h"
#include "expnet/checkpoint/state_dict.h"
#include "expnet/checkpoint/pth_writer.h"
#include "expnet/model/demo_model.h"
#include "expnet/model/expansion_net.h"
#include "expnet/image/preprocess.h"
#include "expnet/system/system.h"
#include "expnet/checkpoint/vocabulary_file.h"

namespace expnet {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

ModelConfig choose_config(const ModelSource& source, const std::optional<StoredMetadata>& stored) {
  if (!source.model.empty()) {
    auto config = resolve_model_config(source.model);
    if (stored && stored->config_json) {
      const auto carried = ModelConfig::from_json(*stored->config_json, source.checkpoint);
      if (carried.is_pnaic() != config.is_pnaic() || carried.pnaic_groups != config.pnaic_groups) {
        const auto describe = [](const ModelConfig& c) {
          return c.is_pnaic() ? "a PNAIC model of " + std::to_string(c.pnaic_groups) + " groups"
                              : std::string("an AIC model");
        };
        throw std::runtime_error("'" + source.checkpoint + "' holds " + describe(carried) + " but --model " +
                                 source.model + " describes " + describe(config) +
                                 ": drop --model (the checkpoint carries its configuration)");
      }
    }
    return config;
  }
  if (stored && stored->config_json) return ModelConfig::from_json(*stored->config_json, source.checkpoint);
  throw std::runtime_error(source.checkpoint.empty()
                               ? std::string("no model given: pass --model PRESET|CONFIG.json")
                               : "'" + source.checkpoint +
                                     "' carries no model configuration (reference checkpoints do not): pass --model "
                                     "PRESET|CONFIG.json (e.g. --model official for rf_model.pth)");
}

Vocabulary choose_vocabulary(const ModelSource& source, const std::optional<StoredMetadata>& stored) {
  if (!source.vocab.empty()) return load_vocabulary(source.vocab);
  if (stored && stored->vocabulary_json) return Vocabulary::from_json(*stored->vocabulary_json, source.checkpoint);
  throw std::runtime_error(source.checkpoint.empty()
                               ? std::string("no vocabulary given: pass --vocab VOCAB.pickle|VOCAB.json")
                               : "'" + source.checkpoint +
                                     "' carries no vocabulary (reference checkpoints do not): pass --vocab "
                                     "demo_coco_tokens.pickle or a vocabulary JSON");
}

// The options the checkpoint carries, checked against the model they decode.
CarriedDecoding choose_decoding(const ModelSource& source, const std::optional<StoredMetadata>& stored,
                                const ModelConfig& config) {
  if (!stored || !stored->decoding_json) return {};
  const std::string where = source.checkpoint + " (its decoding options, 'expnet_decoding')";
  const std::string fix = "; rewrite them with `expnet checkpoint export --checkpoint " + source.checkpoint +
                          " --out FIXED.pth --decoding JSON` ('{}' removes them)";
  CarriedDecoding carried;
  try {
    carried = CarriedDecoding::from_json(*stored->decoding_json, where);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(e.what() + fix);
  }
  if (carried.options.max_length > config.max_seq_len)
    throw std::runtime_error(where + ": max_length " + std::to_string(carried.options.max_length) +
                             " exceeds the model's max_seq_len " + std::to_string(config.max_seq_len) + fix);
  return carried;
}

// Checked before the model is built: a configuration edited to ask for a far
// larger model than the file's weights would otherwise allocate it first (issue 45).
void check_config_fits_weights(const ModelSource& source, const ModelConfig& config, const PthFile& file) {
  double held = 0;
  for (const auto& storage : file.storages()) held += static_cast<double>(storage->numel);
  const double asked = config.estimated_parameters() + config.estimated_buffer_elements();
  if (asked <= 2 * held + 1e6) return;
  const auto millions = [](double n) {
    return n < 1e6 ? std::to_string(static_cast<int64_t>(n)) : std::to_string(static_cast<int64_t>(n / 1e6 + 0.5)) + " million";
  };
  throw std::runtime_error("'" + source.checkpoint + "' holds " + millions(held) + " values but " +
                           (source.model.empty() ? std::string("the configuration it carries")
                                                 : "--model " + source.model) +
                           " describes a model of at least " + millions(asked) +
                           " values: they do not belong together; " +
                           (source.model.empty() ? "the checkpoint's 'expnet_config' was edited or damaged: "
                                                   "pass --model with the configuration it was trained with"
                                                 : "pass the --model its weights were trained with"));
}

}  // namespace

struct Captioner::State {
  ExpansionNet model{nullptr};
  torch::Device device{torch::kCPU};
};

Captioner::~Captioner() = default;

// One construction path for both entry points: a checkpoint's weights, or a
// seeded reference initialisation (reference_init=false would leave the
// weights unwritten, since it is meant for models loaded right after).
std::unique_ptr<Captioner> Captioner::build(ModelConfig config, Vocabulary vocab, const std::string& device,
                                            const std::string& checkpoint, uint64_t seed) {
  const auto start = Clock::now();
  std::unique_ptr<Captioner> captioner(new Captioner());
  captioner->config_ = std::move(config);
  captioner->vocab_ = std::move(vocab);
  captioner->device_ = device;
  captioner->state_ = std::make_unique<State>();
  auto& state = *captioner->state_;
  state.device = torch::Device(device);
  if (captioner->config_.is_pnaic() && captioner->vocab_.del_id() < 0)
    throw std::runtime_error((checkpoint.empty() ? std::string("the model") : "'" + checkpoint + "'") +
                             " is a PNAIC model (pnaic_groups " + std::to_string(captioner->config_.pnaic_groups) +
                             ") but its vocabulary has no DEL word: use the vocabulary it was trained with "
                             "(a PNAIC run's checkpoints carry it)");
  torch::NoGradGuard no_grad;
  const bool random = checkpoint.empty();
  if (random) torch::manual_seed(seed);
  state.model = ExpansionNet(captioner->config_, captioner->vocab_.size(), /*reference_init=*/random);
  if (!random) load_state_dict(*state.model, checkpoint);
  state.model->eval();
  state.model->to(state.device);
  captioner->load_ms_ = ms_since(start);
  return captioner;
}

std::unique_ptr<Captioner> Captioner::load(const ModelSource& requested) {
  const auto start = Clock::now();
  check_device(requested.device);
  ModelSource source = requested;
  // `--model demo` alone is the built-in demo model; with --checkpoint it is
  // the demo configuration for weights of one's own.
  if (is_builtin_model_name(source.model) && source.checkpoint.empty()) {
    source.checkpoint = builtin_model_path(source.model);
    if (source.model != "demo") source.model.clear();  // a PNAIC model's configuration is in its file
  }
  std::optional<PthFile> file;
  std::optional<StoredMetadata> stored;
  if (!source.checkpoint.empty()) {
    file.emplace(source.checkpoint);
    stored = read_metadata(*file);
  }
  ModelConfig config = choose_config(source, stored);
  if (file) check_config_fits_weights(source, config, *file);
  file.reset();
  CarriedDecoding carried = choose_decoding(source, stored, config);
  if (config.is_pnaic() && !carried.carries("search")) {  // greedy per group is its only search
    carried.options.search = SearchKind::Greedy;
    carried.options.beam_size = 1;
    carried.keys.insert(carried.keys.begin(), "search");
  }
  auto captioner = build(std::move(config), choose_vocabulary(source, stored), source.device, source.checkpoint,
                         source.init_seed);
  captioner->carried_ = std::move(carried);
  captioner->load_ms_ = ms_since(start);  // metadata reading included
  return captioner;
}

std::unique_ptr<Captioner> Captioner::create_random(const ModelConfig& config, Vocabulary vocab,
                                                   const std::string& device, uint64_t seed) {
  check_device(device);
  return build(config, std::move(vocab), device, /*checkpoint=*/"", seed);
}

ExpansionNetImpl& Captioner::model() { return *state_->model; }

void Captioner::set_precision(Precision precision) {
  // The weights do not change after the load: the copies made for it are still good.
  if (precision == precision_) return;
  state_->model->set_precision(precision);
  precision_ = precision;
}
std::shared_ptr<ExpansionNetImpl> Captioner::shared_model() { return state_->model.ptr(); }

SpecialTokens Captioner::special_tokens(bool with_bad_endings) const {
  SpecialTokens special;
  special.sos = vocab_.sos_id();
  special.eos = vocab_.eos_id();
  if (with_bad_endings)
    for (const auto& word : bad_ending_words())
      if (const int64_t id = vocab_.id(word); id >= 0) special.bad_endings.push_back(id);
  return special;
}

GroupSpecialTokens Captioner::group_special_tokens() const {
  return {vocab_.sos_id(), vocab_.eos_id(), vocab_.del_id()};
}

at::Tensor Captioner::preprocess(const cv::Mat& rgb) const {
  return image_to_model_input(rgb, static_cast<int>(config_.swin_img_size));
}

at::Tensor Captioner::encode(const at::Tensor& images) {
  c10::InferenceMode inference;
  auto& model = *state_->model;
  return model.encode(model.backbone(images.to(state_->device)));
}

std::unique_ptr<StepDecoder> Captioner::make_decoder(const at::Tensor& encoded, DecoderKind kind) {
  if (kind == DecoderKind::Full) return make_full_decoder(*state_->model, encoded);
  return make_incremental_decoder(state_->model, encoded);
}

std::vector<DecodingResult> Captioner::decode_encoded(const at::Tensor& encoded, const DecodingOptions& options,
                                                      DecoderKind kind) {
  if (config_.is_pnaic()) return decode_groups(state_->model, encoded, group_special_tokens(), options);
  auto decoder = make_decoder(encoded, kind);
  return decode(*decoder, encoded.size(0), special_tokens(options.block_bad_endings), options);
}

DecodingOptions Captioner::complete(DecodingOptions options) const {
  if (options.max_length <= 0) options.max_length = static_cast<int>(config_.max_seq_len);
  if (options.max_length > config_.max_seq_len)
    throw std::invalid_argument("max length " + std::to_string(options.max_length) + " exceeds the model's max_seq_len " +
                                std::to_string(config_.max_seq_len));
  if (config_.is_pnaic()) {
    check_group_decoding_options(options);
    options.beam_size = 1;  // greedy per group: what is reported is what decodes
  }
  return options;
}

CaptionedImage Captioner::caption_file(const std::string& path, const DecodingOptions& requested,
                                      const std::function<void(const cv::Mat& rgb)>& on_loaded,
                                      const ImageLoadOptions& image_options, DecoderKind kind) {
  const DecodingOptions options = complete(requested);
  options.validate();  // what a caller (the studio's form) asks for is checked here, once for all callers
  torch::NoGradGuard no_grad;
  CaptionedImage item;
  item.image = path;
  auto start = Clock::now();
  cv::Mat rgb;
  at::Tensor input;
  try {
    rgb = load_image_rgb(path, image_options);
    input = preprocess(rgb);
  } catch (const std::exception& e) {
    item.error = e.what();
    return item;
  }
  const double preprocess_ms = ms_since(start);
  if (on_loaded) on_loaded(rgb);
  start = Clock::now();
  const at::Tensor encoded = encode(input);
  const double encode_ms = ms_since(start);
  start = Clock::now();
  auto results = decode_encoded(encoded, options, kind);  // the decoder's set-up counts as decoding
  item.ms = {load_ms_, preprocess_ms, encode_ms, ms_since(start)};
  item.captions = std::move(results.at(0).hypotheses);
  item.steps = results.at(0).steps;
  for (const auto& h : item.captions) item.texts.push_back(vocab_.decode_text(h.tokens));
  return item;
}

std::vector<CaptionedImage> Captioner::caption_files(const std::vector<std::string>& paths,
                                                     const DecodingOptions& requested,
                                                     const ImageLoadOptions& image_options, int batch,
                                                     DecoderKind kind) {
  std::vector<CaptionedImage> out(paths.size());
  if (batch <= 1) {
    for (size_t i = 0; i < paths.size(); ++i) out[i] = caption_file(paths[i], requested, {}, image_options, kind);
    return out;
  }
  const DecodingOptions options = complete(requested);
  torch::NoGradGuard no_grad;
  for (size_t first = 0; first < paths.size(); first += static_cast<size_t>(std::max(1, batch))) {
    const size_t last = std::min(paths.size(), first + static_cast<size_t>(std::max(1, batch)));
    std::vector<size_t> good;
    std::vector<at::Tensor> inputs;
    auto start = Clock::now();
    for (size_t i = first; i < last; ++i) {
      out[i].image = paths[i];
      try {
        inputs.push_back(preprocess(load_image_rgb(paths[i], image_options)));
        good.push_back(i);
      } catch (const std::exception& e) {
        out[i].error = e.what();
      }
    }
    if (good.empty()) continue;
    const double preprocess_ms = ms_since(start);
    start = Clock::now();
    auto encoded = encode(torch::cat(inputs, 0));
    const double encode_ms = ms_since(start);
    start = Clock::now();
    // The decoder's set-up (cross-attention keys and values) counts as decoding,
    // for AIC and PNAIC alike.
    auto results = decode_encoded(encoded, options, kind);
    const double decode_ms = ms_since(start);
    const double share = 1.0 / static_cast<double>(good.size());  // batch times split evenly per image
    for (size_t k = 0; k < good.size(); ++k) {
      auto& item = out[good[k]];
      item.captions = std::move(results[k].hypotheses);
      item.steps = results[k].steps;
      for (const auto& h : item.captions) item.texts.push_back(vocab_.decode_text(h.tokens));
      item.ms = {load_ms_, preprocess_ms * share, encode_ms * share, decode_ms * share};
    }
  }
  return out;
}

}  // namespace expnet

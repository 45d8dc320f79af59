// A loaded captioning model ready to caption images: model + vocabulary +
// device, the preprocessing of the model's input size, and the decoders that
// the search strategies drive. Used by `expnet caption`, `expnet explain`,
// the benchmarks and the studio's workers.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "expnet/decode/carried_decoding.h"
#include "expnet/decode/decoding.h"
#include "expnet/decode/group_decoding.h"
#include "expnet/image/image_decode.h"
#include "expnet/model/model_config.h"
#include "expnet/model/precision.h"
#include "expnet/text/vocabulary.h"

// Declared only: callers that pass no tensors compile without LibTorch's headers.
namespace at {
class Tensor;
}  // namespace at

namespace expnet {

class ExpansionNetImpl;

struct ModelSource {
  std::string model;       // preset name or config JSON path; empty = from the checkpoint's metadata
  std::string checkpoint;  // .pth (reference layout or ours); empty = randomly initialised (seeded)
  std::string vocab;       // .pickle or .json; empty = from the checkpoint's metadata
  std::string device = "cpu";
  uint64_t init_seed = 0;  // for randomly initialised models (benchmarks)
};

// How decoding steps are computed. Full recomputes the whole prefix and the
// cross-attention keys/values at every step, as the reference does;
// Incremental caches them and costs one new position per step.
enum class DecoderKind { Full, Incremental };

struct CaptionTiming {
  double load = 0, preprocess = 0, encode = 0, decode = 0;  // milliseconds
};

struct CaptionedImage {
  std::string image;  // as given
  std::string error;  // non-empty when the image could not be captioned
  std::vector<Hypothesis> captions;
  std::vector<std::string> texts;  // caption words joined, one per hypothesis
  int steps = 0;                   // decoder steps spent on this image
  CaptionTiming ms;
};

class Captioner {
 public:
  // Throws std::runtime_error naming the file and the reason on any failure.
  static std::unique_ptr<Captioner> load(const ModelSource& source);
  // A randomly initialised model (seeded): benchmarks and tests of speed.
  static std::unique_ptr<Captioner> create_random(const ModelConfig& config, Vocabulary vocab,
                                                  const std::string& device, uint64_t seed);
  ~Captioner();

  const ModelConfig& config() const { return config_; }
  const Vocabulary& vocabulary() const { return vocab_; }
  // The decoding options the checkpoint carries (none for the authors' files):
  // callers start from carried_decoding().apply_to(...) and let the user override.
  // A PNAIC model's always include search greedy (its only search).
  const CarriedDecoding& carried_decoding() const { return carried_; }
  ExpansionNetImpl& model();
  std::shared_ptr<ExpansionNetImpl> shared_model();  // for decoder states, which hold the model
  const std::string& device() const { return device_; }
  double load_ms() const { return load_ms_; }
  // Matrix products in bf16 or fp32 from now on (ExpansionNetImpl::set_precision).
  // Call between captions, not during one.
  void set_precision(Precision precision);
  Precision precision() const { return precision_; }
  SpecialTokens special_tokens(bool with_bad_endings) const;
  // A PNAIC model (config().is_pnaic()): decode_groups instead of decode.
  GroupSpecialTokens group_special_tokens() const;

  // Decoded RGB image -> 1 x 3 x S x S normalised input (Pillow-exact resize).
  at::Tensor preprocess(const cv::Mat& rgb) const;
  // B x 3 x S x S -> encoder output B x N x d_model (backbone + encoder).
  at::Tensor encode(const at::Tensor& images);
  std::unique_ptr<StepDecoder> make_decoder(const at::Tensor& encoded, DecoderKind kind);
  // Decodes an encoded batch with the model's kind of decoder: the search
  // strategies over make_decoder(kind) for AIC, decode_groups for PNAIC (which
  // has one decoder kind). `options` as complete() returns them.
  std::vector<DecodingResult> decode_encoded(const at::Tensor& encoded, const DecodingOptions& options,
                                             DecoderKind kind = DecoderKind::Incremental);
  // Defaults filled in (max_length = model max_seq_len when 0). Throws
  // std::invalid_argument for options the model cannot decode with (a PNAIC
  // model decodes greedily: check_group_decoding_options).
  DecodingOptions complete(DecodingOptions options) const;

  // One image read from disk, in the stages a UI follows: `on_loaded` sees the
  // decoded RGB image before it is encoded (a thumbnail), options.on_step the
  // search's steps. A file that cannot be read is returned with `error` set;
  // anything thrown by the callbacks or the model propagates.
  CaptionedImage caption_file(const std::string& path, const DecodingOptions& options,
                              const std::function<void(const cv::Mat& rgb)>& on_loaded = {},
                              const ImageLoadOptions& image_options = {}, DecoderKind kind = DecoderKind::Incremental);

  // Captions images read from disk, `batch` at a time (batch 1: caption_file each);
  // bad files get an error entry and the others continue.
  std::vector<CaptionedImage> caption_files(const std::vector<std::string>& paths, const DecodingOptions& options,
                                            const ImageLoadOptions& image_options = {}, int batch = 1,
                                            DecoderKind kind = DecoderKind::Incremental);

 private:
  Captioner() = default;
  static std::unique_ptr<Captioner> build(ModelConfig config, Vocabulary vocab, const std::string& device,
                                          const std::string& checkpoint, uint64_t seed);
  ModelConfig config_;
  Vocabulary vocab_;
  CarriedDecoding carried_;
  std::string device_;
  double load_ms_ = 0;
  Precision precision_ = Precision::FP32;
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace expnet

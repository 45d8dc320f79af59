// ExpansionNet v2 architecture settings. The JSON form uses exactly the argument
// names of the reference constructor (End_ExpansionNet_v2), so a configuration
// written for the authors' code reads here unchanged. The vocabulary size is not
// part of it: it always comes from the vocabulary the model is used with.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace expnet {

// The layer kinds of the ablations (docs/model.md, "Layer kinds"): what mixes
// the sequence in each encoder and decoder layer. The defaults are v2's.
enum class EncoderLayerKind {
  StaticExpansion,   // "static_expansion": v2's (num_exp_enc_list = its groups)
  DynamicExpansion,  // "dynamic_expansion": v1's bidirectional dynamic expansion (num_exp_enc_list = [NE])
  SelfAttention,     // "self_attention": the base Transformer's
  NgSan,             // "ngsan": NG-SAN's normalised, geometry-aware self-attention over the backbone grid
};
enum class DecoderLayerKind {
  DynamicExpansion,  // "dynamic_expansion": v2's causal dynamic expansion (num_exp_dec slots)
  SelfAttention,     // "self_attention": the base Transformer's masked self-attention
};
const std::vector<std::string>& encoder_layer_names();  // in the enum's order
const std::vector<std::string>& decoder_layer_names();
std::string to_string(EncoderLayerKind kind);
std::string to_string(DecoderLayerKind kind);
bool has_expansion(EncoderLayerKind kind);  // static or dynamic expansion
bool has_expansion(DecoderLayerKind kind);

struct ModelConfig {
  // Swin Transformer backbone
  int64_t swin_img_size = 384;
  int64_t swin_patch_size = 4;
  int64_t swin_in_chans = 3;
  int64_t swin_embed_dim = 192;
  std::vector<int64_t> swin_depths{2, 2, 18, 2};
  std::vector<int64_t> swin_num_heads{6, 12, 24, 48};
  int64_t swin_window_size = 12;
  double swin_mlp_ratio = 4.0;
  bool swin_qkv_bias = true;
  bool swin_ape = false;
  bool swin_patch_norm = true;
  // Not an argument of the reference (whose Swin always merges 2x2 patches by
  // concatenation and a linear map): when true, each patch merging is a 3x3
  // convolution, ReLU and 2x2 max pooling. A small Swin trained from scratch on a
  // few thousand images learns shapes with it and not without it (docs/training.md,
  // "The demo model and shape words"). Written to JSON only when true, so every
  // configuration of the reference stays readable by the authors' code.
  bool swin_conv_merging = false;
  int64_t final_swin_dim = 1536;  // = swin_embed_dim * 2^(stages-1)
  // Captioner
  int64_t d_model = 512;
  int64_t N_enc = 3;
  int64_t N_dec = 3;
  int64_t ff = 2048;
  int64_t num_heads = 8;                                   // cross-attention heads
  std::vector<int64_t> num_exp_enc_list{32, 64, 128, 256, 512};  // static expansion groups
  int64_t num_exp_dec = 16;                                // dynamic expansion slots
  int64_t max_seq_len = 74;                                // learned positions (counts SOS)
  // Not an argument of the reference: 0 = an autoregressive (AIC) decoder; K >= 1
  // = a PNAIC decoder of K word groups decoded in parallel (expnet/model/pnaic.h),
  // with a learned group embedding and DEL in its vocabulary. Written to JSON
  // only when set.
  int64_t pnaic_groups = 0;
  bool is_pnaic() const { return pnaic_groups > 0; }
  // Not arguments of the reference: the ablations' layer kinds. Written to JSON
  // only when not the default, so v2 configurations keep their exact form.
  EncoderLayerKind encoder_layer = EncoderLayerKind::StaticExpansion;
  DecoderLayerKind decoder_layer = DecoderLayerKind::DynamicExpansion;
  // Keys the layer kinds leave unused (e.g. num_exp_dec with a self-attention
  // decoder), one line each for model-info; empty for v2's kinds.
  std::vector<std::string> unused_key_notes() const;

  // Derived shapes.
  int64_t num_stages() const { return static_cast<int64_t>(swin_depths.size()); }
  int64_t patches_resolution() const { return swin_img_size / swin_patch_size; }
  int64_t stage_resolution(int64_t stage) const { return patches_resolution() >> stage; }
  int64_t stage_dim(int64_t stage) const { return swin_embed_dim << stage; }
  // Window of a stage: the stage's resolution when it does not exceed the window
  // (then the stage also never shifts), as in the reference Swin.
  int64_t stage_window(int64_t stage) const;
  bool stage_shifts(int64_t stage) const { return stage_resolution(stage) > swin_window_size; }
  int64_t feature_tokens() const;  // backbone output length (144 for official)
  int64_t total_enc_expansions() const;
  // Lower estimates of what the model holds (weights; Swin's attention-mask
  // buffers): compared with a checkpoint's tensors before anything is built.
  double estimated_parameters() const;
  double estimated_buffer_elements() const;

  // Throws std::invalid_argument describing the first inconsistency
  // (e.g. d_model not divisible by num_heads), prefixed with `source`.
  // Also bounds each key (d_model at most 8192, ...: check_ranges) and the
  // estimated parameter count (check_size), so no path builds a model that
  // cannot fit in memory; every checkpoint's stored config goes through it.
  void validate(const std::string& source = "model config") const;

  // Strict: unknown, missing or mistyped keys are errors naming the key.
  static ModelConfig from_json(const std::string& text, const std::string& source = "model config");
  static ModelConfig load(const std::string& path);
  std::string to_json(int indent = 1) const;  // the reference's argument names
  // The backbone's keys only (swin_*, final_swin_dim), compact: what backbone
  // features depend on besides the weights (feature caches, backbone_checkpoint).
  std::string backbone_json() const;

  bool operator==(const ModelConfig& other) const;

 private:
  void check_ranges(const std::string& source) const;
  void check_size(const std::string& source) const;

 public:
  bool operator!=(const ModelConfig& other) const { return !(*this == other); }
};

// Built-in configurations.
ModelConfig official_model_config();  // the released COCO model (Swin-L 384, 233.8M parameters)
ModelConfig tiny_model_config();      // the tiny reference fixture (tests)
ModelConfig small_model_config();     // CPU-friendly, a few million parameters (docs/model.md)
ModelConfig demo_model_config();      // the built-in demo model (expnet/model/demo_model.h), trained by shapes-demo
ModelConfig calibration_model_config();  // the demo's size with the reference's patch merging (bench train)
// ExpansionNet v1 (d_model 512, N 3, static NE=64 encoder, dynamic NE=16 decoder,
// ff 2048, 8 heads) over the released Swin-L's features (train it on cached
// features: `expnet features extract`).
ModelConfig v1_model_config();
ModelConfig v1_shapes_model_config();  // v1's layers at the demo's size, for this machine
std::vector<std::string> model_preset_names();  // "official", "tiny", "small", "demo", "v1", "v1-shapes"

// `--model` argument: a preset name, or the path of a JSON file in the format
// above. Throws std::runtime_error naming the argument and what to do.
ModelConfig resolve_model_config(const std::string& preset_or_path);

}  // namespace expnet

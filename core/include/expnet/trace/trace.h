// Traces: what the model looked at while writing a caption. A teacher-forced
// full forward over a chosen caption (no search) returns the cross-attention
// of every decoder layer and head over the backbone grid for every generated
// token, and the Static/Dynamic Expansion matrices (docs/traces.md).
// The model's modules fill ExpansionTrace / DecoderLayerTrace only when given
// a pointer, so the normal path computes nothing extra.
#pragma once

#include <ATen/core/Tensor.h>
#include <opencv2/core/mat.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "expnet/model/model_trace.h"

namespace expnet {

class Captioner;
struct ModelConfig;
class Vocabulary;

// ExpansionTrace, DecoderLayerTrace: expnet/model/model_trace.h.


// The trace of one caption of one image (batch dimension removed, float, CPU).
struct CaptionTrace {
  std::vector<int64_t> tokens;   // the caption, SOS first (EOS last when present)
  int64_t grid_side = 0;         // backbone grid is grid_side x grid_side = N tokens
  // Generated token k (= tokens[k+1]) is predicted from input position k, so
  // the arrays below have tokens.size()-1 entries along their first axis.
  at::Tensor token_logprobs;     // [S]: log p(tokens[k+1] | tokens[0..k])
  at::Tensor cross_attention;    // [S, N_dec, heads, N]
  std::vector<ExpansionTrace> encoder;  // per encoder layer (L = N)
  std::vector<ExpansionTrace> decoder;  // per decoder layer (T = S input positions)
};

// Teacher-forced full forward of `tokens` (SOS first, at least 2 tokens, at
// most max_seq_len + 1) over one preprocessed image (1 x 3 x S x S).
// Throws std::invalid_argument for a bad caption or image shape.
CaptionTrace trace_caption(Captioner& captioner, const at::Tensor& image, const std::vector<int64_t>& tokens);
// Throws std::invalid_argument saying what cannot be traced yet (a PNAIC model);
// callers check before decoding the caption they would trace.
void check_traceable(const ModelConfig& config);

// trace.json text (schema in docs/traces.md).
std::string trace_to_json(const CaptionTrace& trace, const Vocabulary& vocab, const std::string& image,
                          int image_width, int image_height, const std::string& caption);

// ---------------------------------------------------------------- rendering (OpenCV, BGR out)

// `weights` (grid x grid, CV_32F, >= 0) scaled so its maximum is 1, upsampled
// bilinearly to the image size, coloured with the JET colormap and
// alpha-blended over `rgb` (CV_8UC3, RGB). Returns BGR (ready for imencode).
cv::Mat attention_overlay(const cv::Mat& rgb, const cv::Mat& weights, double alpha = 0.5);
// Tiles (BGR, all the same size) in rows x cols with labels and a 2 px gap.
cv::Mat tile_grid(const std::vector<cv::Mat>& tiles, int cols, const std::vector<std::string>& labels);
// PNG bytes of a BGR image; throws std::runtime_error when encoding fails.
std::string encode_png(const cv::Mat& bgr);

}  // namespace expnet

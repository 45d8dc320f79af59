// Teacher-forced traces of a caption, trace.json, and the overlay rendering.
#include "expnet/trace/trace.h"

#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <torch/torch.h>

#include <cmath>
#include <stdexcept>

#include "expnet/decode/captioner.h"
#include "expnet/model/expansion_net.h"
#include "expnet/text/vocabulary.h"

namespace expnet {
namespace {

// Drops the batch dimension and moves to CPU float for export.
// Undefined stays undefined (the expansion of a self-attention layer).
at::Tensor unbatched(const at::Tensor& t) {
  return t.defined() ? t.select(0, 0).to(torch::kCPU, torch::kFloat).contiguous() : t;
}

ExpansionTrace unbatched(const ExpansionTrace& t) {
  return {unbatched(t.z),          unbatched(t.forward_a),  unbatched(t.forward_b),
          unbatched(t.backward_a), unbatched(t.backward_b), unbatched(t.self_attention)};
}

nlohmann::json nested(const float* data, const std::vector<int64_t>& shape, size_t dim) {
  auto out = nlohmann::json::array();
  int64_t stride = 1;
  for (size_t d = dim + 1; d < shape.size(); ++d) stride *= shape[d];
  for (int64_t i = 0; i < shape[dim]; ++i) {
    if (dim + 1 == shape.size())
      out.push_back(data[i]);
    else
      out.push_back(nested(data + i * stride, shape, dim + 1));
  }
  return out;
}

nlohmann::json matrix_json(const at::Tensor& t) {
  const auto c = t.to(torch::kFloat).contiguous();
  const std::vector<int64_t> shape(c.sizes().begin(), c.sizes().end());
  return {{"shape", shape}, {"data", shape.empty() ? nlohmann::json(c.item<float>()) : nested(c.data_ptr<float>(), shape, 0)}};
}

// A layer's expansion matrices, or its self-attention weights when it has no expansion.
nlohmann::json expansion_json(const ExpansionTrace& t) {
  if (!t.has_expansion()) return {{"self_attention", matrix_json(t.self_attention)}};
  return {{"z", matrix_json(t.z)},
          {"forward_a", matrix_json(t.forward_a)},
          {"forward_b", matrix_json(t.forward_b)},
          {"backward_a", matrix_json(t.backward_a)},
          {"backward_b", matrix_json(t.backward_b)}};
}

}  // namespace

void check_traceable(const ModelConfig& config) {
  if (config.is_pnaic())
    throw std::invalid_argument("tracing a PNAIC model (" + std::to_string(config.pnaic_groups) +
                                " word groups) is not available yet: explain and the Attention page trace AIC "
                                "models; load its AIC teacher (e.g. the demo model) to see where it looks");
}

CaptionTrace trace_caption(Captioner& captioner, const at::Tensor& image, const std::vector<int64_t>& tokens) {
  const auto& config = captioner.config();
  check_traceable(config);
  if (tokens.size() < 2)
    throw std::invalid_argument("trace: the caption needs SOS and at least one generated token");
  if (static_cast<int64_t>(tokens.size()) - 1 > config.max_seq_len)
    throw std::invalid_argument("trace: caption of " + std::to_string(tokens.size()) +
                                " tokens exceeds the model's max_seq_len " + std::to_string(config.max_seq_len) + " + 1");
  if (image.dim() != 4 || image.size(0) != 1)
    throw std::invalid_argument("trace: expected one preprocessed image 1 x 3 x S x S");
  torch::NoGradGuard no_grad;
  auto& model = captioner.model();
  const auto device = model.input_linear->weight.device();

  CaptionTrace out;
  out.tokens = tokens;
  std::vector<ExpansionTrace> encoder;
  const auto enc_out = model.encode(model.backbone(image.to(device)), &encoder);
  const int64_t n = enc_out.size(1);
  out.grid_side = static_cast<int64_t>(std::lround(std::sqrt(static_cast<double>(n))));

  // Inputs are all tokens but the last; position k predicts tokens[k+1].
  const auto all = torch::tensor(tokens, torch::kLong).to(device);
  const int64_t steps = static_cast<int64_t>(tokens.size()) - 1;
  const auto inputs = all.narrow(0, 0, steps).unsqueeze(0);
  std::vector<DecoderLayerTrace> decoder;
  const auto log_probs =
      model.log_probs(model.decode_hidden(enc_out, inputs, causal_self_mask(inputs, -1), {}, &decoder));
  out.token_logprobs = log_probs.select(0, 0).gather(1, all.narrow(0, 1, steps).unsqueeze(1)).squeeze(1)
                           .to(torch::kCPU, torch::kFloat).contiguous();

  for (const auto& layer : encoder) out.encoder.push_back(unbatched(layer));
  std::vector<at::Tensor> cross;  // per layer: heads x S x N
  for (const auto& layer : decoder) {
    out.decoder.push_back(unbatched(layer.expansion));
    cross.push_back(unbatched(layer.cross_attention));
  }
  out.cross_attention = torch::stack(cross, 0).permute({2, 0, 1, 3}).contiguous();  // S x layers x heads x N
  return out;
}

std::string trace_to_json(const CaptionTrace& trace, const Vocabulary& vocab, const std::string& image,
                          int image_width, int image_height, const std::string& caption) {
  nlohmann::json words = nlohmann::json::array();
  for (const auto id : trace.tokens) words.push_back(vocab.word(id));
  nlohmann::json encoder = nlohmann::json::array(), decoder = nlohmann::json::array();
  for (const auto& layer : trace.encoder) encoder.push_back(expansion_json(layer));
  for (const auto& layer : trace.decoder) decoder.push_back(expansion_json(layer));
  const nlohmann::json doc = {
      {"format", "expnet-trace"},
      {"version", 1},
      {"image", image},
      {"image_size", {image_width, image_height}},
      {"caption", caption},
      {"tokens", trace.tokens},
      {"words", words},
      {"grid", {trace.grid_side, trace.grid_side}},
      {"token_logprobs", matrix_json(trace.token_logprobs)["data"]},
      {"cross_attention", matrix_json(trace.cross_attention)},
      {"encoder", encoder},
      {"decoder", decoder},
  };
  return doc.dump();
}

// ---------------------------------------------------------------- rendering

cv::Mat attention_overlay(const cv::Mat& rgb, const cv::Mat& weights, double alpha) {
  if (rgb.type() != CV_8UC3 || weights.type() != CV_32F || weights.empty())
    throw std::invalid_argument("attention_overlay: expected an 8-bit RGB image and a float weight grid");
  double max_value = 0;
  cv::minMaxLoc(weights, nullptr, &max_value);
  cv::Mat scaled = max_value > 0 ? cv::Mat(weights / max_value) : cv::Mat(cv::Mat::zeros(weights.size(), CV_32F));
  cv::Mat up, heat8, heat, bgr, out;
  cv::resize(scaled, up, rgb.size(), 0, 0, cv::INTER_LINEAR);
  up.convertTo(heat8, CV_8U, 255.0);
  cv::applyColorMap(heat8, heat, cv::COLORMAP_JET);
  cv::cvtColor(rgb, bgr, cv::COLOR_RGB2BGR);
  cv::addWeighted(bgr, 1.0 - alpha, heat, alpha, 0.0, out);
  return out;
}

cv::Mat tile_grid(const std::vector<cv::Mat>& tiles, int cols, const std::vector<std::string>& labels) {
  if (tiles.empty() || cols <= 0) throw std::invalid_argument("tile_grid: no tiles");
  constexpr int gap = 2;
  const int rows = (static_cast<int>(tiles.size()) + cols - 1) / cols;
  const cv::Size tile = tiles.front().size();
  cv::Mat canvas(rows * tile.height + (rows + 1) * gap, cols * tile.width + (cols + 1) * gap, CV_8UC3,
                 cv::Scalar(255, 255, 255));
  for (size_t i = 0; i < tiles.size(); ++i) {
    const int r = static_cast<int>(i) / cols, c = static_cast<int>(i) % cols;
    const cv::Rect where(gap + c * (tile.width + gap), gap + r * (tile.height + gap), tile.width, tile.height);
    tiles[i].copyTo(canvas(where));
    if (i < labels.size()) {
      const cv::Point at(where.x + 3, where.y + 14);
      cv::putText(canvas, labels[i], at, cv::FONT_HERSHEY_SIMPLEX, 0.4, cv::Scalar(0, 0, 0), 3, cv::LINE_AA);
      cv::putText(canvas, labels[i], at, cv::FONT_HERSHEY_SIMPLEX, 0.4, cv::Scalar(255, 255, 255), 1, cv::LINE_AA);
    }
  }
  return canvas;
}

std::string encode_png(const cv::Mat& bgr) {
  std::vector<uchar> buffer;
  if (!cv::imencode(".png", bgr, buffer)) throw std::runtime_error("could not encode a PNG image");
  return std::string(buffer.begin(), buffer.end());
}

}  // namespace expnet

#include "attention/attentionworker.h"

#include <c10/core/GradMode.h>
#include <opencv2/imgproc.hpp>

#include <chrono>

#include "expnet/decode/captioner.h"
#include "expnet/image/image_decode.h"
#include "expnet/trace/trace.h"

namespace {
// Thrown from on_step to leave a search whose result nobody will show.
struct Superseded {};

// Trace tensors are CPU float and contiguous (trace_caption makes them so).
TraceMatrix toMatrix(const at::Tensor& t) {
  TraceMatrix m;
  if (!t.defined() || t.dim() != 2) return m;
  const at::Tensor c = t.contiguous();
  m.rows = int(c.size(0));
  m.cols = int(c.size(1));
  const float* data = c.data_ptr<float>();
  m.values.assign(data, data + c.numel());
  return m;
}

TraceExpansion toExpansion(const expnet::ExpansionTrace& e) {
  return {toMatrix(e.z), toMatrix(e.forward_a), toMatrix(e.forward_b), toMatrix(e.backward_a), toMatrix(e.backward_b)};
}

// Why an expansion tab is empty for a model of other layer kinds (docs/model.md,
// "Layer kinds"); short, as the plot's one-line title shows it.
QString noMapsFor(const char* expansion, const char* part, const std::string& kind) {
  return QStringLiteral("No %1 expansion: the %2 is \"%3\"")
      .arg(QLatin1String(expansion), QLatin1String(part), QString::fromStdString(kind));
}

// Overlays are drawn at most kDisplaySide pixels on the longest side: a
// 12-megapixel photo would cost the UI thread far more than it can show.
cv::Mat displayImage(const cv::Mat& rgb) {
  const int longest = std::max(rgb.cols, rgb.rows);
  if (longest <= AttentionTrace::kDisplaySide) return rgb;
  const double scale = double(AttentionTrace::kDisplaySide) / longest;
  cv::Mat small;
  cv::resize(rgb, small, cv::Size(std::max(1, int(rgb.cols * scale + 0.5)), std::max(1, int(rgb.rows * scale + 0.5))),
             0, 0, cv::INTER_AREA);
  return small;
}
}  // namespace

void AttentionWorker::trace(std::shared_ptr<expnet::Captioner> captioner, const QString& path, int beamSize,
                            int request) {
  if (!captioner) {
    emit failed(request, QStringLiteral("no model loaded: load one on the Caption page"));
    return;
  }
  if (request != latest_.load()) return;  // replaced while queued
  try {
    const auto start = std::chrono::steady_clock::now();
    c10::NoGradGuard noGrad;
    expnet::check_traceable(captioner->config());
    const cv::Mat rgb = expnet::load_image_rgb(path.toStdString());
    const at::Tensor input = captioner->preprocess(rgb);
    // The caption is the best beam hypothesis, as `expnet explain` traces it, with
    // the checkpoint's decoding options (n-gram blocking, word runs...) and this beam.
    expnet::DecodingOptions options = captioner->carried_decoding().apply_to({});
    options.num_hypotheses = 1;
    options.beam_size = std::max(1, beamSize);
    options.search = options.beam_size > 1 ? expnet::SearchKind::Beam : expnet::SearchKind::Greedy;
    options = captioner->complete(options);
    options.on_step = [this, request](const expnet::StepUpdate&) {
      if (request != latest_.load()) throw Superseded{};
    };
    auto decoder = captioner->make_decoder(captioner->encode(input), expnet::DecoderKind::Incremental);
    const auto results = expnet::decode(*decoder, 1, captioner->special_tokens(options.block_bad_endings), options);
    if (results.empty() || results.front().hypotheses.empty() || results.front().hypotheses.front().tokens.size() < 2)
      throw std::runtime_error("'" + path.toStdString() + "': the caption is empty, nothing to show");
    const std::vector<int64_t> tokens = results.front().hypotheses.front().tokens;
    const expnet::CaptionTrace trace = expnet::trace_caption(*captioner, input, tokens);

    auto out = std::make_shared<AttentionTrace>();
    const auto& vocab = captioner->vocabulary();
    out->path = path;
    out->imageWidth = rgb.cols;
    out->imageHeight = rgb.rows;
    out->rgb = displayImage(rgb);
    for (const int64_t id : tokens) {
      out->tokens.push_back(id);
      out->words.push_back(QString::fromStdString(vocab.word(id)));
    }
    out->endsWithEos = tokens.back() == vocab.eos_id();
    out->caption = QString::fromStdString(vocab.decode_text(tokens));
    const at::Tensor logprobs = trace.token_logprobs.contiguous();
    out->logprobs = QVector<float>(logprobs.data_ptr<float>(), logprobs.data_ptr<float>() + logprobs.numel());
    out->gridSide = int(trace.grid_side);
    out->layers = int(trace.cross_attention.size(1));
    out->heads = int(trace.cross_attention.size(2));
    const at::Tensor cross = trace.cross_attention.contiguous();
    out->cross.assign(cross.data_ptr<float>(), cross.data_ptr<float>() + cross.numel());
    const auto& config = captioner->config();
    const bool staticEncoder = config.encoder_layer == expnet::EncoderLayerKind::StaticExpansion;
    const bool dynamicDecoder = config.decoder_layer == expnet::DecoderLayerKind::DynamicExpansion;
    if (staticEncoder)
      for (const auto& layer : trace.encoder) out->encoder.push_back(toExpansion(layer));
    if (dynamicDecoder)
      for (const auto& layer : trace.decoder) out->decoder.push_back(toExpansion(layer));
    out->encoderMissing =
        staticEncoder ? QString() : noMapsFor("static", "encoder", expnet::to_string(config.encoder_layer));
    out->decoderMissing =
        dynamicDecoder ? QString() : noMapsFor("dynamic", "decoder", expnet::to_string(config.decoder_layer));
    if (staticEncoder)
      for (const int64_t g : config.num_exp_enc_list) out->groups.push_back(int(g));
    out->decoderSlots = dynamicDecoder ? int(config.num_exp_dec) : 0;
    out->traceMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    emit traced(request, std::move(out));
  } catch (const Superseded&) {
    // The page no longer waits for this request: nothing to report.
  } catch (const std::exception& e) {
    emit failed(request, QString::fromStdString(e.what()));
  }
}

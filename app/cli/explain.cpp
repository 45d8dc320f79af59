// expnet explain: caption one image and write what the model looked at:
// caption.txt, trace.json and PNG overlays (docs/traces.md).
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <opencv2/imgproc.hpp>

#include <cctype>
#include <filesystem>
#include <iostream>

#include "command.h"
#include "decode_options_cli.h"
#include "expnet/system/atomic_file.h"
#include "expnet/decode/captioner.h"
#include "expnet/image/image_decode.h"
#include "expnet/model/layers.h"
#include "expnet/model/swin.h"
#include "expnet/model/expansion_net.h"
#include "expnet/model/state_entries.h"
#include "expnet/trace/trace.h"

namespace expnet::cli {
namespace {

namespace fs = std::filesystem;

struct ExplainArgs {
  ModelArgs model;
  DecodeArgs decode;
  std::string image, out;
  bool no_exif = false;
};

constexpr int kTileSide = 192;  // longest side of one tile in the grid images

// Keeps letters, digits, '-' and '_' so any word makes a safe file name.
std::string file_safe(const std::string& word) {
  std::string out;
  for (const unsigned char c : word) out += (std::isalnum(c) || c == '-' || c == '_') ? static_cast<char>(c) : '_';
  return out.empty() ? "_" : out;
}

std::string two_digits(size_t i) { return (i < 10 ? "0" : "") + std::to_string(i); }

cv::Mat grid_weights(const at::Tensor& weights, int64_t side) {
  const auto w = weights.to(torch::kFloat).contiguous().view({side, side});
  return cv::Mat(static_cast<int>(side), static_cast<int>(side), CV_32F, w.data_ptr<float>()).clone();
}

void write_png(const fs::path& path, const cv::Mat& bgr) { write_file_atomic(path.string(), encode_png(bgr)); }

cv::Mat tile_image(const cv::Mat& rgb) {
  const double scale = static_cast<double>(kTileSide) / std::max(rgb.cols, rgb.rows);
  cv::Mat small;
  cv::resize(rgb, small, cv::Size(std::max(1, static_cast<int>(std::lround(rgb.cols * scale))),
                                  std::max(1, static_cast<int>(std::lround(rgb.rows * scale)))),
             0, 0, cv::INTER_AREA);
  return small;
}

// Per generated word: the mean over layers and heads, and the layer x head grid.
int write_word_overlays(const fs::path& dir, const CaptionTrace& trace, const Vocabulary& vocab, const cv::Mat& rgb) {
  const cv::Mat small = tile_image(rgb);
  const int64_t layers = trace.cross_attention.size(1), heads = trace.cross_attention.size(2);
  int written = 0;
  for (size_t k = 0; k + 1 < trace.tokens.size(); ++k) {
    const int64_t id = trace.tokens[k + 1];
    if (id == vocab.eos_id()) continue;
    const std::string name = two_digits(k) + "_" + file_safe(vocab.word(id)) + ".png";
    const auto step = trace.cross_attention[static_cast<int64_t>(k)];  // layers x heads x N
    write_png(dir / ("word_" + name), attention_overlay(rgb, grid_weights(step.mean(std::vector<int64_t>{0, 1}), trace.grid_side)));
    std::vector<cv::Mat> tiles;
    std::vector<std::string> labels;
    for (int64_t l = 0; l < layers; ++l)
      for (int64_t h = 0; h < heads; ++h) {
        tiles.push_back(attention_overlay(small, grid_weights(step[l][h], trace.grid_side)));
        labels.push_back("L" + std::to_string(l + 1) + " H" + std::to_string(h + 1));
      }
    write_png(dir / ("grid_" + name), tile_grid(tiles, static_cast<int>(heads), labels));
    written += 2;
  }
  return written;
}

// Per encoder layer: (1) static_layer_X.png, rows = groups, columns = streams
// a and b, each tile the group's mean forward weight over the grid (where the
// group's slots gather from); (2) static_slots_layer_X.png, every grid cell
// coloured by the slot (HSV hue by slot index, 0..NE-1) whose stream-a
// forward row gives it the largest weight.
int write_static_overlays(const fs::path& dir, const CaptionTrace& trace, const std::vector<int64_t>& groups,
                          const cv::Mat& rgb) {
  const cv::Mat small = tile_image(rgb);
  const int64_t side = trace.grid_side;
  for (size_t layer = 0; layer < trace.encoder.size(); ++layer) {
    const auto& ex = trace.encoder[layer];
    std::vector<cv::Mat> tiles;
    std::vector<std::string> labels;
    int64_t from = 0;
    for (size_t g = 0; g < groups.size(); ++g) {
      for (const auto* stream : {&ex.forward_a, &ex.forward_b}) {
        const auto mass = stream->narrow(0, from, groups[g]).mean(0);
        tiles.push_back(attention_overlay(small, grid_weights(mass, side)));
        labels.push_back("G" + std::to_string(g + 1) + " (" + std::to_string(groups[g]) + ") " +
                         (stream == &ex.forward_a ? "a" : "b"));
      }
      from += groups[g];
    }
    const std::string suffix = std::to_string(layer + 1) + ".png";
    write_png(dir / ("static_layer_" + suffix), tile_grid(tiles, 2, labels));

    const int64_t slots = ex.forward_a.size(0);
    const auto chosen = ex.forward_a.argmax(0).to(torch::kFloat).contiguous().view({side, side});
    cv::Mat hue(static_cast<int>(side), static_cast<int>(side), CV_32F, chosen.data_ptr<float>());
    cv::Mat hue8, colours, up, bgr, out;
    hue.convertTo(hue8, CV_8U, 255.0 / static_cast<double>(std::max<int64_t>(1, slots)));
    cv::applyColorMap(hue8, colours, cv::COLORMAP_HSV);
    cv::resize(colours, up, rgb.size(), 0, 0, cv::INTER_NEAREST);
    cv::cvtColor(rgb, bgr, cv::COLOR_RGB2BGR);
    cv::addWeighted(bgr, 0.5, up, 0.5, 0.0, out);
    write_png(dir / ("static_slots_layer_" + suffix), out);
  }
  return static_cast<int>(2 * trace.encoder.size());
}

void run(const RuntimeOptions& runtime, const ExplainArgs& args) {
  ImageLoadOptions image_options;
  image_options.apply_exif = !args.no_exif;
  const cv::Mat rgb = load_image_rgb(args.image, image_options);
  auto captioner = load_captioner(args.model, runtime);
  check_traceable(captioner->config());
  const auto options = captioner->complete(args.decode.options(captioner->carried_decoding()));
  args.decode.report(captioner->carried_decoding());
  const auto input = captioner->preprocess(rgb);

  std::vector<int64_t> best;
  {
    torch::NoGradGuard no_grad;
    auto decoder = captioner->make_decoder(captioner->encode(input), DecoderKind::Incremental);
    auto results = decode(*decoder, 1, captioner->special_tokens(options.block_bad_endings), options);
    if (results.empty() || results.front().hypotheses.empty())
      throw std::runtime_error("'" + args.image + "': decoding produced no caption");
    best = results.front().hypotheses.front().tokens;
  }
  const auto& vocab = captioner->vocabulary();
  const std::string caption = vocab.decode_text(best);
  if (best.size() < 2) throw std::runtime_error("'" + args.image + "': the caption is empty, nothing to explain");
  const auto trace = trace_caption(*captioner, input, best);

  const fs::path dir(args.out);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error("cannot create the output folder '" + args.out + "': " + ec.message());
  write_file_atomic((dir / "caption.txt").string(), caption + "\n");
  write_file_atomic((dir / "trace.json").string(), trace_to_json(trace, vocab, args.image, rgb.cols, rgb.rows, caption));
  const int words = write_word_overlays(dir, trace, vocab, rgb);
  // Static-expansion maps exist only for v2's encoder kind; trace.json holds the others' matrices.
  const auto& config = captioner->config();
  const int statics = config.encoder_layer == EncoderLayerKind::StaticExpansion
                          ? write_static_overlays(dir, trace, config.num_exp_enc_list, rgb)
                          : 0;
  spdlog::info("wrote caption.txt, trace.json and {} PNG files to {}", words + statics, args.out);
  std::cout << caption << std::endl;
}

const bool registered = register_command({"explain", 25, [](CLI::App& root) {
  auto [command, args] = add_command<ExplainArgs>(
      &root, "explain", "Caption one image and write attention/expansion traces and overlays", run);
  add_model_options(command, args->model);
  add_decode_options(command, args->decode);
  command->add_option("image", args->image, "Image file")->required();
  command->add_option("--out", args->out, "Output folder (created if missing)")->required();
  command->add_flag("--no-exif", args->no_exif, "Ignore EXIF orientation (as the reference does)");
}});

}  // namespace
}  // namespace expnet::cli

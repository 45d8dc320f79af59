// expnet bench forward: median time of one full forward pass (backbone,
// encoder, decoder over a fixed number of teacher-forced tokens) of a randomly
// initialised model (seeded) on random input, and the same decoder positions
// fed one at a time through DecoderState (incremental). Decoding strategies
// (beam search etc.) have their own benchmarks.
#include <torch/torch.h>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <iostream>

#include "bench_stats.h"
#include "command.h"
#include "decode_options_cli.h"
#include "expnet/decode/decoder_state.h"
#include "expnet/model/expansion_net.h"
#include "expnet/system/system.h"

namespace expnet::cli {
namespace {

struct Options {
  std::string model = "official";
  int64_t vocab_size = 10000;
  int64_t batch = 1;
  int64_t tokens = 20;
  int repeats = 3;
  int warmup = 1;
  bool json = false;
  bool skip_backbone = false;
  std::string precision = "fp32";
};

void run(const Options& o) {
  const ModelConfig config = resolve_model_config(o.model);
  if (o.batch <= 0 || o.repeats <= 0 || o.warmup < 0 || o.vocab_size <= 0)
    throw std::runtime_error("--batch, --repeats and --vocab-size must be positive, --warmup non-negative");
  if (o.tokens <= 0 || o.tokens > config.max_seq_len)
    throw std::runtime_error("--tokens must lie in 1.." + std::to_string(config.max_seq_len) + " (max_seq_len)");
  torch::manual_seed(0);
  ExpansionNet model(config, o.vocab_size);  // the reference initialisation, seeded
  const std::string& device = current_device();
  model->to(torch::Device(device));
  model->eval();
  const Precision precision = precision_to_run(o.precision, device);
  model->set_precision(precision);
  torch::NoGradGuard no_grad;
  const auto images = torch::randn({o.batch, config.swin_in_chans, config.swin_img_size, config.swin_img_size}).to(device);
  const auto tokens = torch::randint(o.vocab_size, {o.batch, o.tokens}, torch::kLong).to(device);
  const auto mask = causal_self_mask(tokens, -1);
  // CUDA runs kernels asynchronously: each timing waits for the device.
  const auto timed = [&device](const std::function<void()>& work) {
    return wall_ms([&] {
      work();
      wait_for_device(device);
    });
  };

  std::vector<double> backbone_ms, encode_ms, decode_ms, incremental_ms;
  for (int i = 0; i < o.warmup + o.repeats; ++i) {
    torch::Tensor features, enc;
    const double b = o.skip_backbone ? 0.0 : timed([&] { features = model->backbone(images); });
    if (o.skip_backbone)  // random features in place of the backbone's
      features = torch::randn({o.batch, config.feature_tokens(), config.final_swin_dim}).to(device);
    const double e = timed([&] { enc = model->encode(features); });
    const double d = timed([&] { model->decode(enc, tokens, mask); });
    // The same positions one at a time with the caches (keys/values included).
    const double inc = timed([&] {
      DecoderState state(model, enc);
      for (int64_t t = 0; t < o.tokens; ++t) state.step(tokens.select(1, t));
    });
    spdlog::info("run {}{}: backbone {:.1f} ms, encode {:.1f} ms, decode {:.1f} ms, incremental {:.1f} ms", i + 1,
                 i < o.warmup ? " (warm-up)" : "", b, e, d, inc);
    if (i < o.warmup) continue;
    backbone_ms.push_back(b);
    encode_ms.push_back(e);
    decode_ms.push_back(d);
    incremental_ms.push_back(inc);
  }
  const double b = median(backbone_ms), e = median(encode_ms), d = median(decode_ms), inc = median(incremental_ms);
  if (o.json) {
    std::cout << nlohmann::json{{"model", o.model},
                                {"batch", o.batch},
                                {"tokens", o.tokens},
                                {"threads", torch_threads()},
                                {"device", device},
                                {"precision", precision_name(precision)},
                                {"repeats", o.repeats},
                                {"median_ms",
                                 {{"backbone", b},
                                  {"encode", e},
                                  {"decode", d},
                                  {"total", b + e + d},
                                  {"incremental_decode", inc},
                                  {"incremental_step", inc / static_cast<double>(o.tokens)}}},
                                {"peak_rss_mb", peak_rss_mb()}}
                     .dump()
              << std::endl;
  } else {
    std::cout << "model " << o.model << ", " << device << ", " << precision_name(precision) << ", batch " << o.batch << ", " << o.tokens << " tokens, " << torch_threads()
              << " threads, median of " << o.repeats << ":\n"
              << "  backbone " << b << " ms\n  encode   " << e << " ms\n  decode   " << d << " ms (all " << o.tokens
              << " positions at once)\n  total    " << b + e + d << " ms\n  incremental decode " << inc << " ms ("
              << inc / static_cast<double>(o.tokens) << " ms per step, " << o.tokens
              << " steps one at a time, cross-attention keys/values included)\npeak RSS " << peak_rss_mb() << " MB\n";
  }
}

const bool registered = register_command({"bench forward", 200, [](CLI::App& root) {
  auto [command, o] = add_command<Options>(bench_group(root), "forward",
                                          "Time one forward pass (backbone, encoder, decoder) on random input", run);
  command->add_option("--model", o->model, "Preset or model config JSON")->capture_default_str();
  command->add_option("--vocab-size", o->vocab_size, "Vocabulary size")->capture_default_str();
  command->add_option("--batch", o->batch, "Images per forward pass")->capture_default_str();
  command->add_option("--tokens", o->tokens, "Decoder positions (teacher-forced)")->capture_default_str();
  command->add_option("--repeats", o->repeats, "Timed runs (the median is printed)")->capture_default_str();
  command->add_option("--warmup", o->warmup, "Untimed runs first")->capture_default_str();
  command->add_flag("--skip-backbone", o->skip_backbone, "Feed random features to the encoder (backbone time 0)");
  command->add_option("--precision", o->precision, "fp32, bf16, int8 or auto (expnet caption --help)")
      ->check(CLI::IsMember(precision_names()))
      ->capture_default_str();
  command->add_flag("--json", o->json, "Print one compact JSON object");
}});

}  // namespace
}  // namespace expnet::cli

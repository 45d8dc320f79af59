// expnet bench decode / bench caption: decoding speed of the full-recompute
// path (what the reference does) against the incremental path, batch 1 and 8,
// and the end-to-end caption time, at the official configuration with random
// (seeded) weights. Prints medians; --json for one object.
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <optional>
#include <opencv2/core.hpp>

#include "bench_stats.h"
#include "command.h"
#include "decode_options_cli.h"
#include "expnet/decode/captioner.h"
#include "expnet/decode/group_decoding.h"
#include "expnet/model/layers.h"
#include "expnet/model/swin.h"
#include "expnet/model/expansion_net.h"
#include "expnet/model/precision.h"
#include "expnet/model/state_entries.h"
#include "expnet/checkpoint/vocabulary_file.h"
#include "op_profile.h"

namespace expnet::cli {
namespace {

using Clock = BenchClock;

struct BenchArgs {
  std::string model = "official";
  std::string vocab;  // default: a synthetic 10,000-word vocabulary
  int steps = 20, beam = 5, repeats = 3;
  std::vector<int> batches{1, 8};
  uint64_t seed = 1234;
  bool json = false;
  bool profile = false;  // print where the time goes (LibTorch profiler, one extra run)
  int groups = 0;        // > 0: AIC greedy against PNAIC with this many groups
  std::vector<std::string> precisions{"fp32"};  // bench caption: alternated in each repeat
};

Vocabulary bench_vocabulary(const BenchArgs& args) {
  if (!args.vocab.empty()) return load_vocabulary(args.vocab);
  std::vector<std::string> words{"PAD", "SOS", "EOS", "UNK"};
  for (int i = static_cast<int>(words.size()); i < 10000; ++i) words.push_back("w" + std::to_string(i));
  return Vocabulary(words);
}

// Exactly `steps` words: EOS is blocked until the length limit ends the search.
DecodingOptions forced_options(const BenchArgs& args, int steps) {
  DecodingOptions o;
  o.beam_size = args.beam;
  o.max_length = steps + 1;
  o.min_length = steps;
  return o;
}

std::unique_ptr<Captioner> make_captioner(const BenchArgs& args, const RuntimeOptions& runtime) {
  spdlog::info("building a random '{}' model (seed {})", args.model, args.seed);
  auto captioner = Captioner::create_random(resolve_model_config(args.model), bench_vocabulary(args), runtime.device, args.seed);
  spdlog::info("built in {:.0f} ms", captioner->load_ms());
  return captioner;
}

at::Tensor random_images(const Captioner& captioner, int64_t batch, uint64_t seed) {
  torch::manual_seed(seed);
  const int64_t size = captioner.config().swin_img_size;
  return torch::randn({batch, 3, size, size});
}

// One forced decode of `encoded` (images x N x d) with the given path, in ms.
double time_decode_once(Captioner& captioner, const at::Tensor& encoded, DecoderKind kind, const BenchArgs& args,
                        int& steps) {
  const auto options = captioner.complete(forced_options(args, args.steps));
  const auto special = captioner.special_tokens(false);
  const auto start = Clock::now();
  auto decoder = captioner.make_decoder(encoded, kind);
  auto results = decode(*decoder, encoded.size(0), special, options);
  steps = results.front().steps;
  return ms_since(start);
}

void profile_decode(Captioner& captioner, const at::Tensor& encoded, DecoderKind kind, const BenchArgs& args) {
  int steps = 0;
  profile_ops(std::string("decode, batch ") + std::to_string(encoded.size(0)) +
                  (kind == DecoderKind::Full ? ", full recompute" : ", incremental"),
              [&] { time_decode_once(captioner, encoded, kind, args, steps); }, std::cerr);
}

const char* path_name(DecoderKind kind) { return kind == DecoderKind::Full ? "full" : "incremental"; }

// AIC greedy (incremental, `words` steps) against a PNAIC decoder of K groups
// (ceil(words / K) steps of K positions), batch 1, random weights of the same
// configuration; repeats alternate the two.
void run_decode_groups(const RuntimeOptions& runtime, const BenchArgs& args) {
  auto aic = make_captioner(args, runtime);
  ModelConfig config = resolve_model_config(args.model);
  config.pnaic_groups = args.groups;
  auto pnaic = Captioner::create_random(config, bench_vocabulary(args).with_del(), runtime.device, args.seed + 1);
  const int K = args.groups, words = args.steps, group_steps = (words + K - 1) / K;
  const auto aic_encoded = aic->encode(random_images(*aic, 1, args.seed));
  const auto pnaic_encoded = pnaic->encode(random_images(*pnaic, 1, args.seed));
  DecodingOptions greedy = forced_options(args, words);
  greedy.search = SearchKind::Greedy;
  greedy.beam_size = 1;
  greedy = aic->complete(greedy);
  const auto special = aic->special_tokens(false);
  // Each returns {set-up ms, steps ms}: the set-up (cross-attention keys and
  // values) is paid once per image whatever the number of steps.
  const auto time_aic = [&] {
    const auto start = Clock::now();
    auto decoder = aic->make_decoder(aic_encoded, DecoderKind::Incremental);
    wait_for_device(runtime.device);  // CUDA: the set-up's kernels, not only their launch
    const double setup = ms_since(start);
    const auto steps_start = Clock::now();
    const auto results = decode(*decoder, 1, special, greedy);
    const double steps = ms_since(steps_start);
    if (results.front().steps != words) throw std::logic_error("bench: AIC decoded an unexpected number of steps");
    return std::pair{setup, steps};
  };
  // Every group stays live for exactly group_steps steps: the greedy word of each
  // group is fed back, whatever it is.
  const auto time_pnaic = [&] {
    torch::NoGradGuard no_grad;
    const auto start = Clock::now();
    GroupDecoderState state(ExpansionNet(pnaic->shared_model()), pnaic_encoded);
    wait_for_device(runtime.device);
    const double setup = ms_since(start);
    const auto steps_start = Clock::now();
    auto tokens = torch::full({1, K}, pnaic->vocabulary().sos_id(), torch::kLong);
    const auto live = torch::ones({1, K}, torch::kBool);
    for (int t = 0; t < group_steps; ++t) tokens = state.step(tokens, live).argmax(-1).to(torch::kCPU);
    return std::pair{setup, ms_since(steps_start)};
  };
  std::vector<double> aic_ms, pnaic_ms, aic_step, pnaic_step, step_ratio;
  for (int r = 0; r < args.repeats; ++r) {
    const auto [aic_setup, aic_steps] = time_aic();
    const auto [pnaic_setup, pnaic_steps] = time_pnaic();
    aic_ms.push_back(aic_setup + aic_steps);
    pnaic_ms.push_back(pnaic_setup + pnaic_steps);
    aic_step.push_back(aic_steps / words);
    pnaic_step.push_back(pnaic_steps / group_steps);
    step_ratio.push_back(pnaic_step.back() / aic_step.back());
    spdlog::info("repeat {}: AIC greedy {:.1f} ms ({} steps), PNAIC K={} {:.1f} ms ({} steps)", r + 1, aic_ms.back(),
                 words, K, pnaic_ms.back(), group_steps);
  }
  if (args.profile) {
    profile_ops("decode, batch 1, AIC greedy", [&] { time_aic(); }, std::cerr);
    profile_ops("decode, batch 1, PNAIC K=" + std::to_string(K), [&] { time_pnaic(); }, std::cerr);
  }
  const double aic_med = median(aic_ms), pnaic_med = median(pnaic_ms);
  const double aic_step_med = median(aic_step), pnaic_step_med = median(pnaic_step);
  nlohmann::json out = {{"model", args.model},
                        {"vocab_size", pnaic->vocabulary().size()},
                        {"groups", K},
                        {"words", words},
                        {"repeats", args.repeats},
                        {"threads", torch_threads()},
                        {"device", runtime.device},
                        {"aic_greedy", {{"steps", words}, {"ms_per_image", aic_med}, {"ms_per_step", aic_step_med}}},
                        {"pnaic", {{"steps", group_steps}, {"ms_per_image", pnaic_med}, {"ms_per_step", pnaic_step_med}}},
                        {"step_cost_ratio", median(step_ratio)},
                        {"speedup_per_image", median(aic_ms) / pnaic_med},
                        {"peak_rss_mb", peak_rss_mb()}};
  if (args.json) {
    std::cout << out.dump() << std::endl;
    return;
  }
  std::cout << "decode, " << args.model << " random weights, batch 1, " << words << " words, threads "
            << torch_threads() << ", median of " << args.repeats << " alternated repeats\n"
            << "  AIC greedy: " << aic_med << " ms (" << words << " steps, " << aic_step_med << " ms/step)\n"
            << "  PNAIC K=" << K << ": " << pnaic_med << " ms (" << group_steps << " steps of " << K << " positions, "
            << pnaic_step_med << " ms/step)\n"
            << "  a PNAIC step costs " << out["step_cost_ratio"].get<double>() << "x an AIC step (median of per-repeat ratios;\n"
            << "  ms per step exclude the decoder's set-up, paid once per image; ms per image include it)\n";
}

// The precisions given with --precision, as they will run (a fall-back warns).
std::vector<Precision> effective_precisions(const BenchArgs& args, const RuntimeOptions& runtime) {
  std::vector<Precision> precisions;
  for (const auto& name : args.precisions) precisions.push_back(precision_to_run(name, runtime.device));
  return precisions;
}

// bench decode --precision ...: batch 1, the incremental decoder, every
// precision in turn in each repeat (set_precision between them, untimed);
// medians, and each precision's time over the first's (median of per-repeat ratios).
void run_decode_precisions(const RuntimeOptions& runtime, const BenchArgs& args) {
  auto captioner = make_captioner(args, runtime);
  const auto precisions = effective_precisions(args, runtime);
  captioner->set_precision(Precision::FP32);
  const auto encoded = captioner->encode(random_images(*captioner, 1, args.seed));  // one input for all
  std::vector<std::vector<double>> times(precisions.size());
  int steps = 0;
  for (int r = 0; r < args.repeats; ++r)
    for (size_t p = 0; p < precisions.size(); ++p) {
      captioner->set_precision(precisions[p]);
      times[p].push_back(time_decode_once(*captioner, encoded, DecoderKind::Incremental, args, steps));
      spdlog::info("repeat {}: {}: {:.1f} ms", r + 1, precision_name(precisions[p]), times[p].back());
    }
  nlohmann::json rows = nlohmann::json::array();
  for (size_t p = 0; p < precisions.size(); ++p) {
    std::vector<double> ratios;
    for (int r = 0; r < args.repeats; ++r) ratios.push_back(times[p][r] / times[0][r]);
    rows.push_back({{"precision", precision_name(precisions[p])}, {"decode_ms", median(times[p])},
                    {"ms_per_step", median(times[p]) / std::max(1, steps)}, {"vs_first", median(ratios)},
                    {"ms_all_repeats", times[p]}});
  }
  const nlohmann::json out = {{"model", args.model}, {"beam", args.beam},         {"words", args.steps},
                              {"batch", 1},          {"repeats", args.repeats},   {"threads", torch_threads()},
                              {"device", runtime.device}, {"precisions", rows}, {"peak_rss_mb", peak_rss_mb()}};
  if (args.json) {
    std::cout << out.dump() << std::endl;
    return;
  }
  std::cout << "decode, " << args.model << " random weights, batch 1, incremental, beam " << args.beam << ", "
            << args.steps << " words forced, threads " << torch_threads() << ", median of " << args.repeats
            << " alternated repeats\n";
  for (const auto& row : rows)
    std::cout << "  " << row["precision"].get<std::string>() << ": " << row["decode_ms"].get<double>() << " ms ("
              << row["ms_per_step"].get<double>() << " ms/step), " << row["vs_first"].get<double>() << "x the first\n";
}

void run_decode(const RuntimeOptions& runtime, const BenchArgs& args) {
  if (args.groups > 0) return run_decode_groups(runtime, args);
  if (args.precisions.size() > 1 || args.precisions.front() != "fp32") return run_decode_precisions(runtime, args);
  auto captioner = make_captioner(args, runtime);
  nlohmann::json out = {{"model", args.model}, {"beam", args.beam}, {"words", args.steps}, {"repeats", args.repeats},
                        {"threads", torch_threads()}, {"device", runtime.device}};
  const std::vector<DecoderKind> kinds{DecoderKind::Full, DecoderKind::Incremental};
  std::vector<at::Tensor> encoded;
  for (int batch : args.batches) encoded.push_back(captioner->encode(random_images(*captioner, batch, args.seed)));
  // Every repeat times every (batch, path) once, interleaved, so a machine
  // that speeds up or slows down during the run affects both sides of each
  // ratio alike; the ratios are medians of the per-repeat ratios.
  std::map<std::pair<size_t, DecoderKind>, std::vector<double>> times;
  std::map<size_t, int> steps;
  for (int r = 0; r < args.repeats; ++r)
    for (size_t b = 0; b < encoded.size(); ++b)
      for (DecoderKind kind : kinds) {
        const double ms = time_decode_once(*captioner, encoded[b], kind, args, steps[b]);
        times[{b, kind}].push_back(ms);
        spdlog::info("repeat {}: batch {} {}: {:.1f} ms", r + 1, args.batches[b], path_name(kind), ms);
      }
  if (args.profile)
    for (size_t b = 0; b < encoded.size(); ++b)
      for (DecoderKind kind : kinds) profile_decode(*captioner, encoded[b], kind, args);

  nlohmann::json rows = nlohmann::json::array();
  for (size_t b = 0; b < encoded.size(); ++b)
    for (DecoderKind kind : kinds) {
      const double ms = median(times[{b, kind}]);
      const int batch = args.batches[b];
      rows.push_back({{"batch", batch}, {"path", path_name(kind)}, {"ms", ms},
                      {"ms_per_step", ms / std::max(1, steps[b])}, {"ms_per_image", ms / batch}, {"steps", steps[b]},
                      {"ms_all_repeats", times[{b, kind}]}});
    }
  out["runs"] = rows;
  const auto per_repeat_ratio = [&](auto ratio) {
    std::vector<double> v;
    for (int r = 0; r < args.repeats; ++r) v.push_back(ratio(static_cast<size_t>(r)));
    return median(v);
  };
  std::optional<size_t> single;
  for (size_t b = 0; b < encoded.size(); ++b)
    if (args.batches[b] == 1) single = b;
  for (size_t b = 0; b < encoded.size(); ++b) {
    const auto& full = times[{b, DecoderKind::Full}];
    const auto& incremental = times[{b, DecoderKind::Incremental}];
    const std::string batch = std::to_string(args.batches[b]);
    out["speedup_incremental_vs_full_batch" + batch] = per_repeat_ratio([&](size_t r) { return full[r] / incremental[r]; });
    if (single && args.batches[b] > 1) {
      const auto& one = times[{*single, DecoderKind::Incremental}];
      out["throughput_gain_batch" + batch] =
          per_repeat_ratio([&](size_t r) { return one[r] * args.batches[b] / incremental[r]; });
    }
  }
  out["peak_rss_mb"] = peak_rss_mb();
  if (args.json) {
    std::cout << out.dump() << std::endl;
    return;
  }
  std::cout << "decode, " << args.model << " random weights, beam " << args.beam << ", " << args.steps
            << " words forced, threads " << torch_threads() << ", median of " << args.repeats
            << " interleaved repeats (ratios: median of per-repeat ratios)\n";
  for (const auto& row : rows)
    std::cout << "  batch " << row["batch"] << " " << row["path"].get<std::string>() << ": " << row["ms"].get<double>()
              << " ms (" << row["ms_per_step"].get<double>() << " ms/step, " << row["ms_per_image"].get<double>()
              << " ms/image)\n";
  for (auto it = out.begin(); it != out.end(); ++it)
    if (it.key().rfind("speedup", 0) == 0 || it.key().rfind("throughput", 0) == 0)
      std::cout << "  " << it.key() << ": " << it.value().get<double>() << "x\n";
  std::cout << "  peak RSS: " << out["peak_rss_mb"].get<double>() << " MB\n";
}

// Relative error of `x` against `reference`: ||x - ref|| / ||ref|| (float64 sums).
double relative_error(const at::Tensor& x, const at::Tensor& reference) {
  const auto ref = reference.to(torch::kDouble);
  return (x.to(torch::kDouble) - ref).norm().item<double>() / std::max(ref.norm().item<double>(), 1e-30);
}

// Each repeat times every precision in turn (alternated, so drift on a busy
// machine reaches them alike); medians per precision.
void run_caption(const RuntimeOptions& runtime, const BenchArgs& args) {
  auto captioner = make_captioner(args, runtime);
  // A noisy 640x480 photo-sized image: preprocessing does a real resize.
  cv::Mat image(480, 640, CV_8UC3);
  cv::randu(image, cv::Scalar::all(0), cv::Scalar::all(255));
  // Exactly `steps` words: precisions whose encoder outputs differ slightly
  // would otherwise stop at different lengths and decode different amounts.
  DecodingOptions options = captioner->complete(forced_options(args, args.steps));
  const auto special = captioner->special_tokens(false);
  const auto precisions = effective_precisions(args, runtime);
  struct Times {
    std::vector<double> pre, enc, dec, total;
    double encoder_rel_error = 0;
  };
  std::vector<Times> times(precisions.size());
  {  // The encoder output of each precision against fp32's, on the same input.
    torch::NoGradGuard no_grad;
    const auto input = captioner->preprocess(image);
    captioner->set_precision(Precision::FP32);
    const auto reference = captioner->encode(input);
    for (size_t p = 0; p < precisions.size(); ++p) {
      captioner->set_precision(precisions[p]);
      times[p].encoder_rel_error = relative_error(captioner->encode(input), reference);
    }
  }
  for (int r = 0; r < args.repeats; ++r) {
    for (size_t p = 0; p < precisions.size(); ++p) {
      captioner->set_precision(precisions[p]);
      torch::NoGradGuard no_grad;
      auto t0 = Clock::now();
      auto input = captioner->preprocess(image);
      wait_for_device(runtime.device);  // CUDA kernels run asynchronously
      auto t1 = Clock::now();
      auto encoded = captioner->encode(input);
      auto decoder = captioner->make_decoder(encoded, DecoderKind::Incremental);
      wait_for_device(runtime.device);
      auto t2 = Clock::now();
      decode(*decoder, 1, special, options);
      auto t3 = Clock::now();
      auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
      times[p].pre.push_back(ms(t0, t1));
      times[p].enc.push_back(ms(t1, t2));
      times[p].dec.push_back(ms(t2, t3));
      times[p].total.push_back(ms(t0, t3));
      spdlog::info("repeat {} {}: encode {:.0f} ms, decode {:.0f} ms", r + 1, precision_name(precisions[p]), ms(t1, t2),
                   ms(t2, t3));
    }
  }
  if (args.profile) {
    captioner->set_precision(precisions.front());
    profile_ops("caption (preprocess, encode, decode)",
                [&] {
                  torch::NoGradGuard no_grad;
                  auto encoded = captioner->encode(captioner->preprocess(image));
                  auto decoder = captioner->make_decoder(encoded, DecoderKind::Incremental);
                  decode(*decoder, 1, special, options);
                },
                std::cerr, 25);
  }
  nlohmann::json rows = nlohmann::json::array();
  for (size_t p = 0; p < precisions.size(); ++p)
    rows.push_back({{"precision", precision_name(precisions[p])}, {"preprocess_ms", median(times[p].pre)},
                    {"encode_ms", median(times[p].enc)}, {"decode_ms", median(times[p].dec)},
                    {"total_ms", median(times[p].total)}, {"encoder_rel_error", times[p].encoder_rel_error}});
  // The first precision's figures also at the top level (the form before --precision).
  nlohmann::json out = {{"model", args.model},       {"device", runtime.device},          {"beam", args.beam},
                        {"max_len", args.steps + 1}, {"words", args.steps}, {"threads", torch_threads()},        {"repeats", args.repeats},
                        {"precisions", rows},        {"peak_rss_mb", peak_rss_mb()}};
  for (const char* key : {"preprocess_ms", "encode_ms", "decode_ms", "total_ms"}) out[key] = rows[0][key];
  if (args.json) {
    std::cout << out.dump() << std::endl;
    return;
  }
  std::cout << "caption, " << args.model << " random weights, beam " << args.beam << ", max-len " << args.steps + 1
            << ", threads " << torch_threads() << ", median of " << args.repeats << " alternated repeats\n";
  for (const auto& row : rows)
    std::cout << "  " << row["precision"].get<std::string>() << ": preprocess " << row["preprocess_ms"].get<double>()
              << " ms, encode " << row["encode_ms"].get<double>() << " ms, decode " << row["decode_ms"].get<double>()
              << " ms, total " << row["total_ms"].get<double>() << " ms; encoder output's relative error against fp32 "
              << row["encoder_rel_error"].get<double>() << "\n";
  std::cout << "  peak RSS " << out["peak_rss_mb"].get<double>() << " MB\n";
}

void add_common(CLI::App* command, BenchArgs& args) {
  command->add_option("--model", args.model, "Model preset or config JSON (random weights)");
  command->add_option("--vocab", args.vocab, "Vocabulary file (default: 10,000 synthetic words)");
  command->add_option("--beam", args.beam, "Beam size")->check(CLI::PositiveNumber);
  command->add_option("--repeats", args.repeats, "Runs per figure (median)")->check(CLI::PositiveNumber);
  command->add_option("--seed", args.seed, "Weight and input seed");
  command->add_flag("--json", args.json, "One compact JSON object");
  command->add_flag("--profile", args.profile, "Also print the operators and stages by time (stderr, one extra run)");
}

const bool registered = register_command({"bench-decode", 90, [](CLI::App& root) {
  {
    auto [command, args] = add_command<BenchArgs>(bench_group(root), "decode",
                                                  "Full-recompute vs incremental decoding, batch 1 and 8", run_decode);
    add_common(command, *args);
    command->add_option("--words", args->steps, "Words forced per caption")->check(CLI::PositiveNumber);
    command->add_option("--batches", args->batches, "Batch sizes")->check(CLI::PositiveNumber);
    command->add_option("--groups", args->groups,
                        "K > 0: AIC greedy against a PNAIC decoder of K groups (batch 1, vocabulary plus DEL)")
        ->check(CLI::NonNegativeNumber);
    command->add_option("--precision", args->precisions,
                        "fp32, bf16, int8 or auto: batch 1 incremental decoding in each, alternated in each repeat")
        ->check(CLI::IsMember(precision_names()));
  }
  {
    auto [command, args] = add_command<BenchArgs>(
        bench_group(root), "caption", "End-to-end caption time of one image (preprocess, encode, decode)", run_caption);
    add_common(command, *args);
    command->add_option("--words", args->steps, "Words per caption (EOS blocked until then)")->check(CLI::PositiveNumber);
    command->add_option("--precision", args->precisions, "fp32, bf16, int8 or auto; repeat it to compare (alternated in each repeat)")
        ->check(CLI::IsMember(precision_names()));
  }
}});

}  // namespace
}  // namespace expnet::cli

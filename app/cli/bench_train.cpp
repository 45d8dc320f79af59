// expnet bench train: images/s of end-to-end XE training (loader with image
// decoding, backbone, encoder, decoder, loss, backward, RAdam) at the issue's
// calibration configuration (the shapes-demo model, batch 32), with the time of
// each phase; medians over steps after warm-up. expnet bench scst: the same for
// SCST steps (frozen backbone, 5 samples per image, CIDEr-D rewards), batch 16 images.
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <iostream>

#include "command.h"
#include "expnet/model/model_config.h"
#include "expnet/system/paths.h"
#include "expnet/train/train_bench.h"
#include "op_profile.h"

namespace expnet::cli {
namespace {

struct Options {
  bool scst = false;  // bench scst
  std::string model, data, precision = "auto";
  int64_t batch = 32, steps = 10, warmup = 3, images = 300, samples = 5, max_len = 20;
  int workers = 2;
  bool json = false;
  bool unfused = false;  // LibTorch's operators where the fused training kernels would run
  bool profile = false;  // one more step under LibTorch's profiler: operators by self time on stderr
  std::string trace;     // and that step's Chrome trace
};

// The 1-minute load average: figures taken on a busy machine say so.
double load_average() {
  std::ifstream in("/proc/loadavg");
  double value = -1;
  in >> value;
  return value;
}

void run(const RuntimeOptions& runtime, const Options& o) {
  apply_runtime(runtime);
  TrainBenchOptions b;
  b.device = runtime.device;
  if (!o.model.empty()) b.model_json = resolve_model_config(o.model).to_json();
  b.data_dir = o.data.empty() ? ensure_dir(cache_dir() + "/bench-train") + "/shapes-" + std::to_string(o.images) : o.data;
  b.shapes_images = o.images;
  b.batch = o.batch;
  b.steps = o.steps;
  b.warmup = o.warmup;
  b.workers = o.workers;
  b.precision = o.precision == "fp32" ? TrainPrecision::fp32 : o.precision == "bf16" ? TrainPrecision::bf16 : TrainPrecision::automatic;
  b.samples_per_image = o.samples;
  b.max_len = o.max_len;
  b.fused = !o.unfused;
  if (o.profile || !o.trace.empty())
    b.profile_step = [&o](const std::function<void()>& step) {
      profile_ops(std::string(o.scst ? "one SCST step" : "one XE step") + " after the timed ones", step, std::cerr, 30,
                  o.trace);
    };
  const auto r = o.scst ? bench_scst(b) : bench_training(b);
  nlohmann::json phases = {{"step", r.step_ms}, {"data", r.data_ms}, {"backbone_fwd", r.backbone_fwd_ms}};
  if (o.scst)
    phases.update({{"sample", r.sample_ms}, {"reward", r.reward_ms}});
  else
    phases["encdec_fwd"] = r.encdec_fwd_ms;
  phases.update({{"loss", r.loss_ms}, {"backward", r.backward_ms}, {"optimizer", r.optimizer_ms}});
  if (o.json) {
    // clang-format off
    nlohmann::json report{{"model", o.model.empty() ? "shapes-demo" : o.model}, {"parameters", r.parameters},
                          {"batch", r.batch}, {"steps", r.steps}, {"warmup", o.warmup}, {"threads", torch_threads()},
                          {"device", b.device}, {"precision", r.precision}, {"fused", r.fused},
                          {"images_per_s", r.images_per_s}, {"cpu_ms_per_step", r.cpu_ms},
                          {"images_per_cpu_s", r.images_per_cpu_s}, {"load_average", load_average()},
                          {"omp_wait_policy", std::getenv("OMP_WAIT_POLICY") ? std::getenv("OMP_WAIT_POLICY") : "default"},
                          {"median_ms", phases}};
    // clang-format on
    if (o.scst) report.update({{"samples_per_image", o.samples}, {"max_len", o.max_len}, {"mean_sampled_words", r.mean_sampled_words}});
    std::cout << report.dump() << std::endl;
    return;
  }
  std::cout << (o.scst ? "SCST training (" + std::to_string(o.samples) + " samples per image, " +
                             std::to_string(r.mean_sampled_words).substr(0, 4) + " words each on average), "
                       : std::string("XE training, "))
            << (o.model.empty() ? "shapes-demo" : o.model) << " model (" << r.parameters
            << (o.scst ? " trained parameters), batch " : " parameters), batch ") << r.batch << ", " << b.device << ", "
            << r.precision << (r.fused ? "" : " (unfused)") << ", " << torch_threads() << " threads, median of "
            << r.steps << " steps:\n  " << r.images_per_s << " images/s (" << r.step_ms << " ms per step; CPU "
            << r.cpu_ms << " ms, " << r.images_per_cpu_s << " images per CPU-second)\n  load average " << load_average()
            << "\n";
  for (const auto& [name, value] : phases.items())
    if (name != "step") std::cout << "  " << name << " " << value.get<double>() << " ms\n";
}

// Both benchmarks' options: one table, `scst` picks the objective and its defaults.
void add_bench_options(CLI::App* command, const std::shared_ptr<Options>& o) {
  command->add_option("--model", o->model, "Model preset or config JSON (default: the shapes-demo calibration model)");
  command->add_option("--data", o->data, "Shapes dataset folder (generated when absent; default: in the cache dir)");
  command->add_option("--images", o->images, "Images to generate when the dataset is absent (default 300)");
  command->add_option("--batch", o->batch, o->scst ? "Images per step (default 16)" : "Pairs per step (default 32)");
  command->add_option("--steps", o->steps, "Timed steps (default 10)");
  command->add_option("--warmup", o->warmup, "Untimed steps first (default 3)");
  command->add_option("--workers", o->workers, "Image decoding threads of the loader (default 2)");
  command->add_option("--precision", o->precision, "fp32, bf16 or auto (default: bf16 where the CPU or GPU has it)")
      ->check(CLI::IsMember({"fp32", "bf16", "auto"}));
  if (o->scst) {
    command->add_option("--samples", o->samples, "Captions sampled per image (default 5)")->check(CLI::Range(2, 100));
    command->add_option("--max-len", o->max_len, "Longest sampled caption in words (default 20)")->check(CLI::Range(1, 200));
  }
  command->add_flag("--json", o->json, "One compact JSON object on stdout");
  command->add_flag(
      "--unfused", o->unfused,
      "LibTorch's operators where the fused training kernels would run (Swin's window attention, dropout), to compare");
  command->add_flag("--profile", o->profile,
                    "Also print one more step's operators by self time and its stages (stderr; not in the figures)");
  command->add_option("--trace", o->trace, "Write that profiled step's Chrome trace (chrome://tracing, Perfetto) here");
}

const bool registered = register_command({"bench train", 205, [](CLI::App& root) {
  auto* bench = command_group(root, "bench", "Benchmarks (medians over repeated runs)");
  auto* command = bench->add_subcommand("train", "Images/s of end-to-end XE training steps on the shapes set");
  auto runtime = add_runtime_options(command);
  auto o = std::make_shared<Options>();
  add_bench_options(command, o);
  command->callback([runtime, o] { run(*runtime, *o); });
}});

const bool registered_scst = register_command({"bench scst", 206, [](CLI::App& root) {
  auto* bench = command_group(root, "bench", "Benchmarks (medians over repeated runs)");
  auto* command = bench->add_subcommand("scst", "Images/s of SCST training steps on the shapes set (frozen backbone)");
  auto runtime = add_runtime_options(command);
  auto o = std::make_shared<Options>();
  o->scst = true;
  o->batch = 16;
  add_bench_options(command, o);
  command->callback([runtime, o] { run(*runtime, *o); });
}});

}  // namespace
}  // namespace expnet::cli

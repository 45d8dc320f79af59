// The training run behind `expnet train` (see expnet/train/trainer.h,
// docs/training.md): the stages in order, each an epoch loop of optimizer steps
// followed by validation and a checkpoint.
#include "expnet/train/trainer.h"

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <memory>

#include "expnet/checkpoint/pth_writer.h"
#include "expnet/checkpoint/state_dict.h"
#include "expnet/data/data_loader.h"
#include "expnet/image/image_decode.h"
#include "expnet/image/preprocess.h"
#include "expnet/model/expansion_net.h"
#include "expnet/train/distributed.h"
#include "expnet/model/pnaic.h"
#include "expnet/train/lr_schedule.h"
#include "expnet/train/backbone_init.h"
#include "expnet/train/config_diff.h"
#include "expnet/train/pnaic_teacher.h"
#include "expnet/train/radam.h"
#include "expnet/train/run_lock.h"
#include "expnet/train/run_registry.h"
#include "expnet/train/run_store.h"
#include "expnet/train/train_steps.h"
#include "train/autocast_scope.h"
#include "train/distilled_data.h"
#include "train/rank_agreement.h"
#include "train/run_checkpoints.h"
#include "train/stage_features.h"
#include "train/train_data.h"
#include "train/train_progress.h"
#include "train/train_validation.h"

namespace fs = std::filesystem;

namespace expnet {
namespace {

std::atomic<int> g_stop_signal{0};
extern "C" void on_stop_signal(int sig) { g_stop_signal = sig; }

// SIGINT and SIGTERM set g_stop_signal while it lives; the previous handlers come back after.
struct StopSignals {
  StopSignals() : old_int(std::signal(SIGINT, on_stop_signal)), old_term(std::signal(SIGTERM, on_stop_signal)) {}
  ~StopSignals() {
    std::signal(SIGINT, old_int);
    std::signal(SIGTERM, old_term);
  }
  void (*old_int)(int);
  void (*old_term)(int);
};

// A running stage: its loader, schedule, trained parameters and step options.
struct StageRun {
  const StageConfig& stage;
  std::unique_ptr<DataLoader> loader;
  uint64_t loader_seed = 0;
  int64_t per_epoch = 0;  // micro-batches
  LrSchedule schedule;
  std::vector<torch::Tensor> params;
  XeStepOptions xe;
  ScstOptions scst;
  PnaicStepOptions pnaic;
};

// What one optimizer step did.
struct StepFigures {
  double loss = 0;        // summed over its micro-batches (and ranks)
  int64_t images = 0;
  double grad_norm = 0;
  bool finite = true;     // false: the NaN guard skipped the update
  bool stop = false;      // SIGINT/SIGTERM seen (by any rank)
};

class Trainer {
 public:
  Trainer(const TrainConfig& config, const TrainOptions& options)
      : config_(config), options_(options), checkpoints_(options.out_dir + "/checkpoints", config.keep_last) {}
  TrainOutcome run();

 private:
  TrainOutcome train();  // after the store is open: data, model, run, stages
  // set-up
  void join_process_group();
  void prepare_pnaic();
  void build_model();
  void open_store();
  void open_run();
  bool resume_from_latest();
  void sync_parameters();
  // a stage
  void run_stage(const StageConfig& stage);
  StageRun begin_stage(const StageConfig& stage);
  StepFigures optimizer_step(StageRun& run);
  torch::Tensor batch_loss(StageRun& run, const Batch& batch);
  torch::Tensor batch_features(const StageConfig& stage, const Batch& batch);
  void apply_update(StageRun& run, StepFigures& step);
  void log_step(const StageRun& run, const StepFigures& step, double images_per_s);
  void draw_progress(const StageConfig& stage, int64_t done, int64_t total, double ips, double loss);
  void finish_epoch(StageRun& run, double last_loss);
  ValidationRecord validate();
  void save_checkpoint_now(bool best);
  TrainOutcome finish();

  bool rank0() const { return !group_ || group_->rank() == 0; }
  int world() const { return group_ ? group_->size() : 1; }
  CheckpointMetadata metadata() const;

  TrainConfig config_;
  TrainOptions options_;
  RunCheckpoints checkpoints_;
  torch::Device device_{torch::kCPU};
  ModelConfig model_config_;
  TrainData data_;
  ExpansionNet model_{nullptr};
  std::unique_ptr<RAdam> optimizer_;
  std::unique_ptr<RunStore> store_;
  int64_t run_id_ = 0;
  std::unique_ptr<RunFolderLock> folder_lock_;  // rank 0, before anything is written: the folder is this run's alone
  std::unique_ptr<RunLock> lock_;  // rank 0, once the run is ours: it is live (run_lock.h)
  std::chrono::steady_clock::time_point wall_start_ = std::chrono::steady_clock::now();
  double wall_offset_ = 0;  // a resumed run's training seconds before this process
  TrainProgress progress_;
  std::unique_ptr<StageFeatures> features_;  // frozen stages with the disk cache
  bool interrupted_ = false;
  AutocastMode autocast_ = AutocastMode::off;  // --autocast (float16) or the config's bf16
  std::unique_ptr<ProcessGroup> group_;  // distributed runs only
  std::unique_ptr<PnaicRun> pnaic_;      // PNAIC runs only; the teacher is released once the student is built
};

// ---------------------------------------------------------------- set-up

void Trainer::join_process_group() {
  const auto env = distributed_env_from_environment();
  if (!env.active()) return;
  const bool cuda = device_.is_cuda();
  if (cuda) device_ = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(env.local_rank));
  const double seconds = options_.dist_timeout_s > 0 ? options_.dist_timeout_s : config_.dist_timeout;
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
  group_ = std::make_unique<ProcessGroup>(env, timeout, options_.device);
  if (!rank0()) spdlog::set_level(spdlog::level::warn);  // one voice: rank 0 logs progress
  spdlog::info("distributed: {} ranks ({}), rank 0 writes checkpoints and the run store; a collective waits {} s for the others",
               env.world_size, cuda ? "NCCL" : "Gloo", seconds);
}

// A PNAIC run: the teacher, the student's config (written into config_, so the
// run store and every checkpoint carry it) and every bad input, before the data.
void Trainer::prepare_pnaic() {
  const std::string source = "training config '" + config_.name + "'";
  pnaic_ = std::make_unique<PnaicRun>(prepare_pnaic_run(config_, options_.device, source));
  config_.model_json = pnaic_->student_config.to_json();
  if (!config_.init_checkpoint.empty())
    check_student_checkpoint(config_.init_checkpoint, *pnaic_, "init_checkpoint of " + source);
  if (options_.resume && checkpoints_.any())
    check_student_checkpoint(checkpoints_.latest_path(), *pnaic_, "the run's latest checkpoint (--resume)");
}

void Trainer::build_model() {
  model_config_ = ModelConfig::from_json(config_.model_json, "training config model");
  // Seed before construction: the reference initialisation keeps the modules'
  // default (random) 1-D biases, drawn in the constructors.
  torch::manual_seed(config_.seed);
  model_ = ExpansionNet(model_config_, static_cast<int64_t>(data_.vocab->size()));
  if (pnaic_) {
    // Encoder and backbone (and the decoder when asked) start from the teacher.
    const auto copied = init_pnaic_from_aic(*model_, pnaic_->teacher->model(), config_.decoder_from_teacher);
    spdlog::info("PNAIC student (K = {}) initialised from teacher {} ({} tensors, decoder {})", model_config_.pnaic_groups,
                 pnaic_->teacher_path, copied, config_.decoder_from_teacher ? "from the teacher" : "fresh");
    pnaic_->teacher.reset();
  }
  if (!config_.backbone_checkpoint.empty())
    spdlog::info("backbone from {} ({} tensors)", backbone_checkpoint_path(config_.backbone_checkpoint),
                 init_backbone_from_checkpoint(*model_, config_.backbone_checkpoint, "run '" + config_.name + "'"));
  if (!config_.init_checkpoint.empty()) {
    // Fine-tuning (e.g. SCST from an XE run's best.pth): every weight must fit.
    const auto report = load_state_dict(*model_, config_.init_checkpoint);
    spdlog::info("initialised from {} ({} tensors)", config_.init_checkpoint, report.loaded.size());
  }
  model_->to(device_);
}

// Rank 0's store, by its canonical path: readers (the studio) test the run's
// lock by that path. Other stores than the default one are registered so the
// studio and `expnet runs list` find the run (run_registry.h).
void Trainer::open_store() {
  const std::string path = options_.store_path.empty() ? options_.out_dir + "/runs.sqlite" : options_.store_path;
  store_ = std::make_unique<RunStore>(fs::weakly_canonical(fs::absolute(path)).string());
  try {
    register_run_store(store_->path());
  } catch (const std::exception& e) {
    spdlog::warn("the run store is not registered: the studio's Runs page will not list it by itself: {}", e.what());
  }
}

// --resume continues the run of that name from its latest checkpoint; a new run
// gets its row (and its stages') in the store.
void Trainer::open_run() {
  if (options_.resume) {
    if (store_) {
      const auto existing = store_->find_run_by_name(config_.name);
      if (!existing) throw std::runtime_error("--resume: no run named '" + config_.name + "' in " + store_->path());
      // Refused before the lock: a refused resume leaves the run's record as it was.
      if (const auto changes = resume_config_changes(existing->config_json, config_); !changes.empty())
        throw std::runtime_error("--resume: the config differs from the one run '" + config_.name + "' was started with (" +
                                 describe_changes(changes) + "): resume with the run's own config (`expnet runs show " +
                                 config_.name + " --json` prints it), or train a new run with another name");
      lock_ = std::make_unique<RunLock>(store_->path(), existing->id);  // before anything of the run changes
      run_id_ = existing->id;
    }
    // No checkpoint yet (killed early): the run starts over under its name.
    if (resume_from_latest() && store_) wall_offset_ = store_->find_run_by_name(config_.name)->wall_s;
    return;
  }
  if (checkpoints_.any())
    throw std::runtime_error("run folder '" + options_.out_dir + "' already has checkpoints: use --resume or another --out");
  if (!store_) return;
  run_id_ = store_->create_run(config_.name, config_.to_json(), fs::absolute(options_.out_dir).string());
  lock_ = std::make_unique<RunLock>(store_->path(), run_id_);
  for (size_t i = 0; i < config_.stages.size(); ++i)
    store_->add_stage(run_id_, static_cast<int64_t>(i), config_.stages[i].name, config_.stages[i].to_json());
}

bool Trainer::resume_from_latest() {
  auto point = checkpoints_.load_latest(*model_);
  if (!point) return false;
  progress_ = point->progress;
  if (rank0()) checkpoints_.tidy(progress_.kept);
  if (point->has_optimizer) {
    const auto& stage = config_.stages.at(static_cast<size_t>(progress_.stage));
    optimizer_ = std::make_unique<RAdam>(trainable_parameters(*model_, stage.frozen_backbone), RAdamOptions(stage.lr));
    optimizer_->load(point->optimizer);
  }
  if (store_) store_->truncate_after(run_id_, progress_.global_step);
  spdlog::info("resumed from {} (stage {}, epoch {}, batch {}, step {})", point->stem, progress_.stage, progress_.epoch,
               progress_.position, progress_.global_step);
  return true;
}

void Trainer::sync_parameters() {
  // Every rank builds and loads the same model; rank 0's copy is made the truth anyway.
  torch::NoGradGuard no_grad;
  for (auto& p : model_->parameters()) {
    auto data = p.data();
    group_->broadcast(data);
  }
  for (auto& b : model_->buffers()) group_->broadcast(b);
}

// ---------------------------------------------------------------- a stage

StageRun Trainer::begin_stage(const StageConfig& stage) {
  StageRun run{stage};
  LoaderOptions lo;
  lo.mode = stage.objective == Objective::scst || stage.batch_unit == BatchUnit::image ? SamplingMode::ImageWise
                                                                                      : SamplingMode::CaptionWise;
  // Distributed: the loader plans global batches of batch x world items and
  // this rank builds its slice, so N ranks of batch b train like one of N*b.
  lo.batch_size = stage.batch * world();
  lo.shard_rank = group_ ? group_->rank() : 0;
  lo.shard_count = world();
  lo.seed = config_.seed + static_cast<uint64_t>(progress_.stage) * 1000003ULL;
  lo.workers = config_.workers;
  lo.max_words = config_.validation_max_len;
  run.loader_seed = lo.seed;
  ImageSource source;
  // A stage resumed after its last epoch needs no features.
  if (stage.frozen_backbone && config_.feature_cache == FeatureCacheMode::disk && progress_.epoch < stage.epochs)
    features_ = std::make_unique<StageFeatures>(data_.dataset, model_config_, model_, device_, options_.out_dir, stage.name,
                                                group_.get(), options_.progress, config_.features);
  else
    source = [](const std::string& path) { return load_image_rgb(path); };
  run.loader = std::make_unique<DataLoader>(data_.dataset, *data_.vocab, lo, source);
  if (!progress_.loader_state.empty()) run.loader->restore(LoaderState::from_json(progress_.loader_state));
  run.per_epoch = run.loader->batches_per_epoch();
  if (stage.max_batches_per_epoch > 0) run.per_epoch = std::min(run.per_epoch, stage.max_batches_per_epoch);
  run.schedule = LrSchedule{stage.schedule, stage.lr, stage.warmup, stage.anneal_factor, stage.anneal_every, run.per_epoch, 5e-7};
  run.params = trainable_parameters(*model_, stage.frozen_backbone);
  if (!optimizer_) optimizer_ = std::make_unique<RAdam>(run.params, RAdamOptions(stage.lr));
  DropoutRates rates;
  rates.enc = rates.dec = rates.enc_input = rates.dec_input = rates.other = stage.dropout;
  rates.swin_drop_path = stage.frozen_backbone ? 0.0 : stage.drop_path;
  model_->set_dropout(rates);
  run.xe.pad_id = data_.vocab->pad_id();
  run.xe.image_wise = lo.mode == SamplingMode::ImageWise;
  run.scst.sos_id = data_.vocab->sos_id();
  run.scst.eos_id = data_.vocab->eos_id();
  run.scst.pad_id = data_.vocab->pad_id();
  run.scst.max_len = config_.validation_max_len;
  run.pnaic.groups = model_config_.pnaic_groups;
  run.pnaic.tokens = {data_.vocab->sos_id(), data_.vocab->eos_id(), data_.vocab->del_id(), data_.vocab->pad_id()};
  run.pnaic.p_delete = stage.deletion;
  run.pnaic.c0 = stage.curriculum_c0;
  run.pnaic.total_steps = run.per_epoch * stage.epochs;  // M: the stage's micro-batches
  run.pnaic.image_wise = run.xe.image_wise;
  return run;
}

void Trainer::run_stage(const StageConfig& stage) {
  StageRun run = begin_stage(stage);
  while (progress_.epoch < stage.epochs) {
    const auto started = std::chrono::steady_clock::now();
    int64_t images_seen = 0;
    double last_loss = 0;
    while (progress_.position < run.per_epoch) {
      const StepFigures step = optimizer_step(run);
      images_seen += step.images;
      last_loss = step.loss;
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      log_step(run, step, secs > 0 ? images_seen / secs : 0);
      if (step.stop) {
        save_checkpoint_now(false);
        interrupted_ = true;
        return;  // the feature cache stays for --resume
      }
      if (config_.checkpoint_every > 0 && progress_.global_step % config_.checkpoint_every == 0 &&
          progress_.position < run.per_epoch)
        save_checkpoint_now(false);
    }
    finish_epoch(run, last_loss);
  }
  if (features_) {
    // The next stage, when frozen too, reads the same file (the backbone did not
    // change); otherwise the features are never read again.
    const size_t next = static_cast<size_t>(progress_.stage) + 1;
    features_->close(next < config_.stages.size() && config_.stages[next].frozen_backbone, rank0());
    features_.reset();
  }
}

// `accumulate` micro-batches, then one update of the parameters.
StepFigures Trainer::optimizer_step(StageRun& run) {
  model_->train();
  if (run.stage.frozen_backbone) model_->swin_transf->eval();
  // Distributed: dropout/sampling streams differ per rank but stay a pure
  // function of (seed, step, rank), so --resume stays exact.
  if (group_)
    torch::manual_seed(config_.seed * 1000003ULL + static_cast<uint64_t>(progress_.global_step) * 7919ULL +
                       static_cast<uint64_t>(group_->rank()));
  StepFigures step;
  for (int64_t micro = 0; micro < run.stage.accumulate && progress_.position < run.per_epoch; ++micro) {
    optimizer_->param_groups()[0].options().set_lr(run.schedule.rate(progress_.iteration));
    Batch batch = run.loader->next();
    const torch::Tensor loss = batch_loss(run, batch);
    if (loss.defined()) {
      if (options_.autocast) (loss * progress_.loss_scale).backward();
      else loss.backward();
      step.loss += loss.item<double>();
    }
    step.images += static_cast<int64_t>(batch.size());
    ++progress_.iteration;
    ++progress_.position;
    progress_.loader_state = run.loader->state().to_json();
  }
  apply_update(run, step);
  return step;
}

// One micro-batch's loss, undefined when this rank's slice of the global batch
// is empty (the last one may leave a rank nothing).
torch::Tensor Trainer::batch_loss(StageRun& run, const Batch& batch) {
  if (run.stage.objective == Objective::scst) {
    if (batch.size() == 0) return {};
    AutocastScope autocast(autocast_);
    const auto features = batch_features(run.stage, batch);
    // Gradients are summed over ranks: each contributes its mean / N.
    return scst_step(*model_, features, batch, data_.reward_rows, *data_.reward, run.scst).loss / static_cast<double>(world());
  }
  XeStepResult xe;
  if (batch.size() > 0 && run.stage.objective == Objective::pnaic) {
    AutocastScope autocast(autocast_);
    // Curriculum step m and the divisions' draws: functions of (seed, stage,
    // iteration) and each caption's image, so --resume draws the same groups.
    run.pnaic.step = progress_.iteration;
    run.pnaic.draw_seed = config_.seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(progress_.stage) * 1000003ULL +
                          static_cast<uint64_t>(progress_.iteration) * 7919ULL;
    xe = pnaic_xe_step(*model_, batch_features(run.stage, batch), batch, run.pnaic);
  } else if (batch.size() > 0) {
    AutocastScope autocast(autocast_);
    xe = xe_step(*model_, batch_features(run.stage, batch), batch, run.xe);
  }
  if (!group_) return xe.loss;
  // Distributed XE is normalised by the non-pad target count of the whole (global) batch.
  auto count = torch::full({1}, static_cast<double>(xe.target_tokens), torch::kDouble);
  group_->all_reduce_sum(count);
  const double global_tokens = count.item<double>();
  if (xe.loss.defined() && global_tokens > 0)
    xe.loss = xe.loss * (static_cast<double>(xe.target_tokens) / global_tokens);
  return xe.loss;
}

torch::Tensor Trainer::batch_features(const StageConfig& stage, const Batch& batch) {
  if (!stage.frozen_backbone)
    return model_->backbone(images_to_model_input(batch.images, static_cast<int>(model_config_.swin_img_size)).to(device_));
  torch::NoGradGuard no_grad;
  if (features_) return features_->features(batch.image_indices);
  return model_->backbone(images_to_model_input(batch.images, static_cast<int>(model_config_.swin_img_size)).to(device_));
}

void Trainer::apply_update(StageRun& run, StepFigures& step) {
  // Distributed: one flattened all-reduce of the gradients, carrying the
  // loss, the image count and the stop request, so all ranks decide alike.
  step.stop = g_stop_signal != 0;
  if (group_) {
    const auto sums = all_reduce_gradients(*group_, run.params,
                                           {step.loss, static_cast<double>(step.images), step.stop ? 1.0 : 0.0});
    step.loss = sums[0];
    step.images = static_cast<int64_t>(std::llround(sums[1]));
    step.stop = sums[2] > 0;
  }
  if (options_.autocast) divide_gradients(run.params, progress_.loss_scale);
  // NaN/inf guard: the update is skipped (and recorded) when the loss or the gradient is not finite.
  const double max_norm = run.stage.clip > 0 ? run.stage.clip : std::numeric_limits<double>::infinity();
  step.grad_norm = clip_gradient_norm(run.params, max_norm);
  step.finite = std::isfinite(step.loss) && std::isfinite(step.grad_norm);
  if (step.finite) optimizer_->step();
  optimizer_->zero_grad();
  if (options_.autocast) progress_.update_loss_scale(step.finite);
  ++progress_.global_step;
}

void Trainer::log_step(const StageRun& run, const StepFigures& step, double images_per_s) {
  const double wall_s = wall_offset_ + std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start_).count();
  if (store_)
    store_->log_step({run_id_, progress_.stage, progress_.epoch, progress_.global_step, step.loss,
                      optimizer_->param_groups()[0].options().get_lr(), step.grad_norm, images_per_s, !step.finite, wall_s});
  draw_progress(run.stage, progress_.position, run.per_epoch, images_per_s, step.loss);
}

void Trainer::draw_progress(const StageConfig& stage, int64_t done, int64_t total, double ips, double loss) {
  if (!options_.progress || !rank0()) return;
  const int width = 24;
  const int filled = total > 0 ? static_cast<int>(width * done / total) : 0;
  const double eta = ips > 0 ? (total - done) * static_cast<double>(stage.batch) / ips : 0;
  std::fprintf(stderr, "\r[%s] epoch %lld/%lld [%s%s] %lld/%lld %.1f img/s ETA %dm%02ds loss %.4f CIDEr-D %.3f ",
               stage.name.c_str(), static_cast<long long>(progress_.epoch + 1), static_cast<long long>(stage.epochs),
               std::string(static_cast<size_t>(filled), '#').c_str(), std::string(static_cast<size_t>(width - filled), '.').c_str(),
               static_cast<long long>(done), static_cast<long long>(total), ips, static_cast<int>(eta) / 60,
               static_cast<int>(eta) % 60, loss, progress_.last_cider);
  std::fflush(stderr);
}

// Validation, then the run moves to the first batch of the next epoch (what is
// left of a capped epoch is skipped) and a checkpoint records it there.
void Trainer::finish_epoch(StageRun& run, double last_loss) {
  if (options_.progress && rank0()) std::fprintf(stderr, "\n");
  const auto v = validate();
  progress_.last_cider = v.cider_d;
  const bool best = v.cider_d > progress_.best_cider;
  if (best) progress_.best_cider = v.cider_d;
  if (rank0())
    spdlog::info("stage {} epoch {}: loss {:.4f}, BLEU-1 {:.4f}, BLEU-4 {:.4f}, ROUGE-L {:.4f}, CIDEr-D {:.4f}",
                 run.stage.name, progress_.epoch + 1, last_loss, v.bleu1, v.bleu4, v.rouge_l, v.cider_d);
  LoaderState next;
  next.seed = run.loader_seed;
  next.epoch = progress_.epoch + 1;
  next.position = 0;
  run.loader->restore(next);
  progress_.loader_state = next.to_json();
  progress_.position = 0;
  progress_.epoch = next.epoch;
  save_checkpoint_now(best);
}

ValidationRecord Trainer::validate() {
  ValidationOptions vo;
  vo.beam = config_.validation_beam;
  vo.max_len = config_.validation_max_len;
  vo.image_size = static_cast<int>(model_config_.swin_img_size);
  vo.device = device_;
  auto result = validate_captions(model_, data_.dataset, data_.val_images, *data_.vocab, vo, group_.get());
  if (!rank0()) return result.scores;
  ValidationRecord v = result.scores;
  v.run = run_id_;
  v.stage = progress_.stage;
  v.epoch = progress_.epoch;
  v.step = progress_.global_step;
  for (auto& s : result.samples) {
    s.run = run_id_;
    s.stage = progress_.stage;
    s.epoch = progress_.epoch;
  }
  store_->log_validation(v);
  store_->log_samples(result.samples);
  return v;
}

CheckpointMetadata Trainer::metadata() const {
  CheckpointMetadata meta;
  meta.config_json = config_.model_json;
  meta.vocabulary_json = data_.vocab->to_json();
  meta.decoding_json = config_.decoding_json;  // the recipe's "decoding": what the checkpoints are meant for
  return meta;
}

// The model, optimizer and progress as they are now; rank 0 is the one writer
// (the others load the same files on --resume).
void Trainer::save_checkpoint_now(bool best) {
  if (rank0()) checkpoints_.save(progress_, *model_, metadata(), optimizer_.get(), best);
}

// ---------------------------------------------------------------- the run

TrainOutcome Trainer::run() {
  if (options_.out_dir.empty()) throw std::runtime_error("expnet train: --out DIR is required for a run folder");
  device_ = torch::Device(options_.device);
  autocast_ = training_autocast(options_.autocast, config_.precision, device_);
  make_run_folder(options_.out_dir);
  join_process_group();
  if (rank0()) folder_lock_ = std::make_unique<RunFolderLock>(options_.out_dir, config_.name);
  if (is_pnaic_run(config_)) prepare_pnaic();  // bad input fails here, before data and training
  if (rank0()) open_store();
  try {
    return train();
  } catch (const std::exception& e) {
    // Once the run is ours (locked), what stopped it is recorded with it; a
    // run another trainer holds is not touched.
    if (store_ && lock_) {
      try {
        store_->set_status(run_id_, dynamic_cast<const DistributedPeerLost*>(&e) ? "interrupted" : "failed", e.what());
      } catch (const std::exception& store_error) {
        spdlog::warn("could not mark the run failed: {}", store_error.what());
      }
    }
    throw;
  }
}

TrainOutcome Trainer::train() {
  // Rank 0 generates a missing shapes set; the others wait for it (generation can outlast the collective timeout).
  if (group_ && !rank0()) group_->wait_flag("data", std::chrono::hours(1));
  data_ = load_train_data(config_, options_.out_dir, rank0());
  if (group_ && rank0()) group_->set_flag("data");
  if (pnaic_) use_distillation_targets(data_, *pnaic_, config_, options_.out_dir, group_.get(), options_.progress);
  build_model();
  // Ctrl-C and `expnet runs stop` are handled from open_run (the lock: the run is live) until
  // finish() lets the lock go, so a stop in between never kills the trainer half-way.
  const StopSignals stop_signals;
  open_run();
  if (group_) {
    const std::string resumed_from = options_.resume && checkpoints_.any() ? checkpoints_.latest_path() : "";
    check_ranks_agree(*group_, make_rank_fingerprint(config_, data_, resumed_from));
    sync_parameters();
    group_->barrier();  // every rank is ready (and rank 0 made its run) before the first step
  }
  if (store_) store_->set_status(run_id_, "running");
  wall_start_ = std::chrono::steady_clock::now();
  for (; progress_.stage < static_cast<int64_t>(config_.stages.size()); ++progress_.stage) {
    run_stage(config_.stages[static_cast<size_t>(progress_.stage)]);
    if (interrupted_) break;
    // The next stage starts fresh: new optimizer, loader and schedule.
    optimizer_.reset();
    progress_.epoch = progress_.position = progress_.iteration = 0;
    progress_.loader_state.clear();
  }
  return finish();
}

TrainOutcome Trainer::finish() {
  TrainOutcome outcome;
  outcome.status = interrupted_ ? "interrupted" : "finished";
  outcome.last_cider_d = progress_.last_cider;
  outcome.steps = progress_.global_step;
  outcome.rank = group_ ? group_->rank() : 0;
  if (!interrupted_ && rank0()) {
    outcome.final_checkpoint = options_.out_dir + "/final.pth";
    save_checkpoint(outcome.final_checkpoint, module_state(*model_), metadata());
  }
  if (store_) store_->set_status(run_id_, outcome.status);
  if (group_) group_->barrier();  // nobody leaves before rank 0 has written final.pth
  lock_.reset();  // the run is no longer live
  return outcome;
}

}  // namespace

TrainOutcome run_training(const TrainConfig& config, const TrainOptions& options) {
  g_stop_signal = 0;
  // Past `ulimit -f` a write then fails with EFBIG, reported and recorded as the
  // run's failure, instead of SIGXFSZ killing the trainer without a word.
  std::signal(SIGXFSZ, SIG_IGN);
  Trainer trainer(config, options);
  return trainer.run();
}

}  // namespace expnet

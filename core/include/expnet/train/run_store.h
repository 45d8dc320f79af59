// Training run store: one SQLite database (WAL journal, so readers such as the
// studio or `expnet runs show` read while the trainer writes) holding runs,
// their configuration, stages, per-step figures, per-epoch validation metrics
// and sample captions. Tables are documented in docs/training.md.
// The schema carries a version (PRAGMA user_version, kRunStoreVersion): opening
// a store of an older version copies it to <path>.v<N>.bak and then migrates it;
// a newer version, or a file that is not a healthy run store, throws naming the
// file and is never written to.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace expnet {

constexpr int kRunStoreVersion = 2;

struct RunInfo {
  int64_t id = 0;
  // status as the trainer last wrote it: created | running | finished |
  // interrupted | failed. A trainer killed with SIGKILL leaves "running":
  // run_status() (run_lock.h) tells from the trainer's lock what is true now.
  std::string name, status, config_json, out_dir, created_at, updated_at;
  std::string notes, tags;           // the user's; tags comma-separated as typed
  std::string error;                 // why a failed run failed (empty otherwise)
  int64_t steps = 0;                 // step rows logged
  int64_t last_step = 0;             // highest optimizer step logged (0: none)
  std::optional<double> best_cider;  // best validation CIDEr-D so far
  int64_t best_stage = 0, best_epoch = 0;  // where best_cider was reached
  double images_per_s = 0;           // mean over the logged steps (0: none)
  double wall_s = 0;                 // training time: the last step's wall_s
};

struct StepRecord {
  int64_t run = 0, stage = 0, epoch = 0, step = 0;
  double loss = 0, lr = 0, grad_norm = 0, images_per_s = 0;
  bool skipped = false;  // NaN/inf guard: the update was not applied
  // Seconds of training since the run started, when this step ended; a resumed
  // run continues from the last logged step's figure. 0: not recorded (version 1 stores).
  double wall_s = 0;
};

struct ValidationRecord {
  int64_t run = 0, stage = 0, epoch = 0, step = 0;
  double bleu1 = 0, bleu2 = 0, bleu3 = 0, bleu4 = 0, rouge_l = 0, cider_d = 0;
};

struct SampleCaption {
  int64_t run = 0, stage = 0, epoch = 0;
  std::string image, caption, reference;
};

class RunStore {
 public:
  // create: the trainer's, an absent file becomes a new store. existing: a
  // reader's, an absent or empty (0-byte) file is refused, never made a store.
  // read_only: a lister's (`expnet runs ...`): as existing, and a store of the
  // current schema is read without writing anything, so a full disk or a
  // read-only mount still lists it (an older one is migrated as by existing).
  enum class Open { create, existing, read_only };
  // Opens the database at `path`; throws std::runtime_error naming the file
  // when it cannot be opened or is not a run store.
  explicit RunStore(const std::string& path, Open mode = Open::create);
  ~RunStore();
  RunStore(const RunStore&) = delete;
  RunStore& operator=(const RunStore&) = delete;

  const std::string& path() const;

  // A new run; the name must be unique in the store (throws otherwise).
  int64_t create_run(const std::string& name, const std::string& config_json, const std::string& out_dir);
  // By name or numeric id; throws std::runtime_error listing how to see runs when absent.
  RunInfo find_run(const std::string& name_or_id) const;
  std::optional<RunInfo> find_run_by_name(const std::string& name) const;
  std::vector<RunInfo> list_runs() const;
  // `error` is kept with status "failed" (and cleared by any other status).
  void set_status(int64_t run, const std::string& status, const std::string& error = "");
  void set_notes(int64_t run, const std::string& notes);
  void set_tags(int64_t run, const std::string& tags);
  // Throws naming the other run when `new_name` is taken (or empty).
  void rename_run(int64_t run, const std::string& new_name);

  void add_stage(int64_t run, int64_t index, const std::string& name, const std::string& config_json);
  void log_step(const StepRecord& record);
  void log_steps(const std::vector<StepRecord>& records);  // one transaction
  void log_validation(const ValidationRecord& record);
  void log_samples(const std::vector<SampleCaption>& samples);
  // Resume: forget what a killed run logged after the checkpoint it resumes from.
  void truncate_after(int64_t run, int64_t step);

  std::vector<StepRecord> steps(int64_t run) const;
  std::vector<ValidationRecord> validations(int64_t run) const;
  std::vector<SampleCaption> samples(int64_t run) const;
  std::vector<std::pair<int64_t, std::string>> stages(int64_t run) const;  // index, name

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The schema version of the file at `path` without opening it for writing:
// 0 when it has no run tables yet (an empty or absent file), -1 when it is not a
// SQLite database. Never modifies the file.
int run_store_file_version(const std::string& path);

// <data_dir>/runs.sqlite (expnet/system/paths.h).
std::string default_run_store_path();

}  // namespace expnet

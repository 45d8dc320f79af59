// `expnet runs table RUN... [--json]`: runs side by side as in an ablation table
// (ExpansionNet v1's Table 3): layer kinds, precision, seed, each run's best
// validation scores and its last CIDEr-D, captioner parameters and training speed
// (docs/training.md, "Ablations").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "expnet/train/run_store.h"

namespace expnet {

struct RunsTableRow {
  std::string run, status;
  std::string encoder, decoder;  // e.g. "Static Exp NE=64", "Dynamic Exp NE=16", "Base", "NG-SAN"
  std::string encoder_layer, decoder_layer;  // the config's kinds
  uint64_t seed = 0;
  std::string precision = "fp32";        // the config's: fp32, bf16 or auto
  std::optional<ValidationRecord> best;  // the validation with the highest CIDEr-D
  std::optional<ValidationRecord> last;  // the run's last validation (the final model's)
  // From the run's best.pth (else its newest checkpoint); -1 without a checkpoint.
  int64_t parameters = -1, captioner_parameters = -1;  // captioner: all but the backbone
  double images_per_s = 0;
};

// The row of a run of `store`, with the status that is true now (run_status of run_lock.h).
RunsTableRow runs_table_row(const RunStore& store, const RunInfo& run);
// Column-aligned text, one line per row, a header first; with more than one
// precision among the rows, a line per precision of its runs' last CIDEr-D.
std::string runs_table_text(const std::vector<RunsTableRow>& rows);
std::string runs_table_json(const std::vector<RunsTableRow>& rows);  // one JSON array

}  // namespace expnet

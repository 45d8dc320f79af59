// A run's curves as CSV: one line per optimizer step and per validation, the
// format of `expnet runs export RUN --csv` and of the Runs page's Export CSV.
#pragma once

#include <ostream>
#include <string>

#include "expnet/train/run_store.h"

namespace expnet {

void write_run_csv(std::ostream& out, const RunStore& store, const RunInfo& run);
// The same into `path`, atomically (expnet/system/atomic_file.h).
void write_run_csv_file(const RunStore& store, const RunInfo& run, const std::string& path);

}  // namespace expnet

// Following a run store as a trainer writes it (`expnet runs follow`): its rows
// as JSON lines, each with a cursor, so a reader over SSH that loses the
// connection continues from the last line it got: no row lost, none twice.
// The format is in docs/remote.md, "Follow format".
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace expnet {

// Version of the JSON lines; the first line ("hello") carries it, and a reader
// refuses another version naming both.
inline constexpr int kFollowFormatVersion = 1;

// Where a follower is: the last row it has of each append-only table (SQLite
// rowids). Runs and stages are sent whole whenever they change, so they need none.
struct FollowCursor {
  int64_t steps = 0, validation = 0, samples = 0;
  std::string text() const;  // "v1:STEPS:VALIDATION:SAMPLES"
  // Throws std::invalid_argument naming the text (another format version included).
  static FollowCursor parse(const std::string& text);
  bool operator==(const FollowCursor& other) const;
};

struct FollowOptions {
  std::string store;
  std::string run;          // a run's name or id; empty: every run of the store
  FollowCursor since;       // rows after it; default: from the first row
  int poll_ms = 500;        // how often the store is read
  double heartbeat_s = 5;   // an "alive" line after this long without another
  double wait_for_run_s = 30;  // a named run not in the store yet is waited for this long
  // A run being (re)started (`train --host --resume`): not over before its
  // trainer has taken its lock or this long has passed.
  double wait_for_start_s = 0;
  std::function<bool()> stop;  // asked at every poll: true returns at once
};

// Emits the store's rows after `since`, then every change as it comes, one JSON
// line per call of `emit` (no newline), and returns after an "end" line once no
// followed run is still running (its status then "finished", "failed" or
// "interrupted"). Throws std::runtime_error naming the store (missing, not a run
// store, a newer schema than this build reads, no such run).
void follow_run_store(const FollowOptions& options, const std::function<void(const std::string& line)>& emit);

}  // namespace expnet

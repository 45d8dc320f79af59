#include "expnet/train/run_follow.h"

#include <sqlite3.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <thread>

#include "expnet/train/run_lock.h"
#include "expnet/train/run_store.h"
#include "system/sqlite_statement.h"
#include "train/run_store_schema.h"

namespace expnet {

using nlohmann::json;

std::string FollowCursor::text() const {
  return "v" + std::to_string(kFollowFormatVersion) + ":" + std::to_string(steps) + ":" + std::to_string(validation) +
         ":" + std::to_string(samples);
}

FollowCursor FollowCursor::parse(const std::string& text) {
  const auto bad = [&](const std::string& why) {
    return std::invalid_argument("cursor '" + text + "' " + why + "; pass the \"cursor\" of a line `expnet runs follow` printed");
  };
  if (text.rfind("v", 0) != 0 || text.find(':') == std::string::npos) throw bad("is not a follow cursor");
  const std::string version = text.substr(1, text.find(':') - 1);
  if (version != std::to_string(kFollowFormatVersion))
    throw bad("is of follow format " + version + ", and this expnet reads format " + std::to_string(kFollowFormatVersion));
  FollowCursor cursor;
  int64_t* fields[] = {&cursor.steps, &cursor.validation, &cursor.samples};
  size_t at = text.find(':') + 1;
  for (size_t i = 0; i < 3; ++i) {
    const size_t end = i < 2 ? text.find(':', at) : text.size();
    if (end == std::string::npos || end == at) throw bad("is not a follow cursor");
    const std::string number = text.substr(at, end - at);
    if (number.find_first_not_of("0123456789") != std::string::npos || number.size() > 18) throw bad("is not a follow cursor");
    *fields[i] = std::stoll(number);
    at = end + 1;
  }
  return cursor;
}

bool FollowCursor::operator==(const FollowCursor& other) const {
  return steps == other.steps && validation == other.validation && samples == other.samples;
}

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kBatchRows = 5000;  // rows of one table per read: a long run's history goes out in slices

json nullable(const sqlite::Statement& s, int column) { return s.is_null(column) ? json(nullptr) : json(s.real(column)); }

// One poll's reading state: what has been sent, to send runs and stages only when they change.
class Follower {
 public:
  Follower(const FollowOptions& options, const std::function<void(const std::string&)>& emit)
      : options_(options), emit_(emit), cursor_(options.since), label_(run_store_label(options.store)), started_(Clock::now()) {}

  void run() {
    emit_(json({{"type", "hello"}, {"format", "expnet-follow"}, {"version", kFollowFormatVersion},
                {"expnet", EXPNET_VERSION}, {"store", options_.store}, {"cursor", cursor_.text()}})
              .dump());
    auto last_line = Clock::now();
    const auto started = Clock::now();
    while (!(options_.stop && options_.stop())) {
      may_wait_ = !options_.run.empty() && seconds_since(started) <= options_.wait_for_run_s;
      const size_t before = lines_;
      const bool more = poll();
      if (lines_ != before) last_line = Clock::now();
      if (!more && followed_.empty() && !options_.run.empty() &&
          seconds_since(started) > options_.wait_for_run_s)
        throw std::runtime_error(label_ + ": no run '" + options_.run + "' appeared in " +
                                 std::to_string(static_cast<int>(options_.wait_for_run_s)) +
                                 " s; see `expnet runs list --store " + options_.store + "`");
      if (!more && ended_) {
        send({{"type", "end"}});
        return;
      }
      if (more) continue;  // a backlog: the next slice at once
      if (seconds_since(last_line) >= options_.heartbeat_s) {
        send({{"type", "alive"}});
        last_line = Clock::now();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(options_.poll_ms));
    }
  }

 private:
  static double seconds_since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  }

  void send(json line) {
    line["cursor"] = cursor_.text();
    emit_(line.dump());
    ++lines_;
  }

  // Reads what is new; true when a table had more rows than one slice.
  bool poll() {
    // A run started a moment ago (`train --host` returns once it runs) may not have made its store yet.
    if (may_wait_ && followed_.empty() && run_store_file_version(options_.store) <= 0) return false;
    check_schema();
    sqlite::Database db = open_run_store_read_only(options_.store);
    // Liveness before the snapshot: a run that has stopped wrote its last rows
    // before it let go of its lock, so a snapshot taken after holds them all.
    live_.clear();
    {
      sqlite::Statement s(db.get(), label_, "SELECT id FROM runs");
      while (s.step()) live_[s.integer(0)] = run_is_live(options_.store, s.integer(0));
    }
    sqlite::exec(db.get(), label_, "BEGIN");  // one snapshot for every table
    const bool any_live = read_runs(db.get());
    read_stages(db.get());
    bool more = read_steps(db.get());
    // Validations wait until every step of the snapshot is out: a mirror takes a step older
    // than what it holds as a resumed run's rewind (run_mirror.cpp), which must not drop a
    // validation that came ahead of its steps.
    if (!more) more = read_validation(db.get());
    more = read_samples(db.get()) || more;
    sqlite::exec(db.get(), label_, "COMMIT");
    seen_live_ = seen_live_ || any_live;
    const bool starting = !seen_live_ && seconds_since(started_) < options_.wait_for_start_s;
    ended_ = !followed_.empty() && !any_live && !starting;
    if (followed_.empty() && options_.run.empty()) ended_ = true;  // a store without runs: nothing to wait for
    return more;
  }

  void check_schema() const {
    const int version = run_store_file_version(options_.store);
    if (version == kRunStoreVersion) return;
    if (version > kRunStoreVersion)
      throw std::runtime_error(label_ + " is of schema " + std::to_string(version) + ", newer than this expnet (" +
                               EXPNET_VERSION + ") reads (schema " + std::to_string(kRunStoreVersion) +
                               "): update expnet here");
    if (version < 0) throw std::runtime_error(label_ + " is not a run store (not a SQLite database); pass a runs.sqlite");
    throw std::runtime_error(label_ + (version == 0 ? " holds no runs yet" : " is of an older schema " +
                                                                                 std::to_string(version)) +
                             ": let `expnet runs list --store " + options_.store + "` read it once, then follow it");
  }

  bool followed(int64_t run) const { return followed_.count(run) > 0; }

  bool read_runs(sqlite3* db) {
    sqlite::Statement s(db, label_,
                        "SELECT id, name, status, config, out_dir, created_at, updated_at, notes, tags, error FROM runs "
                        "ORDER BY id");
    bool any_live = false;
    while (s.step()) {
      const int64_t id = s.integer(0);
      if (!options_.run.empty() && s.text(1) != options_.run && std::to_string(id) != options_.run) continue;
      followed_.insert(id);
      RunInfo info;
      info.status = s.text(2);
      const auto checked = live_.find(id);
      const bool live = checked == live_.end() || checked->second;  // a run newer than the check: not over yet
      any_live = any_live || live;
      json line = {{"type", "run"},       {"id", id},
                   {"name", s.text(1)},   {"status", run_status(info, live)},
                   {"stored_status", info.status}, {"config", s.text(3)},
                   {"out_dir", s.text(4)}, {"created_at", s.text(5)},
                   {"updated_at", s.text(6)}, {"notes", s.text(7)},
                   {"tags", s.text(8)},   {"error", s.text(9)}};
      const std::string key = line.dump();
      if (sent_runs_[id] == key) continue;
      sent_runs_[id] = key;
      send(std::move(line));
    }
    return any_live;
  }

  void read_stages(sqlite3* db) {
    sqlite::Statement s(db, label_, "SELECT run, idx, name, config FROM stages ORDER BY run, idx");
    while (s.step()) {
      const int64_t run = s.integer(0), index = s.integer(1);
      if (!followed(run) || !sent_stages_.insert({run, index}).second) continue;
      send({{"type", "stage"}, {"run", run}, {"index", index}, {"name", s.text(2)}, {"config", s.text(3)}});
    }
  }

  // The rows of an append-only table after `position` (its last rowid sent), a
  // slice at most; column 0 is the rowid, column 1 the run. True when the slice was full.
  bool read_appended(sqlite3* db, const std::string& columns, const char* table, int64_t& position,
                     const std::function<json(const sqlite::Statement&)>& line) {
    sqlite::Statement s(db, label_, "SELECT rowid, " + columns + " FROM " + table + " WHERE rowid > ? ORDER BY rowid LIMIT ?");
    s.bind(1, position).bind(2, int64_t{kBatchRows});
    int rows = 0;
    for (; s.step(); ++rows) {
      position = s.integer(0);
      if (followed(s.integer(1))) send(line(s));
    }
    return rows == kBatchRows;
  }

  bool read_steps(sqlite3* db) {
    return read_appended(db, "run, stage, epoch, step, loss, lr, grad_norm, images_per_s, skipped, wall_s", "steps",
                         cursor_.steps, [](const sqlite::Statement& s) {
                           return json{{"type", "step"}, {"run", s.integer(1)}, {"stage", s.integer(2)},
                                       {"epoch", s.integer(3)}, {"step", s.integer(4)}, {"loss", nullable(s, 5)},
                                       {"lr", nullable(s, 6)}, {"grad_norm", nullable(s, 7)},
                                       {"images_per_s", nullable(s, 8)}, {"skipped", s.integer(9)},
                                       {"wall_s", nullable(s, 10)}};
                         });
  }

  bool read_validation(sqlite3* db) {
    return read_appended(db, "run, stage, epoch, step, bleu1, bleu2, bleu3, bleu4, rouge_l, cider_d", "validation",
                         cursor_.validation, [](const sqlite::Statement& s) {
                           return json{{"type", "validation"}, {"run", s.integer(1)}, {"stage", s.integer(2)},
                                       {"epoch", s.integer(3)}, {"step", s.integer(4)}, {"bleu1", nullable(s, 5)},
                                       {"bleu2", nullable(s, 6)}, {"bleu3", nullable(s, 7)}, {"bleu4", nullable(s, 8)},
                                       {"rouge_l", nullable(s, 9)}, {"cider_d", nullable(s, 10)}};
                         });
  }

  bool read_samples(sqlite3* db) {
    return read_appended(db, "run, stage, epoch, image, caption, reference", "samples", cursor_.samples,
                         [](const sqlite::Statement& s) {
                           return json{{"type", "sample"}, {"run", s.integer(1)}, {"stage", s.integer(2)},
                                       {"epoch", s.integer(3)}, {"image", s.text(4)}, {"caption", s.text(5)},
                                       {"reference", s.text(6)}};
                         });
  }

  const FollowOptions& options_;
  const std::function<void(const std::string&)>& emit_;
  FollowCursor cursor_;
  std::string label_;
  std::set<int64_t> followed_;
  std::map<int64_t, bool> live_;  // run id -> holds its lock, checked before this poll's snapshot
  std::map<int64_t, std::string> sent_runs_;
  std::set<std::pair<int64_t, int64_t>> sent_stages_;
  size_t lines_ = 0;
  bool ended_ = false;
  Clock::time_point started_;
  bool seen_live_ = false;  // a followed run's trainer has held its lock
  bool may_wait_ = false;  // a named run may still appear: a missing store is not an error yet
};

}  // namespace

void follow_run_store(const FollowOptions& options, const std::function<void(const std::string& line)>& emit) {
  Follower(options, emit).run();
}

}  // namespace expnet

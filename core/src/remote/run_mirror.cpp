#include "expnet/remote/run_mirror.h"

#include <sqlite3.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "expnet/system/digest.h"
#include "expnet/system/paths.h"
#include "expnet/train/run_follow.h"
#include "system/sqlite_statement.h"
#include "train/run_store_schema.h"

namespace expnet {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const char* kOriginTable = "mirror_origin";

std::string mirror_label(const std::string& path) { return "mirror store '" + path + "'"; }

void bind_number(sqlite::Statement& s, int i, const json& value) {
  if (value.is_number())
    s.bind(i, value.get<double>());
  else
    s.bind_null(i);
}

}  // namespace

std::string mirror_store_path(const std::string& host, const std::string& remote_store) {
  return (fs::path(data_dir()) / "remote" / host / (sha256_hex(remote_store).substr(0, 16) + ".sqlite")).string();
}

std::optional<MirrorOrigin> mirror_origin(const std::string& store_path) {
  const auto tables = sqlite::table_names(store_path);
  if (!tables || std::find(tables->begin(), tables->end(), kOriginTable) == tables->end()) return std::nullopt;
  sqlite::Database db = open_run_store_read_only(store_path);
  sqlite::Statement s(db.get(), mirror_label(store_path), "SELECT host, store, cursor FROM mirror_origin LIMIT 1");
  if (!s.step()) return std::nullopt;
  return MirrorOrigin{s.text(0), s.text(1), s.text(2)};
}

struct RunMirror::Impl {
  std::string path, label;
  sqlite::Database db;
};

RunMirror::RunMirror(const std::string& path, const std::string& host, const std::string& remote_store)
    : impl_(std::make_unique<Impl>()) {
  impl_->path = path;
  impl_->label = mirror_label(path);
  std::error_code error;
  fs::create_directories(fs::path(path).parent_path(), error);
  const auto before = mirror_origin(path);
  if (before && (before->host != host || before->remote_store != remote_store))
    throw std::runtime_error(impl_->label + " mirrors " + before->remote_store + " on " + before->host + ", not " +
                             remote_store + " on " + host);
  impl_->db = open_run_store(path);
  sqlite3* db = impl_->db.get();
  if (!before) {
    sqlite::Statement runs(db, impl_->label, "SELECT COUNT(*) FROM runs");
    if (runs.step() && runs.integer(0) > 0)
      throw std::runtime_error(impl_->label + " is a local run store with runs of its own, not a mirror: choose another file");
    sqlite::Transaction transaction(db, impl_->label);
    sqlite::exec(db, impl_->label,
                 "CREATE TABLE IF NOT EXISTS mirror_origin(host TEXT NOT NULL, store TEXT NOT NULL, cursor TEXT NOT NULL)");
    sqlite::Statement origin(db, impl_->label, "INSERT INTO mirror_origin(host, store, cursor) VALUES(?, ?, '')");
    origin.bind(1, host).bind(2, remote_store).run();
    transaction.commit();
  }
}

RunMirror::~RunMirror() = default;

const std::string& RunMirror::path() const { return impl_->path; }

std::string RunMirror::cursor() const {
  sqlite::Statement s(impl_->db.get(), impl_->label, "SELECT cursor FROM mirror_origin LIMIT 1");
  return s.step() ? s.text(0) : std::string();
}

void RunMirror::apply(const std::vector<std::string>& lines) {
  sqlite3* db = impl_->db.get();
  const std::string& label = impl_->label;
  sqlite::Transaction transaction(db, label);
  sqlite::Statement run(db, label,
                        "INSERT INTO runs(id, name, status, config, out_dir, created_at, updated_at, notes, tags, error) "
                        "VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET name = excluded.name, "
                        "status = excluded.status, config = excluded.config, out_dir = excluded.out_dir, "
                        "updated_at = excluded.updated_at, notes = excluded.notes, tags = excluded.tags, error = excluded.error");
  sqlite::Statement stage(db, label, "INSERT OR REPLACE INTO stages(run, idx, name, config) VALUES(?, ?, ?, ?)");
  sqlite::Statement step(db, label,
                         "INSERT OR REPLACE INTO steps(run, stage, epoch, step, loss, lr, grad_norm, images_per_s, skipped, "
                         "wall_s, rowid) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  sqlite::Statement validation(db, label,
                               "INSERT OR REPLACE INTO validation(run, stage, epoch, step, bleu1, bleu2, bleu3, bleu4, "
                               "rouge_l, cider_d) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  // A step's row id is the host's too. A run resumed from its last checkpoint deletes the
  // steps and validations after it there (RunStore::truncate_after), then logs them again:
  // a step row older than this line (a smaller row id) with a later step is one of those.
  sqlite::Statement dropped_steps(db, label, "DELETE FROM steps WHERE run = ? AND step > ? AND rowid < ?");
  sqlite::Statement dropped_validations(db, label, "DELETE FROM validation WHERE run = ? AND step > ?");
  // A sample's row id is the host's (its line's cursor): applied twice (two followers of one
  // mirror, a follow resumed from an older cursor) it is the same row, never a second one.
  sqlite::Statement sample(db, label,
                           "INSERT OR REPLACE INTO samples(rowid, run, stage, epoch, image, caption, reference) "
                           "VALUES(?, ?, ?, ?, ?, ?, ?)");
  std::string cursor;
  for (const auto& text : lines) try {
    const json line = json::parse(text, nullptr, false);
    if (!line.is_object() || !line.contains("type"))
      throw std::runtime_error(label + ": a follow line that is not one: " + text.substr(0, 200));
    const std::string type = line["type"];
    if (type == "hello" && line.value("version", 0) != kFollowFormatVersion)
      throw std::runtime_error("the host's expnet (" + line.value("expnet", std::string("?")) + ") speaks follow format " +
                               std::to_string(line.value("version", 0)) + ", and this one (" EXPNET_VERSION ") reads format " +
                               std::to_string(kFollowFormatVersion) + ": install the same expnet version on both machines");
    if (type == "run")
      run.bind(1, line["id"].get<int64_t>()).bind(2, line["name"].get<std::string>()).bind(3, line["status"].get<std::string>())
          .bind(4, line["config"].get<std::string>()).bind(5, line["out_dir"].get<std::string>())
          .bind(6, line["created_at"].get<std::string>()).bind(7, line["updated_at"].get<std::string>())
          .bind(8, line["notes"].get<std::string>()).bind(9, line["tags"].get<std::string>())
          .bind(10, line["error"].get<std::string>()).run();
    if (type == "stage")
      stage.bind(1, line["run"].get<int64_t>()).bind(2, line["index"].get<int64_t>()).bind(3, line["name"].get<std::string>())
          .bind(4, line["config"].get<std::string>()).run();
    if (type == "step") {
      const int64_t id = line["run"].get<int64_t>(), number = line["step"].get<int64_t>();
      const int64_t rowid = FollowCursor::parse(line["cursor"].get<std::string>()).steps;
      dropped_steps.bind(1, id).bind(2, number).bind(3, rowid).run();
      // The follow sends a validation only once every step before it is out (run_follow.cpp).
      if (sqlite3_changes(db) > 0) dropped_validations.bind(1, id).bind(2, number).run();
      step.bind(11, rowid).bind(1, line["run"].get<int64_t>()).bind(2, line["stage"].get<int64_t>()).bind(3, line["epoch"].get<int64_t>())
          .bind(4, line["step"].get<int64_t>());
      bind_number(step, 5, line["loss"]);
      bind_number(step, 6, line["lr"]);
      bind_number(step, 7, line["grad_norm"]);
      bind_number(step, 8, line["images_per_s"]);
      step.bind(9, line["skipped"].get<int64_t>());
      bind_number(step, 10, line["wall_s"]);
      step.run();
    }
    if (type == "validation") {
      validation.bind(1, line["run"].get<int64_t>()).bind(2, line["stage"].get<int64_t>())
          .bind(3, line["epoch"].get<int64_t>()).bind(4, line["step"].get<int64_t>());
      int column = 5;
      for (const char* key : {"bleu1", "bleu2", "bleu3", "bleu4", "rouge_l", "cider_d"}) bind_number(validation, column++, line[key]);
      validation.run();
    }
    if (type == "sample")
      sample.bind(1, FollowCursor::parse(line["cursor"].get<std::string>()).samples).bind(2, line["run"].get<int64_t>())
          .bind(3, line["stage"].get<int64_t>()).bind(4, line["epoch"].get<int64_t>())
          .bind(5, line["image"].get<std::string>()).bind(6, line["caption"].get<std::string>())
          .bind(7, line["reference"].get<std::string>()).run();
    if (line.contains("cursor")) cursor = line["cursor"].get<std::string>();
  } catch (const json::exception& e) {
    throw std::runtime_error(label + ": a follow line it cannot read (" + e.what() + "): " + text.substr(0, 200));
  }
  if (!cursor.empty()) {
    sqlite::Statement save(db, label, "UPDATE mirror_origin SET cursor = ?");
    save.bind(1, cursor).run();
  }
  transaction.commit();
}

}  // namespace expnet

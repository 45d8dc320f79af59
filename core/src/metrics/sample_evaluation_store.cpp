// The evaluation store (sample_evaluation_store.h). WAL journal: the studio's
// dataset index reads it (ATTACH) while `expnet eval` writes it.
#include "metrics/sample_evaluation_store.h"

#include <sqlite3.h>

#include <filesystem>
#include <set>
#include <stdexcept>

namespace fs = std::filesystem;

namespace expnet {
namespace {

// Table and column names are read by DatasetIndex (dataset_index.h): keep them.
const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS evaluations(
  id INTEGER PRIMARY KEY, checkpoint_sha256 TEXT NOT NULL, options TEXT NOT NULL, model TEXT,
  dataset TEXT NOT NULL, split TEXT NOT NULL, created TEXT,
  UNIQUE(checkpoint_sha256, options, dataset, split));
CREATE TABLE IF NOT EXISTS samples(
  evaluation_id INTEGER NOT NULL REFERENCES evaluations(id), cocoid INTEGER NOT NULL, image TEXT, caption TEXT,
  cider_d REAL, bleu4 REAL, error TEXT, PRIMARY KEY(evaluation_id, cocoid));
CREATE TABLE IF NOT EXISTS corpus(
  evaluation_id INTEGER NOT NULL REFERENCES evaluations(id), key TEXT NOT NULL, value REAL,
  PRIMARY KEY(evaluation_id, key));
)sql";

const char* kSelectEvaluation =
    "SELECT e.id, e.checkpoint_sha256, e.options, e.model, e.dataset, e.split, e.created,"
    " (SELECT COUNT(*) FROM samples s WHERE s.evaluation_id = e.id) FROM evaluations e ";

}  // namespace

SampleEvaluationStore::SampleEvaluationStore(const std::string& path, Access access)
    : path_(fs::absolute(path).lexically_normal().string()), label_("evaluation store '" + path_ + "'") {
  const bool write = access == Access::write;
  const bool existed = fs::exists(path_);
  if (!existed && !write) throw std::runtime_error(label_ + ": no such file; run `expnet eval` first");
  if (!existed) {
    const fs::path folder = fs::path(path_).parent_path();
    std::error_code ec;
    fs::create_directories(folder, ec);
    if (ec)
      throw std::runtime_error(label_ + ": cannot create its folder '" + folder.string() + "' (" + ec.message() +
                               "); choose another store file");
  }
  const int flags = write ? SQLITE_OPEN_READWRITE | (existed ? 0 : SQLITE_OPEN_CREATE) : SQLITE_OPEN_READONLY;
  db_ = sqlite::open(path_, flags, label_);
  // Every check reads only: a file that fails one is left as it was.
  std::string problem;
  int64_t tables = 0;
  try {
    sqlite::Statement count(db_.get(), label_, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table'");
    if (count.step()) tables = count.integer(0);
  } catch (const std::runtime_error&) {
    problem = std::string("not an evaluation store, or damaged (") + sqlite3_errmsg(db_.get()) + ")";
  }
  // An empty database (a file SQLite created, no table yet) holds nothing to lose.
  if (problem.empty() && write && tables == 0) create_schema();
  if (problem.empty()) {
    try {
      problem = store_problem(write);
    } catch (const std::runtime_error&) {
      problem = std::string("damaged (") + sqlite3_errmsg(db_.get()) + ")";
    }
  }
  if (!problem.empty())
    throw std::runtime_error(label_ + ": " + problem +
                             "; nothing was written to it: move it away or choose another store file");
  if (write) sqlite::exec(db_.get(), label_, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;");
}

void SampleEvaluationStore::create_schema() {
  sqlite::Transaction transaction(db_.get(), label_);
  sqlite::exec(db_.get(), label_, kSchema);
  sqlite::Statement version(db_.get(), label_, "INSERT OR IGNORE INTO meta(key, value) VALUES('version', ?)");
  version.bind(1, std::to_string(kSampleEvaluationStoreVersion)).run();
  transaction.commit();
}

std::string SampleEvaluationStore::store_problem(bool quick_check) {
  std::set<std::string> tables;
  sqlite::Statement names(db_.get(), label_, "SELECT name FROM sqlite_master WHERE type = 'table'");
  while (names.step()) tables.insert(names.text(0));
  for (const char* table : {"meta", "evaluations", "samples", "corpus"})
    if (!tables.count(table))
      return std::string("not an evaluation store (it has no '") + table + "' table; expnet eval writes those)";
  sqlite::Statement version(db_.get(), label_, "SELECT value FROM meta WHERE key = 'version'");
  const std::string found = version.step() ? version.text(0) : "none";
  if (found != std::to_string(kSampleEvaluationStoreVersion))
    return "an evaluation store of version " + found + "; this program reads and writes version " +
           std::to_string(kSampleEvaluationStoreVersion);
  if (!quick_check) return {};
  sqlite::Statement check(db_.get(), label_, "PRAGMA quick_check(1)");
  const std::string verdict = check.step() ? check.text(0) : "no answer";
  return verdict == "ok" ? std::string() : "damaged (SQLite's quick check: " + verdict + ")";
}

SampleEvaluation SampleEvaluationStore::read_evaluation(sqlite::Statement& row) {
  // kSelectEvaluation's columns 1..6, in order.
  static std::string SampleEvaluation::*const kText[] = {
      &SampleEvaluation::checkpoint_sha256, &SampleEvaluation::options, &SampleEvaluation::model,
      &SampleEvaluation::dataset,           &SampleEvaluation::split,   &SampleEvaluation::created};
  SampleEvaluation e;
  e.id = row.integer(0);
  e.db = path_;
  for (int c = 0; c < 6; ++c) e.*kText[c] = row.text(c + 1);
  e.samples = static_cast<size_t>(row.integer(7));
  sqlite::Statement corpus(db_.get(), label_, "SELECT key, value FROM corpus WHERE evaluation_id = ?");
  corpus.bind(1, e.id);
  while (corpus.step()) e.corpus[corpus.text(0)] = corpus.real(1);
  return e;
}

SampleEvaluation SampleEvaluationStore::find_or_create(const SampleEvaluation& key) {
  sqlite::Transaction transaction(db_.get(), label_);
  sqlite::Statement insert(db_.get(), label_,
                           "INSERT OR IGNORE INTO evaluations(checkpoint_sha256, options, model, dataset, split, created)"
                           " VALUES(?, ?, ?, ?, ?, strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))");
  insert.bind(1, key.checkpoint_sha256).bind(2, key.options).bind(3, key.model).bind(4, key.dataset).bind(5, key.split);
  insert.run();
  sqlite::Statement select(db_.get(), label_,
                           std::string(kSelectEvaluation) +
                               "WHERE checkpoint_sha256 = ? AND options = ? AND dataset = ? AND split = ?");
  select.bind(1, key.checkpoint_sha256).bind(2, key.options).bind(3, key.dataset).bind(4, key.split);
  if (!select.step()) throw std::runtime_error(label_ + ": the evaluation just written cannot be read back");
  SampleEvaluation found = read_evaluation(select);
  transaction.commit();
  return found;
}

std::vector<SampleEvaluation> SampleEvaluationStore::evaluations() {
  std::vector<SampleEvaluation> out;
  sqlite::Statement rows(db_.get(), label_, std::string(kSelectEvaluation) + "ORDER BY e.id DESC");
  while (rows.step()) out.push_back(read_evaluation(rows));
  return out;
}

SampleEvaluation SampleEvaluationStore::evaluation(int64_t id) {
  sqlite::Statement row(db_.get(), label_, std::string(kSelectEvaluation) + "WHERE e.id = ?");
  row.bind(1, id);
  if (row.step()) return read_evaluation(row);
  std::string ids;
  for (const auto& e : evaluations()) ids += (ids.empty() ? "" : ", ") + std::to_string(e.id);
  throw std::runtime_error(label_ + ": no evaluation " + std::to_string(id) + " (it holds " +
                           (ids.empty() ? std::string("none") : ids) + ")");
}

std::vector<SampleScore> SampleEvaluationStore::samples(int64_t evaluation_id) {
  std::vector<SampleScore> out;
  // rowid: the order the samples were added, which is the dataset's.
  sqlite::Statement rows(db_.get(), label_,
                         "SELECT cocoid, image, caption, cider_d, bleu4, error FROM samples"
                         " WHERE evaluation_id = ? ORDER BY rowid");
  rows.bind(1, evaluation_id);
  while (rows.step()) {
    SampleScore s;
    s.cocoid = rows.integer(0);
    s.image = rows.text(1);
    s.caption = rows.text(2);
    s.scored = !rows.is_null(3);
    s.cider_d = rows.real(3);
    s.bleu4 = rows.real(4);
    s.error = rows.text(5);
    out.push_back(std::move(s));
  }
  return out;
}

void SampleEvaluationStore::add_sample(int64_t evaluation_id, const SampleScore& sample) {
  // OR IGNORE: two runs of one evaluation at once may caption the same image.
  sqlite::Statement insert(db_.get(), label_,
                           "INSERT OR IGNORE INTO samples(evaluation_id, cocoid, image, caption, error)"
                           " VALUES(?, ?, ?, ?, ?)");
  insert.bind(1, evaluation_id).bind(2, sample.cocoid).bind(3, sample.image).bind(4, sample.caption);
  if (sample.error.empty())
    insert.bind_null(5);
  else
    insert.bind(5, sample.error);
  insert.run();
}

void SampleEvaluationStore::save_scores(int64_t evaluation_id, const std::vector<SampleScore>& scored,
                                        const std::map<std::string, double>& corpus) {
  sqlite::Transaction transaction(db_.get(), label_);
  sqlite::Statement update(db_.get(), label_,
                           "UPDATE samples SET cider_d = ?, bleu4 = ? WHERE evaluation_id = ? AND cocoid = ?");
  for (const auto& s : scored) {
    if (s.scored)
      update.bind(1, s.cider_d).bind(2, s.bleu4);
    else
      update.bind_null(1).bind_null(2);
    update.bind(3, evaluation_id).bind(4, s.cocoid).run();
  }
  sqlite::Statement clear(db_.get(), label_, "DELETE FROM corpus WHERE evaluation_id = ?");
  clear.bind(1, evaluation_id).run();
  sqlite::Statement insert(db_.get(), label_, "INSERT INTO corpus(evaluation_id, key, value) VALUES(?, ?, ?)");
  for (const auto& [key, value] : corpus) insert.bind(1, evaluation_id).bind(2, key).bind(3, value).run();
  transaction.commit();
}

}  // namespace expnet

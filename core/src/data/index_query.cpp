// DatasetIndex::query: a page of images by split, words and order, with an
// evaluation store's captions and scores joined in. Every order is walked by an
// index (images_by_split, images_by_split_length, the store's primary key), so
// a page costs its own rows, not a sort of the whole split.
#include "expnet/data/index_query.h"

#include "expnet/data/dataset_index.h"

#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include <unordered_map>

#include "expnet/text/caption_text.h"
#include "system/sqlite_statement.h"

namespace fs = std::filesystem;

namespace expnet {

std::string fts_query_for(const std::string& words) {
  std::string query;
  for (const auto& token : clean_caption(words)) {
    std::string quoted = "\"";
    for (const char c : token) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
    quoted += '"';
    if (!query.empty()) query += ' ';
    query += quoted;
  }
  return query;
}

namespace {

// Parameters of every query: ?1 split id, ?2 FTS5 query, ?3 limit, ?4 offset, ?5 evaluation id.
struct Filter {
  std::string where = " WHERE 1";
  int64_t split_id = -1;
  std::string fts;

  explicit Filter(const IndexQuery& q) {
    if (!q.split.empty()) {
      split_id = static_cast<int64_t>(parse_split(q.split));
      where += " AND i.split_id = ?1";
    }
    fts = fts_query_for(q.text);
    if (!fts.empty()) {
      // Matching captions first (FTS5: words AND split), then their images.
      fts = "{tokens} : (" + fts + ")";
      if (split_id >= 0) fts += std::string(" AND {split} : \"") + split_name(static_cast<Split>(split_id)) + "\"";
      where += " AND i.cocoid IN (SELECT c.cocoid FROM captions c WHERE c.id IN "
               "(SELECT rowid FROM captions_fts WHERE captions_fts MATCH ?2))";
    }
  }
  void bind(sqlite::Statement& s) const {
    if (split_id >= 0) s.bind(1, split_id);
    if (!fts.empty()) s.bind(2, fts);
  }
};

// A sample counts as scored when it has a CIDEr-D and no error.
const char* kScored = "s.evaluation_id = ?5 AND s.cider_d IS NOT NULL AND (s.error IS NULL OR s.error = '')";
const char* kColumns = "SELECT i.cocoid, i.filepath, i.filename, i.split_id, i.width, i.height, i.caption_length";

// Appends the rows of `sql` (kColumns first) bound with the filter, the limit and the offset.
void collect(sqlite3* db, const std::string& label, const std::string& sql, const Filter& filter, int64_t evaluation_id,
             int64_t limit, int64_t offset, std::vector<IndexedImage>& out) {
  sqlite::Statement rows(db, label, sql + " LIMIT ?3 OFFSET ?4");
  filter.bind(rows);
  rows.bind(3, limit).bind(4, offset);
  if (evaluation_id > 0) rows.bind(5, evaluation_id);
  while (rows.step()) {
    IndexedImage image;
    image.cocoid = rows.integer(0);
    image.filepath = rows.text(1);
    image.filename = rows.text(2);
    image.split = split_name(static_cast<Split>(rows.integer(3)));
    image.width = static_cast<int>(rows.integer(4));
    image.height = static_cast<int>(rows.integer(5));
    image.caption_length = rows.real(6);
    out.push_back(std::move(image));
  }
}

// The page's ids as a JSON array, for `IN (SELECT value FROM json_each(?))`:
// one statement for the captions (or samples) of the whole page.
std::string json_ids(const std::vector<IndexedImage>& images) {
  std::string ids = "[";
  for (const auto& image : images) ids += (ids.size() > 1 ? "," : "") + std::to_string(image.cocoid);
  return ids + "]";
}

}  // namespace

void DatasetIndex::attach_evaluation(const std::string& store, int64_t evaluation_id) const {
  sqlite3* db = db_.get();
  const std::string label = "index '" + path_ + "'";
  if (attached_ != store) {
    if (!attached_.empty()) sqlite::exec(db, label, "DETACH DATABASE ev");
    attached_.clear();
    std::error_code ec;
    if (!fs::is_regular_file(store, ec))
      throw std::runtime_error("evaluation store '" + store + "' does not exist; evaluate a model on the dataset first (expnet eval) or give another store");
    sqlite::Statement attach(db, label, "ATTACH DATABASE ?1 AS ev");
    attach.bind(1, store).run();
    attached_ = store;
    bool has_samples = false;
    try {
      sqlite::Statement tables(db, label, "SELECT count(*) FROM ev.sqlite_master WHERE type = 'table' AND name IN ('samples', 'evaluations')");
      has_samples = tables.step() && tables.integer(0) == 2;
    } catch (const std::runtime_error&) {
      // not SQLite at all: reported below
    }
    if (!has_samples) {
      sqlite::exec(db, label, "DETACH DATABASE ev");
      attached_.clear();
      throw std::runtime_error("'" + store + "' is not an evaluation store (no evaluations and samples tables); "
                               "give the file expnet eval wrote");
    }
  }
  sqlite::Statement known(db, label, "SELECT 1 FROM ev.evaluations WHERE id = ?1");
  known.bind(1, evaluation_id);
  if (!known.step())
    throw std::runtime_error("evaluation store '" + store + "' has no evaluation " + std::to_string(evaluation_id) +
                             "; give the id of one of its evaluations");
}

IndexPage DatasetIndex::query(const IndexQuery& q) const {
  if (q.page < 1) throw std::invalid_argument("--page must be at least 1");
  if (q.page_size < 1 || q.page_size > 10000) throw std::invalid_argument("--page-size must be between 1 and 10000");
  const bool by_score = q.sort == IndexSort::score_ascending || q.sort == IndexSort::score_descending;
  const bool evaluated = !q.evaluation_db.empty() && q.evaluation_id > 0;
  if (by_score && !evaluated)
    throw std::invalid_argument("sorting by score needs an evaluation: give its store and id (--eval-db FILE --evaluation ID)");
  const Filter filter(q);
  std::lock_guard<std::mutex> lock(query_mutex_);
  if (evaluated) attach_evaluation(q.evaluation_db, q.evaluation_id);
  sqlite3* db = db_.get();
  const std::string label = "index '" + path_ + "'";
  IndexPage page;
  const int64_t offset = (q.page - 1) * q.page_size;
  if (!by_score) {
    const char* order = q.sort == IndexSort::caption_length              ? " ORDER BY i.caption_length, i.cocoid"
                        : q.sort == IndexSort::caption_length_descending ? " ORDER BY i.caption_length DESC, i.cocoid"
                                                                         : " ORDER BY i.cocoid";
    collect(db, label, kColumns + std::string(" FROM images i") + filter.where + order, filter, 0, q.page_size, offset, page.images);
  } else {
    // Scored images first, in score order (walked from the store's samples),
    // then the unscored ones by cocoid: the page may straddle the two.
    const std::string scored_from = " FROM ev.samples s JOIN images i ON i.cocoid = s.cocoid" + filter.where + " AND " + kScored;
    sqlite::Statement count(db, label, "SELECT count(*)" + scored_from);
    filter.bind(count);
    count.bind(5, q.evaluation_id);
    const int64_t scored = count.step() ? count.integer(0) : 0;
    const std::string direction = q.sort == IndexSort::score_ascending ? "" : " DESC";
    if (offset < scored)
      collect(db, label, kColumns + scored_from + " ORDER BY s.cider_d" + direction + ", i.cocoid", filter, q.evaluation_id,
              q.page_size, offset, page.images);
    const int64_t missing = q.page_size - static_cast<int64_t>(page.images.size());
    if (missing > 0)
      collect(db, label,
              kColumns + std::string(" FROM images i") + filter.where +
                  " AND NOT EXISTS (SELECT 1 FROM ev.samples s WHERE s.cocoid = i.cocoid AND " + kScored + ") ORDER BY i.cocoid",
              filter, q.evaluation_id, missing, std::max<int64_t>(0, offset - scored), page.images);
  }
  std::unordered_map<int64_t, IndexedImage*> by_id;
  for (auto& image : page.images) by_id[image.cocoid] = &image;
  const std::string ids = json_ids(page.images);
  sqlite::Statement captions(db, label,
                             "SELECT cocoid, raw FROM captions WHERE cocoid IN (SELECT value FROM json_each(?1)) ORDER BY cocoid, position");
  captions.bind(1, ids);
  while (captions.step()) by_id.at(captions.integer(0))->captions.push_back(captions.text(1));
  if (evaluated) {
    sqlite::Statement samples(db, label,
                              "SELECT cocoid, caption, cider_d, bleu4, error FROM ev.samples "
                              "WHERE evaluation_id = ?1 AND cocoid IN (SELECT value FROM json_each(?2))");
    samples.bind(1, q.evaluation_id).bind(2, ids);
    while (samples.step()) {
      IndexedImage& image = *by_id.at(samples.integer(0));
      image.model_caption = samples.text(1);
      image.evaluated = !samples.is_null(2) && samples.text(4).empty();
      if (image.evaluated) {
        image.cider_d = samples.real(2);
        image.bleu4 = samples.is_null(3) ? 0.0 : samples.real(3);
      }
    }
  }
  if (q.count_total) {
    if (filter.fts.empty()) {
      // Without words the split's image count is already in the splits table.
      sqlite::Statement total(db, label, filter.split_id >= 0 ? "SELECT coalesce(sum(images), 0) FROM splits WHERE id = ?1"
                                                      : "SELECT coalesce(sum(images), 0) FROM splits");
      if (filter.split_id >= 0) total.bind(1, filter.split_id);
      page.total = total.step() ? total.integer(0) : 0;
    } else {
      sqlite::Statement total(db, label, "SELECT count(*) FROM images i" + filter.where);
      filter.bind(total);
      page.total = total.step() ? total.integer(0) : 0;
    }
  }
  return page;
}

}  // namespace expnet

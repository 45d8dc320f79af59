// The SQLite file behind expnet/metrics/sample_evaluation.h (its header comment
// gives the schema): opened checked, so that a file of another kind, another
// version or a damaged one is refused before anything is written to it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "expnet/metrics/sample_evaluation.h"
#include "system/sqlite_statement.h"

namespace expnet {

inline constexpr int kSampleEvaluationStoreVersion = 1;

class SampleEvaluationStore {
 public:
  enum class Access { read, write };
  // write: creates the file (and its folder) when missing. read: the file must
  // exist. Throws std::runtime_error naming the file when it is not an
  // evaluation store, is of another version or fails SQLite's quick check
  // (write only: a reader does not pay for it).
  SampleEvaluationStore(const std::string& path, Access access);

  const std::string& path() const { return path_; }

  // The evaluation of `key`'s checkpoint_sha256, options, dataset and split:
  // its id, model and created filled in; created now (with key.model) when new.
  SampleEvaluation find_or_create(const SampleEvaluation& key);
  // Newest first; samples and corpus filled, per_image empty.
  std::vector<SampleEvaluation> evaluations();
  // Throws naming the file and the ids it holds when `id` is unknown.
  SampleEvaluation evaluation(int64_t id);
  // Its samples in the order they were added.
  std::vector<SampleScore> samples(int64_t evaluation_id);
  // Committed at once, so a cancelled or crashed run keeps it.
  void add_sample(int64_t evaluation_id, const SampleScore& sample);
  // Every sample's scores (NULL where not `scored`) and the corpus scores, in one transaction.
  void save_scores(int64_t evaluation_id, const std::vector<SampleScore>& scored,
                   const std::map<std::string, double>& corpus);

 private:
  // Why the open file is not a usable store ("" when it is); throws when SQLite cannot read it.
  std::string store_problem(bool quick_check);
  void create_schema();
  SampleEvaluation read_evaluation(sqlite::Statement& row);
  std::string path_, label_;
  sqlite::Database db_;
};

}  // namespace expnet

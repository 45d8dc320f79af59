// Before the first step of a distributed run every rank checks that it trains
// what the others train: the same expnet, config, data, vocabulary and the same
// checkpoint to resume from (or none). Hosts that disagree (another config,
// another copy of the dataset, a run folder that is not shared) are refused
// with the difference named, on every rank, instead of training apart
// (docs/distributed.md, "Where the data is").
#pragma once

#include <string>

namespace expnet {

class ProcessGroup;

// What must be equal on every rank, each as text (it is compared by SHA-256).
struct RankFingerprint {
  std::string version;     // EXPNET_VERSION
  std::string config;      // the training config's JSON
  std::string data;        // the dataset's sizes and the SHA-256 of its images' ids, files, splits and captions
  std::string vocabulary;  // its words, in order
  std::string checkpoint;  // "fresh", or the SHA-256 of the checkpoint it resumes from
};

struct TrainConfig;
struct TrainData;
// This rank's: `resumed_from` is the checkpoint file it resumes from, "" when it starts fresh.
RankFingerprint make_rank_fingerprint(const TrainConfig& config, const TrainData& data, const std::string& resumed_from);

// Throws std::runtime_error on every rank when any rank differs from rank 0.
void check_ranks_agree(ProcessGroup& group, const RankFingerprint& mine);

}  // namespace expnet

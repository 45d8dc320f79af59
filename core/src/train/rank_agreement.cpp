#include "train/rank_agreement.h"

#include <torch/torch.h>

#include <stdexcept>

#include "expnet/system/digest.h"
#include "expnet/text/vocabulary.h"
#include "expnet/train/distributed.h"
#include "expnet/train/train_config.h"
#include "train/train_data.h"

namespace expnet {

namespace {

// The first 8 bytes of the text's SHA-256 as one int64: one slot of the gathered tensor.
int64_t digest64(const std::string& text) {
  const std::string hex = sha256_hex(text);
  return static_cast<int64_t>(std::stoull(hex.substr(0, 16), nullptr, 16));
}

std::string hex64(int64_t value) {
  char buffer[17];
  std::snprintf(buffer, sizeof buffer, "%016llx", static_cast<unsigned long long>(value));
  return buffer;
}


}  // namespace

RankFingerprint make_rank_fingerprint(const TrainConfig& config, const TrainData& data, const std::string& resumed_from) {
  RankFingerprint f;
  f.version = EXPNET_VERSION;
  f.config = config.to_json();
  // Every image's id, file (not its root: hosts mount datasets in different places), split and
  // captions: two copies that differ only in content are told apart, not trained on apart.
  std::string content;
  for (const auto& image : data.dataset.images) {
    content += std::to_string(image.cocoid) + '\t' + image.filepath + '/' + image.filename + '\t' +
               std::to_string(static_cast<int>(image.split)) + '\n';
    for (const auto& caption : image.captions) content += caption.raw + '\n';
  }
  f.data = std::to_string(data.dataset.images.size()) + " images, " + std::to_string(data.dataset.caption_count()) +
           " captions, " + std::to_string(data.val_images.size()) + " validation images, content " + sha256_hex(content);
  for (const auto& word : data.vocab->words()) f.vocabulary += word + '\n';
  f.checkpoint = resumed_from.empty() ? "fresh" : sha256_file(resumed_from);
  return f;
}

void check_ranks_agree(ProcessGroup& group, const RankFingerprint& mine) {
  const std::string* fields[] = {&mine.version, &mine.config, &mine.data, &mine.vocabulary, &mine.checkpoint};
  const char* names[] = {"expnet version", "training config", "dataset", "vocabulary", "checkpoint to resume from"};
  constexpr int kFields = 5;
  auto local = torch::empty({kFields}, torch::kLong);
  for (int i = 0; i < kFields; ++i) local[i] = digest64(*fields[i]);
  const auto all = group.all_gather(local);
  const auto first = all.front().to(torch::kCPU);
  std::string differences;
  for (size_t rank = 1; rank < all.size(); ++rank) {
    const auto theirs = all[rank].to(torch::kCPU);
    for (int i = 0; i < kFields; ++i) {
      if (theirs[i].item<int64_t>() == first[i].item<int64_t>()) continue;
      differences += std::string(differences.empty() ? "" : "; ") + "rank " + std::to_string(rank) + " has another " +
                     names[i] + " than rank 0 (" + hex64(theirs[i].item<int64_t>()) + " vs " +
                     hex64(first[i].item<int64_t>()) + ")";
    }
  }
  if (differences.empty()) return;
  std::string advice = "start every rank with the same expnet, config and dataset";
  if (differences.find("checkpoint") != std::string::npos)
    advice = "--out must be one folder on a file system every host shares (checkpoints are written by rank 0 only): "
             "ranks that do not see rank 0's checkpoints would start over";
  throw std::runtime_error("distributed rank " + std::to_string(group.rank()) + " (host " + distributed_host_name() +
                           ", resuming from " + (mine.checkpoint == "fresh" ? std::string("nothing") : mine.checkpoint.substr(0, 16)) +
                           "): the ranks disagree before the first step: " + differences + ". " + advice);
}

}  // namespace expnet

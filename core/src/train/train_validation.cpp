// Per-epoch validation of a training run (see train_validation.h).
#include "train/train_validation.h"

#include <torch/torch.h>

#include <algorithm>
#include <string>

#include "decode/step_decoders.h"
#include "expnet/decode/group_decoding.h"
#include "expnet/data/dataset.h"
#include "expnet/image/image_decode.h"
#include "expnet/image/preprocess.h"
#include "expnet/metrics/scorers.h"
#include "expnet/text/vocabulary.h"
#include "expnet/train/distributed.h"

namespace expnet {
namespace {

// Rank r decoded validation images r, r+N, r+2N, ...: one padded id matrix per
// rank, gathered and interleaved back into validation order.
std::vector<std::vector<int64_t>> gather_captions(ProcessGroup& group, const std::vector<std::vector<int64_t>>& mine,
                                                  size_t images, int max_len, c10::Device device) {
  const int n = group.size();
  const int64_t rows = (static_cast<int64_t>(images) + n - 1) / n;
  const int64_t cols = max_len + 3;
  auto local = torch::full({rows, cols}, -1, torch::kLong);
  for (size_t j = 0; j < mine.size(); ++j)
    for (size_t t = 0; t < mine[j].size() && static_cast<int64_t>(t) < cols; ++t)
      local[static_cast<int64_t>(j)][static_cast<int64_t>(t)] = mine[j][t];
  const auto all = group.all_gather(local.to(device));
  std::vector<std::vector<int64_t>> out(images);
  for (size_t k = 0; k < images; ++k) {
    const auto row = all[k % static_cast<size_t>(n)][static_cast<int64_t>(k / static_cast<size_t>(n))].to(torch::kCPU);
    for (int64_t t = 0; t < cols && row[t].item<int64_t>() >= 0; ++t) out[k].push_back(row[t].item<int64_t>());
  }
  return out;
}

// This rank's share of the images, decoded by beam search in chunks of 16 (a
// PNAIC model: greedy per group, its only search, as `expnet caption` does).
std::vector<std::vector<int64_t>> decode_share(ExpansionNet& model, const Dataset& dataset,
                                               const std::vector<size_t>& images, const Vocabulary& vocab,
                                               const ValidationOptions& options, int rank, int world) {
  std::vector<size_t> mine;
  for (size_t k = static_cast<size_t>(rank); k < images.size(); k += static_cast<size_t>(world)) mine.push_back(k);
  DecodingOptions opt;
  opt.search = SearchKind::Beam;
  opt.beam_size = options.beam;
  opt.max_length = options.max_len + 1;  // counts SOS
  opt.return_token_logprobs = false;
  SpecialTokens special;
  special.sos = vocab.sos_id();
  special.eos = vocab.eos_id();
  const bool pnaic = model->config().is_pnaic();
  DecodingOptions group_opt;
  group_opt.search = SearchKind::Greedy;
  group_opt.beam_size = 1;
  group_opt.max_length = options.max_len + 1;  // steps per group, counting SOS
  group_opt.return_token_logprobs = false;
  std::vector<std::vector<int64_t>> decoded;
  const size_t chunk = 16;
  for (size_t b = 0; b < mine.size(); b += chunk) {
    const size_t e = std::min(mine.size(), b + chunk);
    std::vector<cv::Mat> mats;
    for (size_t k = b; k < e; ++k) mats.push_back(load_image_rgb(dataset.image_path(dataset.images[images[mine[k]]])));
    const auto feats = model->backbone(images_to_model_input(mats, options.image_size).to(options.device));
    const auto enc = model->encode(feats);
    const auto results = pnaic ? decode_groups(model, enc, {vocab.sos_id(), vocab.eos_id(), vocab.del_id()}, group_opt)
                               : decode(*make_incremental_decoder(model, enc), static_cast<int64_t>(e - b), special, opt);
    for (size_t k = b; k < e; ++k) decoded.push_back(results[k - b].hypotheses.front().tokens);
  }
  return decoded;
}

}  // namespace

ValidationResult validate_captions(ExpansionNet model, const Dataset& dataset, const std::vector<size_t>& images,
                                   const Vocabulary& vocab, const ValidationOptions& options, ProcessGroup* group) {
  torch::NoGradGuard no_grad;
  model->eval();
  auto decoded = decode_share(model, dataset, images, vocab, options, group ? group->rank() : 0, group ? group->size() : 1);
  // A PNAIC caption is up to K groups of max_len words.
  const auto words = options.max_len * static_cast<int>(std::max<int64_t>(1, model->config().pnaic_groups));
  if (group) decoded = gather_captions(*group, decoded, images.size(), words, options.device);
  ValidationResult result;
  if (group && group->rank() != 0) return result;
  EvalSet set;
  for (size_t k = 0; k < images.size(); ++k) {
    const auto& img = dataset.images[images[k]];
    std::string text;
    for (int64_t id : decoded[k]) {
      if (id == vocab.sos_id() || id == vocab.eos_id()) continue;
      text += (text.empty() ? "" : " ") + vocab.words()[static_cast<size_t>(id)];
    }
    std::vector<std::string> refs;
    for (const auto& c : img.captions) refs.push_back(c.raw);
    set.add_raw(std::to_string(img.cocoid) + "_" + std::to_string(k), text, refs);
    if (result.samples.size() < 5) result.samples.push_back({0, 0, 0, img.filename, text, refs[0]});
  }
  const auto bleu = compute_bleu(set);
  result.scores.bleu1 = bleu.corpus[0];
  result.scores.bleu2 = bleu.corpus[1];
  result.scores.bleu3 = bleu.corpus[2];
  result.scores.bleu4 = bleu.corpus[3];
  result.scores.rouge_l = compute_rouge_l(set).corpus;
  result.scores.cider_d = compute_cider_d(set).corpus;
  return result;
}

}  // namespace expnet

// expnet bench metrics: how long the caption metrics take on 5000 images x 5
// references (generated deterministically), medians over repeats.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>

#include "bench_stats.h"
#include "command.h"
#include "expnet/text/caption_text.h"
#include "expnet/metrics/scorers.h"
#include "expnet/metrics/cider_reward.h"

namespace expnet::cli {
namespace {

// SplitMix64: the same captions on every machine and library version.
class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  size_t below(size_t n) { return static_cast<size_t>(next() % n); }
  double uniform() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }

 private:
  uint64_t state_;
};

struct Corpus {
  std::vector<std::vector<std::string>> references;  // raw, per image
  std::vector<std::string> candidates;               // raw, one per image
  std::vector<std::vector<std::string>> samples;     // raw, SCST-like samples per image
};

// Captions shaped like COCO's: 8-15 words, function words between content
// words drawn mostly from the image's own topic words (so references and
// candidates share n-grams), a skewed global vocabulary of 3000 words,
// capitals and punctuation for the tokenizer.
Corpus generate_corpus(size_t images, size_t references_per_image, size_t samples_per_image) {
  static const char* const function_words[] = {"a", "the", "of", "on", "in", "with", "and", "is", "at", "an",
                                               "two", "near", "to", "some", "its", "while", "under", "by"};
  static const char* const syllables[] = {"ba", "ko", "ri", "ta", "ne", "lo", "su", "mi", "da", "pe",
                                          "go", "ra", "ti", "ve", "zu", "ch", "an", "el", "or", "is"};
  Random random(20240517);
  std::vector<std::string> vocabulary(3000);
  for (auto& word : vocabulary) {
    const size_t parts = 2 + random.below(2);
    for (size_t p = 0; p < parts; ++p) word += syllables[random.below(20)];
  }
  auto content_word = [&](const std::vector<size_t>& topic) -> const std::string& {
    if (random.uniform() < 0.7) return vocabulary[topic[random.below(topic.size())]];
    const double u = random.uniform();
    return vocabulary[static_cast<size_t>(u * u * u * static_cast<double>(vocabulary.size()))];
  };
  auto caption = [&](const std::vector<size_t>& topic) {
    const size_t length = 8 + random.below(8);
    std::string text;
    for (size_t i = 0; i < length; ++i) {
      const std::string word = (i % 2 == 0 || random.uniform() < 0.3) ? std::string(function_words[random.below(18)])
                                                                      : content_word(topic);
      if (i > 0) text += random.uniform() < 0.05 ? ", " : " ";
      text += word;
    }
    text[0] = static_cast<char>(text[0] - 'a' + 'A');
    text += random.uniform() < 0.5 ? "." : " .";
    return text;
  };
  Corpus corpus;
  for (size_t image = 0; image < images; ++image) {
    std::vector<size_t> topic(10);
    for (auto& t : topic) t = random.below(vocabulary.size());
    corpus.references.emplace_back();
    for (size_t r = 0; r < references_per_image; ++r) corpus.references.back().push_back(caption(topic));
    corpus.candidates.push_back(caption(topic));
    corpus.samples.emplace_back();
    for (size_t s = 0; s < samples_per_image; ++s) corpus.samples.back().push_back(caption(topic));
  }
  return corpus;
}

struct Options {
  int repeats = 7;
  bool json = false;
};

void run(const Options& options) {
  constexpr size_t kImages = 5000, kReferences = 5, kSamples = 5;
  const int repeats = std::max(1, options.repeats);
  const Corpus corpus = generate_corpus(kImages, kReferences, kSamples);

  EvalSet set;
  const Timing tokenize = median_timing(repeats, [&] {
    EvalSet fresh;
    for (size_t i = 0; i < kImages; ++i) fresh.add_raw(std::to_string(i), corpus.candidates[i], corpus.references[i]);
    set = std::move(fresh);
  });
  double checksum = 0;  // printed, so the work cannot be optimised away
  const Timing bleu = median_timing(repeats, [&] { checksum += compute_bleu(set).corpus[3]; });
  const Timing rouge = median_timing(repeats, [&] { checksum += compute_rouge_l(set).corpus; });
  const Timing cider = median_timing(repeats, [&] { checksum += compute_cider_d(set).corpus; });

  // Reward mode: training references cleaned as for training; 5 samples per
  // image scored in one call, as words and as token ids.
  std::vector<std::vector<std::vector<std::string>>> train_refs(kImages);
  std::vector<std::vector<std::string>> samples;
  std::vector<size_t> sample_images;
  for (size_t i = 0; i < kImages; ++i) {
    for (const auto& reference : corpus.references[i]) train_refs[i].push_back(clean_caption(reference));
    for (const auto& sample : corpus.samples[i]) {
      samples.push_back(clean_caption(sample));
      sample_images.push_back(i);
    }
  }
  std::unique_ptr<CiderDReward> reward;
  const Timing reward_setup = median_timing(repeats, [&] { reward = std::make_unique<CiderDReward>(train_refs); });
  const Timing reward_words = median_timing(repeats, [&] { checksum += reward->score(sample_images, samples)[0]; });

  std::vector<std::string> idx2word;
  std::map<std::string, int64_t> word2idx;
  auto id_of = [&](const std::string& word) {
    auto [it, inserted] = word2idx.emplace(word, static_cast<int64_t>(idx2word.size()));
    if (inserted) idx2word.push_back(word);
    return it->second;
  };
  const int64_t eos = id_of("EOS");
  std::vector<std::vector<int64_t>> sample_ids;
  for (const auto& sample : samples) {
    sample_ids.emplace_back();
    for (const auto& word : sample) sample_ids.back().push_back(id_of(word));
    sample_ids.back().push_back(eos);
  }
  reward->set_vocabulary(idx2word, eos);
  const Timing reward_ids = median_timing(repeats, [&] { checksum += reward->score_ids(sample_images, sample_ids)[0]; });

  const std::vector<std::pair<const char*, Timing>> rows = {
      {"tokenize", tokenize}, {"Bleu", bleu},         {"ROUGE_L", rouge},       {"CIDEr", cider},
      {"reward_setup", reward_setup}, {"reward", reward_words}, {"reward_ids", reward_ids}};
  if (options.json) {
    nlohmann::json wall, cpu;
    for (const auto& [name, timing] : rows) {
      wall[name] = timing.wall_ms;
      cpu[name] = timing.cpu_ms;
    }
    const nlohmann::json out = {{"images", kImages},
                                {"references_per_image", kReferences},
                                {"reward_candidates", samples.size()},
                                {"repeats", repeats},
                                {"threads", torch_threads()},
                                {"ms", wall},
                                {"cpu_ms", cpu},
                                {"checksum", checksum}};
    std::cout << out.dump() << std::endl;
    return;
  }
  std::printf("%zu images x %zu references, median of %d runs, %d thread(s); wall ms (thread CPU ms)\n", kImages,
              kReferences, repeats, torch_threads());
  const std::vector<std::string> labels = {"tokenize (raw -> EvalSet)",
                                           "BLEU-1..4",
                                           "ROUGE-L",
                                           "CIDEr-D",
                                           "reward setup (df of " + std::to_string(kImages * kReferences) + " refs)",
                                           "reward, " + std::to_string(samples.size()) + " candidates as words",
                                           "reward, " + std::to_string(samples.size()) + " candidates as ids"};
  for (size_t i = 0; i < rows.size(); ++i)
    std::printf("%-42s %9.2f ms (%.2f)\n", labels[i].c_str(), rows[i].second.wall_ms, rows[i].second.cpu_ms);
  std::fprintf(stderr, "checksum %.6f\n", checksum);
}

const bool registered = register_command({"bench-metrics", 200, [](CLI::App& root) {
  auto [command, options] = add_command<Options>(
      bench_group(root), "metrics",
      "Time tokenizer, BLEU, ROUGE-L, CIDEr-D and the SCST reward on 5000 images x 5 references", run);
  command->add_option("--repeats", options->repeats, "Runs per measurement (the median is printed)")
      ->check(CLI::PositiveNumber);
  command->add_flag("--json", options->json, "Print one compact JSON object");
}});

}  // namespace
}  // namespace expnet::cli

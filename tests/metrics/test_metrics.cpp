// Caption metrics against the public COCO scorers' numbers (fixture made with
// pycocoevalcap), hand-computed edge cases, and the SCST reward.
#include <QJsonArray>
#include <QtTest>

#include <cmath>
#include <map>
#include <random>

#include "expnet/metrics/eval_tokenizer.h"
#include "expnet/metrics/scorers.h"
#include "expnet/metrics/cider_reward.h"
#include "fixture_json.h"
#include "support/fixtures.h"

using namespace expnet;

namespace {

std::vector<std::string> words(const std::string& text) {
  std::vector<std::string> out;
  std::string word;
  for (const char c : text) {
    if (c == ' ') {
      if (!word.empty()) out.push_back(word);
      word.clear();
    } else {
      word.push_back(c);
    }
  }
  if (!word.empty()) out.push_back(word);
  return out;
}

std::vector<std::string> with_eos(std::vector<std::string> tokens) {
  tokens.push_back("EOS");
  return tokens;
}

struct Fixture {
  QJsonObject root;
  QStringList ids;
};

Fixture loadFixture(const QString& path) {
  Fixture f;
  f.root = loadJsonObject(path);
  f.ids = f.root.value("references").toObject().keys();
  return f;
}

// Calls add(id, candidate, references) for each image of the fixture, the
// captions read from its `candidates_key` and `references_key` objects.
template <typename Add>
void forEachImage(const Fixture& f, const char* candidates_key, const char* references_key, Add add) {
  const auto refs = f.root.value(references_key).toObject();
  const auto cands = f.root.value(candidates_key).toObject();
  for (const auto& id : f.ids) {
    std::vector<std::string> references;
    for (const auto& r : refs.value(id).toArray()) references.push_back(r.toString().toStdString());
    add(id.toStdString(), cands.value(id).toString().toStdString(), references);
  }
}

EvalSet tokenizedSet(const Fixture& f) {
  EvalSet set;
  forEachImage(f, "candidates", "references", [&](const std::string& id, const std::string& candidate,
                                                  const std::vector<std::string>& references) {
    std::vector<std::vector<std::string>> tokenized;
    for (const auto& r : references) tokenized.push_back(words(r));
    set.add(id, words(candidate), tokenized);
  });
  return set;
}

EvalSet rawSet(const Fixture& f) {
  EvalSet set;
  forEachImage(f, "raw_candidates", "raw_references",
               [&](const std::string& id, const std::string& candidate, const std::vector<std::string>& references) {
                 set.add_raw(id, candidate, references);
               });
  return set;
}

void compareWithFixture(const Fixture& f, const EvalSet& set) {
  QCOMPARE(set.size(), size_t(f.ids.size()));
  const BleuScores bleu = compute_bleu(set);
  const MetricScores rouge = compute_rouge_l(set);
  const MetricScores cider = compute_cider_d(set);
  const auto corpus = f.root.value("corpus").toObject();
  for (int k = 0; k < 4; ++k)
    EXPECT_NEAR(bleu.corpus[k], corpus.value(QStringLiteral("Bleu_%1").arg(k + 1)).toDouble(), 1e-6,
                QStringLiteral("corpus Bleu_%1").arg(k + 1));
  EXPECT_NEAR(rouge.corpus, corpus.value("ROUGE_L").toDouble(), 1e-6, "corpus ROUGE_L");
  EXPECT_NEAR(cider.corpus, corpus.value("CIDEr").toDouble(), 1e-6, "corpus CIDEr");
  const auto per_image = f.root.value("per_image").toObject();
  for (size_t i = 0; i < set.size(); ++i) {
    const QString id = QString::fromStdString(set.image_id(i));
    const auto expected = per_image.value(id).toObject();
    QVERIFY2(!expected.isEmpty(), qPrintable(id));
    EXPECT_NEAR(bleu.per_image[i][3], expected.value("Bleu_4").toDouble(), 1e-6, id + " Bleu_4");
    EXPECT_NEAR(rouge.per_image[i], expected.value("ROUGE_L").toDouble(), 1e-6, id + " ROUGE_L");
    EXPECT_NEAR(cider.per_image[i], expected.value("CIDEr").toDouble(), 1e-6, id + " CIDEr");
  }
}

EvalSet oneImage(const std::string& candidate, const std::vector<std::string>& references) {
  EvalSet set;
  std::vector<std::vector<std::string>> refs;
  for (const auto& r : references) refs.push_back(words(r));
  set.add("1", words(candidate), refs);
  return set;
}

}  // namespace

class TestMetrics : public QObject {
  Q_OBJECT
 private slots:
  void fixtureFromTokenizedSentences() {
    EXPNET_FIXTURE(path, "metrics/coco_scorers_small.json");
    compareWithFixture(loadFixture(path), tokenizedSet(loadFixture(path)));
  }
  void fixtureFromRawSentences() {
    EXPNET_FIXTURE(path, "metrics/coco_scorers_small.json");
    compareWithFixture(loadFixture(path), rawSet(loadFixture(path)));
  }
  void tokenizerGivesTheFixtureTokens() {
    EXPNET_FIXTURE(path, "metrics/coco_scorers_small.json");
    const Fixture f = loadFixture(path);
    const auto raw_refs = f.root.value("raw_references").toObject();
    const auto refs = f.root.value("references").toObject();
    const auto raw_cands = f.root.value("raw_candidates").toObject();
    const auto cands = f.root.value("candidates").toObject();
    for (const auto& id : f.ids) {
      QCOMPARE(QString::fromStdString(tokenize_for_eval_text(raw_cands.value(id).toString().toStdString())),
               cands.value(id).toString());
      const auto raw = raw_refs.value(id).toArray();
      const auto tokenized = refs.value(id).toArray();
      QCOMPARE(raw.size(), tokenized.size());
      for (int r = 0; r < raw.size(); ++r)
        QCOMPARE(QString::fromStdString(tokenize_for_eval_text(raw[r].toString().toStdString())),
                 tokenized[r].toString());
    }
  }

  void tokenizerPtbRules_data() {
    QTest::addColumn<QString>("raw");
    QTest::addColumn<QString>("tokens");
    QTest::newRow("punctuation") << "A man, riding a HORSE!" << "a man riding a horse";
    QTest::newRow("contractions") << "Don't touch the dog's bone; we're here" << "do n't touch the dog 's bone we 're here";
    QTest::newRow("can't/won't") << "can't won't" << "ca n't wo n't";
    QTest::newRow("fused words") << "You cannot go" << "you can not go";
    QTest::newRow("plural possessive") << "the dogs' toys" << "the dogs toys";
    QTest::newRow("detached 's") << "john 's car" << "john 's car";
    QTest::newRow("quotes and brackets") << "a \"stop\" sign (red) [x] {y} `z'" << "a stop sign red x y z";
    QTest::newRow("dashes and dots") << "a man -- walking... away - now." << "a man walking away now";
    QTest::newRow("numbers and joins") << "3.5 t-shirt 1,000 10:30 and/or" << "3.5 t-shirt 1,000 10:30 and/or";
    QTest::newRow("symbols stay") << "$5 50% #1 a & b" << "$ 5 50 % # 1 a & b";
    QTest::newRow("unicode") << "Ein CAFÉ für Jürgen’s naïve Straße" << "ein café für jürgen 's naïve straße";
    QTest::newRow("only punctuation") << " ... !? " << "";
    QTest::newRow("white space") << "a\tdog\n on\u00a0grass" << "a dog on grass";
  }
  void tokenizerPtbRules() {
    QFETCH(QString, raw);
    QFETCH(QString, tokens);
    QCOMPARE(QString::fromStdString(tokenize_for_eval_text(raw.toStdString())), tokens);
  }

  // All-ASCII text takes a shortcut for plain words (eval_tokenizer.cpp); one character
  // outside ASCII in a chunk of its own sends the whole text down the UTF-32 path, whose
  // tokens must be the same plus that character's.
  void tokenizerAsciiShortcutMatchesFullRules() {
    const std::string pieces[] = {"A",      "dog.",   "DOG",     "cannot", "Gonna",  "3.5",  "t-shirt", "x.", ".",
                                  "..",     "a.b.",   "dog's",   "don't",  "(red)",  "50%",  "1,000",   "a,", "-",
                                  "WANNA.", "lemme.", "o'clock", "'s",     "\"hi\"", "a--b", "x_y",     "_",  "q?"};
    const std::string spaces[] = {" ", "  ", "\t", "\n", " \r\n", "\f", "\v"};
    std::mt19937 random(7);
    for (int trial = 0; trial < 400; ++trial) {
      std::string text = trial % 5 == 0 ? spaces[random() % 7] : "";
      const size_t chunks = 1 + random() % 9;
      for (size_t c = 0; c < chunks; ++c) {
        text += pieces[random() % std::size(pieces)];
        if (random() % 3 == 0) text += pieces[random() % std::size(pieces)];  // glued pieces
        text += spaces[random() % std::size(spaces)];
      }
      auto expected = tokenize_for_eval(text);
      expected.push_back("\u00e9");
      QCOMPARE(tokenize_for_eval(text + " \u00c9"), expected);
    }
    QCOMPARE(tokenize_for_eval_text("Cannot. GIMME 2. A dog."), std::string("can not gim me 2 a dog"));
  }

  // pycocoevalcap: no correct n-gram and testlen 0 -> the brevity penalty
  // exp(1 - 1/ratio) underflows to 0; ROUGE-L 0; CIDEr-D 0.
  void emptyCandidate() {
    EvalSet set = oneImage("", {"a dog runs", "a dog is running"});
    set.add("2", words("a cat"), {words("a cat sleeps")});
    const auto bleu = compute_bleu(set);
    for (int k = 0; k < 4; ++k) QCOMPARE(bleu.per_image[0][k], 0.0);
    QCOMPARE(compute_rouge_l(set).per_image[0], 0.0);
    QCOMPARE(compute_cider_d(set).per_image[0], 0.0);
  }

  // No brevity penalty; clipped precision 3/6; LCS 3 -> P 1/2, R 1.
  void candidateLongerThanEveryReference() {
    const EvalSet set = oneImage("a dog runs on the grass", {"a dog runs", "dog runs"});
    const auto bleu = compute_bleu(set);
    EXPECT_NEAR(bleu.per_image[0][0], (3 + 1e-15) / (6 + 1e-9), 1e-12, "Bleu_1");
    EXPECT_NEAR(bleu.corpus[0], (3 + 1e-15) / (6 + 1e-9), 1e-12, "corpus Bleu_1");
    const double p = 0.5, r = 1.0, b2 = 1.2 * 1.2;
    EXPECT_NEAR(compute_rouge_l(set).per_image[0], (1 + b2) * p * r / (r + b2 * p), 1e-12, "ROUGE_L");
    // One image: every n-gram has df = N = 1, so log N - log df = 0 and
    // pycocoevalcap's CIDEr-D is 0.
    QCOMPARE(compute_cider_d(set).per_image[0], 0.0);
  }

  // Counts are clipped by the references' counts (BLEU) and by the reference
  // weights (CIDEr-D's min(hyp, ref) * ref).
  void repeatedNgrams() {
    EvalSet set = oneImage("a a a a", {"a b"});
    set.add("2", words("c"), {words("c d")});
    const auto bleu = compute_bleu(set);
    EXPECT_NEAR(bleu.per_image[0][0], (1 + 1e-15) / (4 + 1e-9), 1e-12, "Bleu_1");
    // Only the unigram "a" matches: weight 4L vs L (L = log 2), cand norm 4L,
    // ref norm sqrt(2) L; bigram lengths 3 vs 1 -> penalty e^(-4/72).
    const double expected = 10.0 * (1.0 / (4.0 * std::sqrt(2.0))) * std::pow(2.718281828459045, -4.0 / 72.0) / 4.0;
    EXPECT_NEAR(compute_cider_d(set).per_image[0], expected, 1e-12, "CIDEr-D");
  }

  // A candidate equal to its only reference: BLEU 1, ROUGE-L 1, and CIDEr-D 10
  // when no n-gram is shared with the other image (all idf > 0).
  void singleReference() {
    EvalSet set = oneImage("a brown dog runs fast", {"a brown dog runs fast"});
    set.add("2", words("two cats sleep on beds"), {words("two cats sleep on beds today")});
    const auto bleu = compute_bleu(set);
    for (int k = 0; k < 4; ++k) EXPECT_NEAR(bleu.per_image[0][k], 1.0, 1e-9, QStringLiteral("Bleu_%1").arg(k + 1));
    EXPECT_NEAR(compute_rouge_l(set).per_image[0], 1.0, 1e-12, "ROUGE_L");
    EXPECT_NEAR(compute_cider_d(set).per_image[0], 10.0, 1e-9, "CIDEr-D");
  }

  // Unicode words are lower-cased and matched like any other word.
  void unicodeWords() {
    EvalSet raw;
    raw.add_raw("1", "ÜBER das Café", {"über das café", "ein Café"});
    raw.add_raw("2", "猫が 座る", {"猫が 座る ところ"});
    EvalSet tokenized;
    tokenized.add("1", words("über das café"), {words("über das café"), words("ein café")});
    tokenized.add("2", words("猫が 座る"), {words("猫が 座る ところ")});
    const auto bleu_raw = compute_bleu(raw), bleu_tok = compute_bleu(tokenized);
    EXPECT_NEAR(bleu_raw.per_image[0][0], 1.0, 1e-9, "Bleu_1 of an exact unicode match");
    for (size_t i = 0; i < 2; ++i) {
      for (int k = 0; k < 4; ++k) QCOMPARE(bleu_raw.per_image[i][k], bleu_tok.per_image[i][k]);
      QCOMPARE(compute_rouge_l(raw).per_image[i], compute_rouge_l(tokenized).per_image[i]);
      QCOMPARE(compute_cider_d(raw).per_image[i], compute_cider_d(tokenized).per_image[i]);
    }
    QVERIFY(compute_cider_d(raw).per_image[0] > 0);
  }

  void imagesNeedReferences() {
    EvalSet set;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, set.add("7", words("a dog"), {}));
  }

  // The reward with df from the same references equals the corpus CIDEr-D of
  // candidates and references that end in EOS.
  void rewardAgreesWithCorpusCider() {
    EXPNET_FIXTURE(path, "metrics/coco_scorers_small.json");
    const Fixture f = loadFixture(path);
    const auto refs = f.root.value("references").toObject();
    const auto cands = f.root.value("candidates").toObject();
    std::vector<std::vector<std::vector<std::string>>> train_refs;
    std::vector<std::vector<std::string>> candidates;
    std::vector<size_t> images;
    EvalSet with_eos_set, without_eos_set;
    for (const auto& id : f.ids) {
      std::vector<std::vector<std::string>> image_refs, image_refs_eos;
      for (const auto& r : refs.value(id).toArray()) {
        image_refs.push_back(words(r.toString().toStdString()));
        image_refs_eos.push_back(with_eos(image_refs.back()));
      }
      const auto candidate = words(cands.value(id).toString().toStdString());
      with_eos_set.add(id.toStdString(), with_eos(candidate), image_refs_eos);
      without_eos_set.add(id.toStdString(), candidate, image_refs);
      images.push_back(train_refs.size());
      train_refs.push_back(image_refs);
      candidates.push_back(candidate);
    }
    const CiderDReward reward(train_refs);
    QCOMPARE(reward.image_count(), size_t(f.ids.size()));
    const auto rewards = reward.score(images, candidates);
    const auto expected = compute_cider_d(with_eos_set).per_image;
    const auto no_eos = compute_cider_d(without_eos_set).per_image;
    bool eos_matters = false;
    for (size_t i = 0; i < rewards.size(); ++i) {
      EXPECT_NEAR(rewards[i], expected[i], 1e-9, QStringLiteral("reward of image %1").arg(i));
      eos_matters |= std::fabs(expected[i] - no_eos[i]) > 1e-3;
    }
    QVERIFY(eos_matters);

    // Token ids: EOS ends the caption (padding after it is ignored).
    std::vector<std::string> idx2word = {"PAD", "SOS", "EOS"};
    std::map<std::string, int64_t> ids;
    auto id_of = [&](const std::string& w) {
      auto [it, inserted] = ids.emplace(w, static_cast<int64_t>(idx2word.size()));
      if (inserted) idx2word.push_back(w);
      return it->second;
    };
    std::vector<std::vector<int64_t>> sequences, unfinished;
    for (const auto& c : candidates) {
      std::vector<int64_t> seq;
      for (const auto& w : c) seq.push_back(id_of(w));
      unfinished.push_back(seq);
      seq.push_back(2);
      seq.push_back(0);
      seq.push_back(id_of("zebra"));
      sequences.push_back(seq);
    }
    CiderDReward by_ids(train_refs);
    by_ids.set_vocabulary(idx2word, 2);
    const auto id_rewards = by_ids.score_ids(images, sequences);
    for (size_t i = 0; i < id_rewards.size(); ++i) EXPECT_NEAR(id_rewards[i], expected[i], 1e-9, "id-mode reward");
    // Without EOS the caption is scored as it is, against references with EOS.
    EvalSet unfinished_set;
    for (size_t i = 0; i < candidates.size(); ++i) {
      std::vector<std::vector<std::string>> image_refs;
      for (const auto& r : train_refs[i]) image_refs.push_back(with_eos(r));
      unfinished_set.add(std::to_string(i), candidates[i], image_refs);
    }
    const auto unfinished_expected = compute_cider_d(unfinished_set).per_image;
    const auto unfinished_rewards = by_ids.score_ids(images, unfinished);
    for (size_t i = 0; i < unfinished_rewards.size(); ++i)
      EXPECT_NEAR(unfinished_rewards[i], unfinished_expected[i], 1e-9, "reward without EOS");
  }

  // Words no reference has (repeated, too) count in the candidate's norm like
  // pycocoevalcap's df-0 n-grams; order and repeats of image indices do not matter.
  void rewardUnseenWordsAndGrouping() {
    const std::vector<std::vector<std::vector<std::string>>> train_refs = {
        {words("a dog runs on grass"), words("a brown dog running")},
        {words("two cats on a bed"), words("cats sleeping on a bed")},
        {words("a plate of food")}};
    const CiderDReward reward(train_refs);
    const std::vector<std::vector<std::string>> candidates = {
        words("a zzz zzz dog runs qqq zzz"), words("cats on a bed"), words("a dog runs"), words("")};
    const std::vector<size_t> images = {0, 1, 0, 2};
    const auto rewards = reward.score(images, candidates);

    for (size_t k = 0; k < candidates.size(); ++k) {
      // Corpus CIDEr-D of set + candidate k: df and N come from the same references.
      EvalSet one;
      for (size_t i = 0; i < train_refs.size(); ++i) {
        std::vector<std::vector<std::string>> refs;
        for (const auto& r : train_refs[i]) refs.push_back(with_eos(r));
        one.add(std::to_string(i), i == images[k] ? with_eos(candidates[k]) : with_eos({}), refs);
      }
      EXPECT_NEAR(rewards[k], compute_cider_d(one).per_image[images[k]], 1e-9,
                  QStringLiteral("candidate %1").arg(k));
      const auto alone = reward.score({images[k]}, {candidates[k]});
      QCOMPARE(alone[0], rewards[k]);
    }
    QVERIFY(rewards[0] > 0 && rewards[1] > rewards[0]);
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, reward.score({3}, {words("a dog")}));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, reward.score({0, 1}, {words("a dog")}));
    QVERIFY_THROWS_EXCEPTION(std::logic_error, reward.score_ids({0}, {{1, 2}}));
  }
};

QTEST_GUILESS_MAIN(TestMetrics)
#include "test_metrics.moc"

// DecodingOptions::max_word_run: a word at most N times in a row, for every
// search strategy and both decoders (full recomputation and the incremental
// one, whose CPU float32 path is the fused caches), while a word may still
// come back later (what no-repeat n-grams cannot allow). The model is a real
// one, randomly initialised, whose vocabulary projection is biased towards one
// word so that it degenerates into "red red red ..." as the demo model did
// (support/biased_model.h).
#include <QtTest>
#include <torch/torch.h>

#include "expnet/decode/captioner.h"
#include "support/biased_model.h"

using namespace expnet;

namespace {

// Longest run of one word in a hypothesis (SOS and EOS not counted).
int longestRun(const std::vector<int64_t>& tokens, int64_t eos) {
  int longest = 0, run = 0;
  for (size_t i = 1; i < tokens.size() && tokens[i] != eos; ++i) {
    run = (i > 1 && tokens[i] == tokens[i - 1]) ? run + 1 : 1;
    longest = std::max(longest, run);
  }
  return longest;
}

int occurrences(const std::vector<int64_t>& tokens, int64_t word) {
  return int(std::count(tokens.begin(), tokens.end(), word));
}

}  // namespace

class TestWordRun : public QObject {
  Q_OBJECT
  std::unique_ptr<Captioner> captioner_;
  at::Tensor encoded_;  // three random images
  int64_t red_ = -1;

  std::vector<DecodingResult> run(DecoderKind kind, const DecodingOptions& options) {
    auto decoder = captioner_->make_decoder(encoded_, kind);
    return decode(*decoder, encoded_.size(0), captioner_->special_tokens(false), captioner_->complete(options));
  }

  static DecodingOptions strategy(SearchKind search) {
    DecodingOptions o;
    o.search = search;
    o.beam_size = search == SearchKind::Beam ? 3 : 1;
    o.num_hypotheses = search == SearchKind::Greedy ? 1 : 3;
    o.max_length = 14;
    o.seed = 5;
    return o;
  }

 private slots:
  void initTestCase() {
    captioner_ = expnet_test::biasedRedModel();
    red_ = captioner_->vocabulary().id("red");
    torch::NoGradGuard no_grad;
    torch::manual_seed(3);
    encoded_ = captioner_->encode(torch::rand({3, 3, 128, 128}));
  }

  void withoutTheRuleTheModelRepeats() {
    const int64_t eos = captioner_->vocabulary().eos_id();
    for (const auto search : {SearchKind::Greedy, SearchKind::Beam})
      for (const auto& result : run(DecoderKind::Incremental, strategy(search)))
        QVERIFY2(longestRun(result.hypotheses.front().tokens, eos) >= 3, "the biased model must say red red red");
  }

  void runsAreBoundedEverywhere_data() {
    QTest::addColumn<int>("search");
    QTest::addColumn<int>("kind");
    QTest::addColumn<int>("maxRun");
    for (const auto& [name, search] : {std::pair{"beam", SearchKind::Beam}, std::pair{"greedy", SearchKind::Greedy},
                                       std::pair{"sampling", SearchKind::Sampling}})
      for (const auto& [decoderName, kind] :
           {std::pair{"full", DecoderKind::Full}, std::pair{"incremental", DecoderKind::Incremental}})
        for (const int maxRun : {1, 2})
          QTest::newRow(qPrintable(QStringLiteral("%1 %2 %3").arg(name, decoderName).arg(maxRun)))
              << int(search) << int(kind) << maxRun;
  }
  void runsAreBoundedEverywhere() {
    QFETCH(int, search);
    QFETCH(int, kind);
    QFETCH(int, maxRun);
    DecodingOptions o = strategy(SearchKind(search));
    o.max_word_run = maxRun;
    const int64_t eos = captioner_->vocabulary().eos_id();
    for (const auto& result : run(DecoderKind(kind), o))
      for (const auto& h : result.hypotheses) {
        QVERIFY2(longestRun(h.tokens, eos) <= maxRun,
                 qPrintable(QString::fromStdString(captioner_->vocabulary().decode_text(h.tokens))));
        // Not consecutively, "red" still comes back: a word may repeat, only not in a run.
        if (h.tokens.size() > 8) QVERIFY(occurrences(h.tokens, red_) > maxRun);
      }
  }

  // A bound no caption reaches changes nothing: the rule only bans the run's next word.
  void aLooseBoundChangesNothing() {
    for (const auto kind : {DecoderKind::Full, DecoderKind::Incremental}) {
      DecodingOptions o = strategy(SearchKind::Beam);
      const auto off = run(kind, o);
      o.max_word_run = 20;
      const auto loose = run(kind, o);
      for (size_t i = 0; i < off.size(); ++i)
        for (size_t h = 0; h < off[i].hypotheses.size(); ++h)
          QCOMPARE(loose[i].hypotheses[h].tokens, off[i].hypotheses[h].tokens);
    }
  }

  void negativeIsRefused() {
    DecodingOptions o;
    o.max_length = 10;
    o.max_word_run = -1;
    try {
      o.validate();
      QFAIL("max_word_run -1 was accepted");
    } catch (const std::invalid_argument& e) {
      QVERIFY2(QString(e.what()).contains("max word run"), e.what());
    }
  }
};

QTEST_GUILESS_MAIN(TestWordRun)
#include "test_word_run.moc"

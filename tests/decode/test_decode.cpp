// The decoding engine against the authors' beam search (tiny fixture), and its
// own guarantees: incremental == full recomputation, batch == alone, options.
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>
#include <torch/torch.h>

#include <cmath>

#include "expnet/decode/captioner.h"
#include "expnet/image/image_decode.h"
#include "expnet/image/pil_resize.h"
#include "expnet/model/layers.h"
#include "expnet/model/swin.h"
#include "expnet/model/expansion_net.h"
#include "expnet/model/state_entries.h"
#include "support/fixtures.h"

using namespace expnet;

namespace {

struct Tiny {
  std::unique_ptr<Captioner> captioner;
  QJsonObject expected;
  at::Tensor encoded;  // of expected images
};

// Loads the tiny reference through our own .pth reader, pickle vocabulary
// and config file: the path a user takes.
QString loadTiny(Tiny& tiny) {
  const QString dir = expnet_test::fixturePath(QStringLiteral("reference/tiny"));
  ModelSource source;
  source.model = (dir + QStringLiteral("/model_config.json")).toStdString();
  source.checkpoint = (dir + QStringLiteral("/checkpoint.pth")).toStdString();
  source.vocab = (dir + QStringLiteral("/vocab.pickle")).toStdString();
  tiny.captioner = Captioner::load(source);
  QFile json(dir + QStringLiteral("/expected.json"));
  if (!json.open(QIODevice::ReadOnly)) return QStringLiteral("cannot open expected.json");
  tiny.expected = QJsonDocument::fromJson(json.readAll()).object();
  // expected.bin holds the reference's preprocessed image at offset 0.
  QFile bin(dir + QStringLiteral("/expected.bin"));
  if (!bin.open(QIODevice::ReadOnly)) return QStringLiteral("cannot open expected.bin");
  const QJsonObject info = tiny.expected[QStringLiteral("tensors")].toObject()[QStringLiteral("images")].toObject();
  bin.seek(info[QStringLiteral("offset")].toInt());
  const QByteArray raw = bin.read(3 * 128 * 128 * 4);
  auto images = torch::from_blob(const_cast<char*>(raw.constData()), {1, 3, 128, 128}, torch::kFloat).clone();
  tiny.encoded = tiny.captioner->encode(images);
  return {};
}

std::vector<int64_t> toVector(const QJsonArray& array) {
  std::vector<int64_t> out;
  for (const auto& v : array) out.push_back(v.toInt());
  return out;
}

DecodingOptions fixtureOptions(const QJsonObject& beam) {
  DecodingOptions o;
  o.beam_size = beam[QStringLiteral("beam_size")].toInt();
  o.num_hypotheses = beam[QStringLiteral("outputs_per_image")].toInt();
  o.max_length = beam[QStringLiteral("max_seq_len")].toInt();
  return o;
}

// Beam 3, at most 12 tokens: what optionsShapeTheOutput varies one option at a time.
DecodingOptions beamOf3() {
  DecodingOptions o;
  o.beam_size = 3;
  o.max_length = 12;
  return o;
}

std::vector<DecodingResult> run(Tiny& tiny, const at::Tensor& encoded, DecoderKind kind, const DecodingOptions& o) {
  auto decoder = tiny.captioner->make_decoder(encoded, kind);
  return decode(*decoder, encoded.size(0), tiny.captioner->special_tokens(o.block_bad_endings),
                tiny.captioner->complete(o));
}

}  // namespace

class TestDecode : public QObject {
  Q_OBJECT
  Tiny tiny_;

 private slots:
  void initTestCase() {
    EXPNET_FIXTURE(dir, "reference/tiny/checkpoint.pth");
    const QString error = loadTiny(tiny_);
    QVERIFY2(error.isEmpty(), qPrintable(error));
  }

  void beamMatchesReference_data() {
    QTest::addColumn<int>("kind");
    QTest::newRow("full") << static_cast<int>(DecoderKind::Full);
    QTest::newRow("incremental") << static_cast<int>(DecoderKind::Incremental);
  }
  void beamMatchesReference() {
    QFETCH(int, kind);
    if (!tiny_.captioner) QSKIP("EXPNET_FIXTURE_MISSING: reference/tiny");
    const QJsonObject beam = tiny_.expected[QStringLiteral("beam_search")].toObject();
    const auto results = run(tiny_, tiny_.encoded, static_cast<DecoderKind>(kind), fixtureOptions(beam));
    QCOMPARE(results.size(), size_t(1));
    const QJsonArray tokens = beam[QStringLiteral("tokens")].toArray()[0].toArray();
    const QJsonArray sums = beam[QStringLiteral("sum_logprobs")].toArray()[0].toArray();
    QCOMPARE(results[0].hypotheses.size(), size_t(tokens.size()));
    for (int i = 0; i < tokens.size(); ++i) {
      QCOMPARE(results[0].hypotheses[i].tokens, toVector(tokens[i].toArray()));
      QVERIFY2(std::abs(results[0].hypotheses[i].sum_logprob - sums[i].toDouble()) < 1e-3,
               qPrintable(QStringLiteral("hypothesis %1: %2 vs %3").arg(i).arg(results[0].hypotheses[i].sum_logprob).arg(sums[i].toDouble())));
      QCOMPARE(results[0].hypotheses[i].token_logprobs.size(), tokens[i].toArray().size() - 1);
    }
    const QJsonArray captions = beam[QStringLiteral("captions")].toArray()[0].toArray();
    QCOMPARE(QString::fromStdString(tiny_.captioner->vocabulary().decode_text(results[0].hypotheses[0].tokens)),
             captions[0].toString());
  }

  // Greedy and beam 5, many lengths: the cached path equals the recomputation.
  void incrementalEqualsFull_data() {
    QTest::addColumn<int>("beam");
    QTest::newRow("greedy") << 0;
    QTest::newRow("beam5") << 5;
  }
  void incrementalEqualsFull() {
    QFETCH(int, beam);
    if (!tiny_.captioner) QSKIP("EXPNET_FIXTURE_MISSING: reference/tiny");
    DecodingOptions o;
    o.search = beam == 0 ? SearchKind::Greedy : SearchKind::Beam;
    o.beam_size = std::max(beam, 1);
    o.num_hypotheses = std::max(beam, 1);
    o.max_length = 20;
    torch::manual_seed(7);
    auto encoded = torch::cat({tiny_.encoded, tiny_.encoded + 0.3 * torch::randn_like(tiny_.encoded)}, 0);
    const auto full = run(tiny_, encoded, DecoderKind::Full, o);
    const auto inc = run(tiny_, encoded, DecoderKind::Incremental, o);
    for (size_t i = 0; i < full.size(); ++i) {
      QCOMPARE(inc[i].steps, full[i].steps);
      for (size_t h = 0; h < full[i].hypotheses.size(); ++h) {
        QCOMPARE(inc[i].hypotheses[h].tokens, full[i].hypotheses[h].tokens);
        const auto& a = inc[i].hypotheses[h].token_logprobs;
        const auto& b = full[i].hypotheses[h].token_logprobs;
        QCOMPARE(a.size(), b.size());
        for (size_t k = 0; k < a.size(); ++k) QVERIFY2(std::abs(a[k] - b[k]) < 1e-5, qPrintable(QString::number(a[k] - b[k])));
      }
    }
  }

  // Several images decoded together give what each gives alone.
  void batchEqualsAlone() {
    if (!tiny_.captioner) QSKIP("EXPNET_FIXTURE_MISSING: reference/tiny");
    torch::manual_seed(3);
    std::vector<at::Tensor> parts{tiny_.encoded};
    for (int i = 0; i < 3; ++i) parts.push_back(tiny_.encoded + 0.5 * torch::randn_like(tiny_.encoded));
    auto encoded = torch::cat(parts, 0);
    DecodingOptions o;
    o.beam_size = 4;
    o.num_hypotheses = 2;
    o.max_length = 16;
    const auto together = run(tiny_, encoded, DecoderKind::Incremental, o);
    bool differentCaptions = false;
    for (int64_t i = 0; i < encoded.size(0); ++i) {
      const auto alone = run(tiny_, encoded.narrow(0, i, 1), DecoderKind::Incremental, o);
      QCOMPARE(together[i].steps, alone[0].steps);
      for (size_t h = 0; h < alone[0].hypotheses.size(); ++h) {
        QCOMPARE(together[i].hypotheses[h].tokens, alone[0].hypotheses[h].tokens);
        QVERIFY(std::abs(together[i].hypotheses[h].sum_logprob - alone[0].hypotheses[h].sum_logprob) < 1e-4);
      }
      differentCaptions |= together[i].hypotheses[0].tokens != together[0].hypotheses[0].tokens;
    }
    QVERIFY(differentCaptions);  // the images really differ
  }

  void optionsShapeTheOutput() {
    if (!tiny_.captioner) QSKIP("EXPNET_FIXTURE_MISSING: reference/tiny");
    const int64_t eos = tiny_.captioner->vocabulary().eos_id();
    DecodingOptions o = beamOf3();
    o.min_length = 4;
    auto r = run(tiny_, tiny_.encoded, DecoderKind::Incremental, o);
    QVERIFY(r[0].hypotheses[0].tokens.size() >= 6 || r[0].hypotheses[0].tokens.back() != eos);
    // The reference's best here repeats words: n-gram blocking must remove that.
    o = beamOf3();
    o.no_repeat_ngram_size = 2;
    o.min_length = 3;
    r = run(tiny_, tiny_.encoded, DecoderKind::Incremental, o);
    const auto& t = r[0].hypotheses[0].tokens;
    std::set<std::pair<int64_t, int64_t>> bigrams;
    for (size_t i = 1; i + 1 < t.size(); ++i) QVERIFY2(bigrams.insert({t[i], t[i + 1]}).second, "repeated bigram");
    // Length penalty 0 ranks by raw sum: the short caption wins by more.
    o = beamOf3();
    o.num_hypotheses = 3;
    o.length_penalty = 0;
    r = run(tiny_, tiny_.encoded, DecoderKind::Incremental, o);
    for (size_t h = 1; h < r[0].hypotheses.size(); ++h) QVERIFY(r[0].hypotheses[h - 1].score >= r[0].hypotheses[h].score);
    // The beam accumulates scores in float32, sum_logprob adds the per-token log-probs in double.
    QVERIFY(std::abs(r[0].hypotheses[0].score - r[0].hypotheses[0].sum_logprob) < 1e-5);
    // Sampling is seeded.
    o = {};
    o.search = SearchKind::Sampling;
    o.num_hypotheses = 5;
    o.max_length = 12;
    o.seed = 42;
    const auto a = run(tiny_, tiny_.encoded, DecoderKind::Incremental, o);
    const auto b = run(tiny_, tiny_.encoded, DecoderKind::Incremental, o);
    QCOMPARE(a[0].hypotheses.size(), size_t(5));
    for (size_t h = 0; h < 5; ++h) QCOMPARE(a[0].hypotheses[h].tokens, b[0].hypotheses[h].tokens);
    // Streaming: the callback sees every step and the final state.
    o = beamOf3();
    int calls = 0;
    bool finished = false;
    o.on_step = [&](const StepUpdate& u) {
      ++calls;
      finished |= u.finished;
      QVERIFY(!u.best.empty());
    };
    r = run(tiny_, tiny_.encoded, DecoderKind::Incremental, o);
    QCOMPARE(calls, r[0].steps);
    QVERIFY(finished);
  }

  void badOptionsAreErrors() {
    DecodingOptions o;
    o.max_length = 10;
    o.num_hypotheses = 6;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, o.validate());
    o.num_hypotheses = 1;
    o.sampling_topp = 0;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, o.validate());
    o.sampling_topp = 1;
    o.max_length = 1;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, o.validate());
  }
};

QTEST_GUILESS_MAIN(TestDecode)
#include "test_decode.moc"

// Traces: the teacher-forced traced forward gives the normal path's log-probs,
// and `expnet explain` on the authors' tiny reference files writes a
// trace.json with the tiny configuration's shapes and properly normalised
// matrices, and PNG overlays at the input image's original size.
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>
#include <opencv2/imgcodecs.hpp>
#include <torch/torch.h>

#include <functional>

#include "expnet/decode/captioner.h"
#include "expnet/image/image_decode.h"
#include "expnet/model/expansion_net.h"
#include "expnet/trace/trace.h"
#include "support/fixtures.h"

namespace {

// The tiny fixture's configuration (reference/tiny/model_config.json).
constexpr int kGrid = 4, kN = 16, kEncLayers = 2, kDecLayers = 2, kHeads = 4, kNumExpDec = 4;
const std::vector<int> kGroups{4, 8, 16};
constexpr int kNE = 28;
constexpr double kTol = 1e-6;

QList<int> shapeOf(const QJsonObject& matrix) {
  QList<int> shape;
  for (const auto v : matrix[QStringLiteral("shape")].toArray()) shape << v.toInt();
  return shape;
}

// Rows of a 2-D matrix JSON; each row as doubles.
std::vector<std::vector<double>> rowsOf(const QJsonObject& matrix) {
  std::vector<std::vector<double>> rows;
  for (const auto row : matrix[QStringLiteral("data")].toArray()) {
    std::vector<double> r;
    for (const auto v : row.toArray()) r.push_back(v.toDouble());
    rows.push_back(std::move(r));
  }
  return rows;
}

// Sum of row[from, from+count) is 1 (or 0 when no entry is positive), within
// kTol. The model normalises by (mass + 1e-9), as the reference does, so where
// the row's positive mass in relu(+-z) is known (mass >= 0) the exact target
// is mass / (mass + 1e-9): a row with mass 3e-4 sums to 0.9999967, which is
// right, not a rounding error.
bool sumsToOneOrZero(const std::vector<double>& row, size_t from, size_t count, double mass = -1) {
  double sum = 0;
  bool positive = false;
  for (size_t i = from; i < from + count; ++i) {
    if (row[i] < 0) return false;
    sum += row[i];
    positive = positive || row[i] > 0;
  }
  const double target = mass >= 0 ? mass / (mass + 1e-9) : 1.0;
  return positive ? std::abs(sum - target) <= kTol : sum == 0.0;
}

// Positive mass of relu(sign * z) over z[row][from, from+count), or over a column.
double rowMass(const std::vector<std::vector<double>>& z, size_t row, double sign) {
  double mass = 0;
  for (const double v : z[row]) mass += std::max(0.0, sign * v);
  return mass;
}
double columnMass(const std::vector<std::vector<double>>& z, size_t col, size_t from, size_t count, double sign) {
  double mass = 0;
  for (size_t j = from; j < from + count; ++j) mass += std::max(0.0, sign * z[j][col]);
  return mass;
}

}  // namespace

class TestTraces : public QObject {
  Q_OBJECT

 private slots:
  void tracedForwardGivesTheNormalLogProbs() {
    EXPNET_FIXTURE(image, "reference/tiny/image0.png");
    const QString dir = QFileInfo(image).path();
    expnet::ModelSource source;
    source.model = (dir + QStringLiteral("/model_config.json")).toStdString();
    source.checkpoint = (dir + QStringLiteral("/checkpoint.pth")).toStdString();
    source.vocab = (dir + QStringLiteral("/vocab.pickle")).toStdString();
    auto captioner = expnet::Captioner::load(source);
    const auto input = captioner->preprocess(expnet::load_image_rgb(image.toStdString()));
    torch::NoGradGuard no_grad;
    const auto encoded = captioner->encode(input);
    auto decoder = captioner->make_decoder(encoded, expnet::DecoderKind::Full);
    const auto options = captioner->complete({});
    const auto results = expnet::decode(*decoder, 1, captioner->special_tokens(false), options);
    const auto& best = results.at(0).hypotheses.at(0);
    QVERIFY(best.tokens.size() >= 2);

    const auto trace = expnet::trace_caption(*captioner, input, best.tokens);
    const int64_t steps = static_cast<int64_t>(best.tokens.size()) - 1;
    QCOMPARE(trace.token_logprobs.size(0), steps);
    for (int64_t k = 0; k < steps; ++k)
      QVERIFY2(std::abs(trace.token_logprobs[k].item<float>() - best.token_logprobs.at(static_cast<size_t>(k))) < 1e-5,
               qPrintable(QStringLiteral("token %1").arg(k)));

    // Bit-identical to the untraced full forward over the same inputs.
    auto& model = captioner->model();
    const auto all = torch::tensor(best.tokens, torch::kLong);
    const auto inputs = all.narrow(0, 0, steps).unsqueeze(0);
    const auto plain = model.decode(encoded, inputs, expnet::causal_self_mask(inputs, -1))
                           .select(0, 0)
                           .gather(1, all.narrow(0, 1, steps).unsqueeze(1))
                           .squeeze(1);
    QVERIFY(torch::equal(plain, trace.token_logprobs));
    std::vector<expnet::ExpansionTrace> unused;
    QVERIFY(torch::equal(model.encode(model.backbone(input), &unused), encoded));
  }

  void explainWritesTraceAndOverlays() {
    EXPNET_FIXTURE(image, "reference/tiny/image0.png");
    const QString dir = QFileInfo(image).path();
    const QString out = expnet_test::makeTempDir(QStringLiteral("explain")) + QStringLiteral("/out");
    const auto r = expnet_test::runProcess(
        expnet_test::cliPath(),
        {QStringLiteral("explain"), QStringLiteral("--model"), dir + QStringLiteral("/model_config.json"),
         QStringLiteral("--checkpoint"), dir + QStringLiteral("/checkpoint.pth"), QStringLiteral("--vocab"),
         dir + QStringLiteral("/vocab.pickle"), QStringLiteral("--threads"), QStringLiteral("1"), image,
         QStringLiteral("--out"), out});
    QVERIFY2(r.exitCode == 0, r.err.constData());

    QFile captionFile(out + QStringLiteral("/caption.txt"));
    QVERIFY(captionFile.open(QIODevice::ReadOnly));
    const QString caption = QString::fromUtf8(captionFile.readAll()).trimmed();
    QFile json(out + QStringLiteral("/trace.json"));
    QVERIFY(json.open(QIODevice::ReadOnly));
    const QJsonObject doc = QJsonDocument::fromJson(json.readAll()).object();
    QCOMPARE(doc[QStringLiteral("caption")].toString(), caption);
    QCOMPARE(doc[QStringLiteral("grid")].toArray(), (QJsonArray{kGrid, kGrid}));
    QCOMPARE(doc[QStringLiteral("image_size")].toArray(), (QJsonArray{251, 173}));
    const QJsonArray tokens = doc[QStringLiteral("tokens")].toArray();
    const QJsonArray words = doc[QStringLiteral("words")].toArray();
    QVERIFY(tokens.size() >= 2);
    QCOMPARE(words.size(), tokens.size());
    QCOMPARE(words[0].toString(), QStringLiteral("SOS"));
    const int S = tokens.size() - 1;
    QCOMPARE(doc[QStringLiteral("token_logprobs")].toArray().size(), S);

    // Cross-attention: S x layers x heads x N, softmax rows.
    const QJsonObject cross = doc[QStringLiteral("cross_attention")].toObject();
    QCOMPARE(shapeOf(cross), (QList<int>{S, kDecLayers, kHeads, kN}));
    for (const auto step : cross[QStringLiteral("data")].toArray())
      for (const auto layer : step.toArray())
        for (const auto head : layer.toArray()) {
          double sum = 0;
          for (const auto v : head.toArray()) sum += v.toDouble();
          QVERIFY2(std::abs(sum - 1.0) <= kTol, qPrintable(QString::number(sum, 'g', 12)));
        }

    // Static expansion per encoder layer.
    const QJsonArray encoder = doc[QStringLiteral("encoder")].toArray();
    QCOMPARE(encoder.size(), kEncLayers);
    for (const auto item : encoder) {
      const QJsonObject layer = item.toObject();
      QCOMPARE(shapeOf(layer[QStringLiteral("z")].toObject()), (QList<int>{kNE, kN}));
      const auto z = rowsOf(layer[QStringLiteral("z")].toObject());
      for (const char* name : {"forward_a", "forward_b"}) {
        const double sign = name[8] == 'a' ? 1.0 : -1.0;
        const QJsonObject m = layer[QLatin1String(name)].toObject();
        QCOMPARE(shapeOf(m), (QList<int>{kNE, kN}));
        const auto rows = rowsOf(m);
        for (size_t r = 0; r < rows.size(); ++r)
          QVERIFY2(sumsToOneOrZero(rows[r], 0, rows[r].size(), rowMass(z, r, sign)), name);
      }
      for (const char* name : {"backward_a", "backward_b"}) {
        const double sign = name[9] == 'a' ? 1.0 : -1.0;
        const QJsonObject m = layer[QLatin1String(name)].toObject();
        QCOMPARE(shapeOf(m), (QList<int>{kN, kNE}));
        const auto rows = rowsOf(m);
        for (size_t r = 0; r < rows.size(); ++r) {
          size_t from = 0;
          for (const int g : kGroups) {
            const auto count = static_cast<size_t>(g);
            QVERIFY2(sumsToOneOrZero(rows[r], from, count, columnMass(z, r, from, count, sign)), name);
            from += count;
          }
        }
      }
    }

    // Dynamic expansion per decoder layer, over the S input positions.
    const QJsonArray decoder = doc[QStringLiteral("decoder")].toArray();
    QCOMPARE(decoder.size(), kDecLayers);
    for (const auto item : decoder) {
      const QJsonObject layer = item.toObject();
      const QJsonObject z = layer[QStringLiteral("z")].toObject();
      QCOMPARE(shapeOf(z), (QList<int>{S * kNumExpDec, S}));
      const auto zRows = rowsOf(z);
      for (int e = 0; e < S * kNumExpDec; ++e)  // causal: element of position t sees positions <= t only
        for (int u = e / kNumExpDec + 1; u < S; ++u) QCOMPARE(zRows[e][u], 0.0);
      for (const char* name : {"forward_a", "forward_b"}) {
        const double sign = name[8] == 'a' ? 1.0 : -1.0;
        const QJsonObject m = layer[QLatin1String(name)].toObject();
        QCOMPARE(shapeOf(m), (QList<int>{S * kNumExpDec, S}));
        const auto rows = rowsOf(m);
        for (size_t r = 0; r < rows.size(); ++r)
          QVERIFY2(sumsToOneOrZero(rows[r], 0, rows[r].size(), rowMass(zRows, r, sign)), name);
      }
      for (const char* name : {"backward_a", "backward_b"}) {
        const QJsonObject m = layer[QLatin1String(name)].toObject();
        QCOMPARE(shapeOf(m), (QList<int>{S, S * kNumExpDec}));
        for (const auto& row : rowsOf(m)) QVERIFY2(sumsToOneOrZero(row, 0, row.size()), name);
      }
    }

    // PNGs: one mean overlay and one layer x head grid per word (EOS has none),
    // one group-mass grid and one slot map per encoder layer.
    const cv::Mat original = cv::imread(image.toStdString());
    QCOMPARE(original.cols, 251);
    QCOMPARE(original.rows, 173);
    const QDir outDir(out);
    int wordOverlays = 0;
    for (int k = 0; k < S; ++k) {
      if (words[k + 1].toString() == QStringLiteral("EOS")) continue;
      const QString index = QStringLiteral("%1").arg(k, 2, 10, QLatin1Char('0'));
      const QString name = index + QStringLiteral("_") + words[k + 1].toString() + QStringLiteral(".png");
      const cv::Mat word = cv::imread(outDir.filePath(QStringLiteral("word_") + name).toStdString());
      QVERIFY2(!word.empty(), qPrintable(name));
      QCOMPARE(word.cols, original.cols);
      QCOMPARE(word.rows, original.rows);
      const cv::Mat grid = cv::imread(outDir.filePath(QStringLiteral("grid_") + name).toStdString());
      QVERIFY2(!grid.empty(), qPrintable(name));
      QVERIFY(grid.cols > grid.rows);  // 4 heads across, 2 layers down
      ++wordOverlays;
    }
    QVERIFY(wordOverlays >= 1);
    for (int l = 1; l <= kEncLayers; ++l) {
      const cv::Mat slotMap =
          cv::imread(outDir.filePath(QStringLiteral("static_slots_layer_%1.png").arg(l)).toStdString());
      QVERIFY(!slotMap.empty());
      QCOMPARE(slotMap.cols, original.cols);
      QCOMPARE(slotMap.rows, original.rows);
      QVERIFY(!cv::imread(outDir.filePath(QStringLiteral("static_layer_%1.png").arg(l)).toStdString()).empty());
    }
  }
};

QTEST_GUILESS_MAIN(TestTraces)
#include "test_traces.moc"

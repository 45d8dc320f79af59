// Captions too long to score. ROUGE-L's longest common subsequence grows with
// the product of two captions' lengths: `expnet score` with a 10 MB caption
// did not finish in 60 s. Now a caption over kMaxCaptionWords is refused,
// naming the file and the image; one at the limit is scored exactly.
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include <string>
#include <vector>

#include "expnet/metrics/scorers.h"
#include "image/bounded_run.h"

namespace {

QString writeJson(const QTemporaryDir& dir, const QString& name, const QByteArray& content) {
  const QString path = dir.filePath(name);
  QFile file(path);
  if (!file.open(QIODevice::WriteOnly)) return {};
  file.write(content);
  return path;
}

// `count` words drawn from a small vocabulary, deterministically.
std::string words(size_t count, unsigned seed) {
  static const char* vocabulary[] = {"a", "man", "dog", "on", "the", "street", "with", "red", "car", "sitting"};
  std::string out;
  out.reserve(count * 5);
  for (size_t i = 0; i < count; ++i) {
    seed = seed * 1103515245u + 12345u;
    if (i) out += ' ';
    out += vocabulary[(seed >> 16) % 10];
  }
  return out;
}

QByteArray quoted(const std::string& text) { return '"' + QByteArray::fromStdString(text) + '"'; }

}  // namespace

class TestMetricsLimits : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;

 private slots:
  void initTestCase() { QVERIFY(dir_.isValid()); }

  // A 10 MB candidate (2 million words): refused, naming the candidates file and the image.
  void tenMegabyteCandidateIsRefusedQuickly() {
    const QString references = writeJson(dir_, "R.json", R"({"img1": ["a man on the street", "a dog"], "img2": ["a car"]})");
    const QString candidates = writeJson(dir_, "C.json", "{\"img1\": " + quoted(words(2000000, 1)) + ", \"img2\": \"a car\"}");
    const auto run = expnet_test::runCliBounded({"score", "--references", references, "--candidates", candidates});
    QCOMPARE(run.result.exitCode, 1);
    const QString err = QString::fromUtf8(run.result.err);
    // Refused from its size in bytes, before it is tokenized.
    QVERIFY2(err.contains(candidates + ": image 'img1': the candidate caption has ") &&
                 err.contains(" bytes, more than the limit of 1000000 per caption"),
             qPrintable(err));
    QVERIFY2(run.seconds < 5, qPrintable(QString::number(run.seconds)));
    QVERIFY2(run.peakKb < 500 * 1024, qPrintable(QString::number(run.peakKb)));
  }

  // The quadratic case: a long reference against a long candidate.
  void longReferenceNamesTheReferencesFile() {
    const QString references =
        writeJson(dir_, "R2.json", "{\"img1\": [\"a dog\", " + quoted(words(200000, 2)) + "]}");
    const QString candidates = writeJson(dir_, "C2.json", "{\"img1\": " + quoted(words(200000, 3)) + "}");
    const auto run = expnet_test::runCliBounded({"score", "--references", references, "--candidates", candidates});
    QCOMPARE(run.result.exitCode, 1);
    const QString err = QString::fromUtf8(run.result.err);
    QVERIFY2(err.contains(candidates + ": image 'img1': the candidate caption has 200000 words"), qPrintable(err));
    // Only the reference too long: the references file is named.
    const QString shortCandidate = writeJson(dir_, "C3.json", R"({"img1": "a dog on the street"})");
    const auto second = expnet_test::runCliBounded({"score", "--references", references, "--candidates", shortCandidate});
    QCOMPARE(second.result.exitCode, 1);
    QVERIFY2(QString::fromUtf8(second.result.err).contains(references + ": image 'img1': reference 2 has 200000 words"),
             second.result.err.constData());
    QVERIFY(run.seconds < 5 && second.seconds < 5);
  }

  // At the limit: scored, and exactly (a caption equal to its reference has ROUGE-L 1;
  // a shifted copy has an LCS of all but one word).
  void captionsAtTheLimitAreScoredExactly() {
    const std::string text = words(expnet::kMaxCaptionWords, 4);
    expnet::EvalSet set;
    const std::vector<std::string> tokens = [&] {
      std::vector<std::string> out;
      for (size_t start = 0, end; start <= text.size(); start = end + 1) {
        end = text.find(' ', start);
        if (end == std::string::npos) end = text.size();
        out.push_back(text.substr(start, end - start));
      }
      return out;
    }();
    QCOMPARE(tokens.size(), expnet::kMaxCaptionWords);
    std::vector<std::string> shifted(tokens.begin() + 1, tokens.end());
    shifted.push_back("zebra");
    QElapsedTimer timer;
    timer.start();
    set.add("same", tokens, {tokens});
    set.add("shifted", shifted, {tokens});
    const auto rouge = expnet::compute_rouge_l(set);
    QCOMPARE(rouge.per_image[0], 1.0);
    const double p = double(tokens.size() - 1) / double(tokens.size());  // precision = recall
    QVERIFY(qAbs(rouge.per_image[1] - p) < 1e-12);
    QVERIFY2(timer.elapsed() < 5000, qPrintable(QString::number(timer.elapsed())));
    std::vector<std::string> over = tokens;
    over.push_back("one");
    QVERIFY_THROWS_EXCEPTION(expnet::CaptionTooLong, set.add("over", over, {tokens}));
    QVERIFY_THROWS_EXCEPTION(expnet::CaptionTooLong, set.add_raw("bytes", std::string(expnet::kMaxCaptionBytes + 1, 'a'), {"a"}));
  }
};

QTEST_GUILESS_MAIN(TestMetricsLimits)
#include "test_metrics_limits.moc"

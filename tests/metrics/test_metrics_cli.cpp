// `expnet score` and `expnet bench metrics` as a user runs them.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include <cmath>

#include "fixture_json.h"
#include "support/fixtures.h"

using expnet_test::runProcess;

namespace {

QString writeFile(const QString& dir, const QString& name, const QByteArray& content) {
  const QString path = dir + QLatin1Char('/') + name;
  QFile file(path);
  if (!file.open(QIODevice::WriteOnly)) return {};
  file.write(content);
  return path;
}

QByteArray json(const QJsonObject& object) { return QJsonDocument(object).toJson(QJsonDocument::Compact); }

expnet_test::ProcessResult score(const QString& references, const QString& candidates, bool asJson = true) {
  QStringList args = {"score", "--references", references, "--candidates", candidates, "--threads", "1"};
  if (asJson) args << "--json";
  return runProcess(expnet_test::cliPath(), args);
}

}  // namespace

class TestMetricsCli : public QObject {
  Q_OBJECT
 private slots:
  void scoreJsonMatchesTheCocoScorers() {
    EXPNET_FIXTURE(path, "metrics/coco_scorers_small.json");
    const QJsonObject fixture = loadJsonObject(path);
    const QString dir = expnet_test::makeTempDir("metrics_cli_score");
    const QString refs = writeFile(dir, "R.json", json(fixture.value("raw_references").toObject()));
    const QString cands = writeFile(dir, "C.json", json(fixture.value("raw_candidates").toObject()));
    const auto r = score(refs, cands);
    QVERIFY2(r.exitCode == 0, r.err.constData());
    const QList<QByteArray> lines = r.out.trimmed().split('\n');
    QCOMPARE(lines.size(), 1);
    const QJsonObject out = QJsonDocument::fromJson(lines.front()).object();
    const QJsonObject corpus = out.value("corpus").toObject();
    const QJsonObject expected_corpus = fixture.value("corpus").toObject();
    for (const char* key : {"Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4", "ROUGE_L", "CIDEr"})
      EXPECT_NEAR(corpus.value(key).toDouble(-1), expected_corpus.value(key).toDouble(), 1e-6, key);
    const QJsonObject per_image = out.value("per_image").toObject();
    const QJsonObject expected = fixture.value("per_image").toObject();
    QCOMPARE(per_image.size(), expected.size());
    for (const auto& id : expected.keys()) {
      const QJsonObject image = per_image.value(id).toObject();
      for (const char* key : {"Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4", "ROUGE_L", "CIDEr"})
        QVERIFY2(image.contains(key), qPrintable(id + " " + key));
      for (const char* key : {"Bleu_4", "ROUGE_L", "CIDEr"})
        EXPECT_NEAR(image.value(key).toDouble(-1), expected.value(id).toObject().value(key).toDouble(), 1e-6,
                    id + " " + key);
    }
    const QJsonObject ms = out.value("ms").toObject();
    for (const char* key : {"tokenize", "Bleu", "ROUGE_L", "CIDEr"})
      QVERIFY2(ms.value(key).toDouble(-1) >= 0, key);
    QVERIFY2(r.err.contains("METEOR and SPICE are not computed"), r.err.constData());

    const auto text = score(refs, cands, false);
    QCOMPARE(text.exitCode, 0);
    QVERIFY2(text.out.contains("CIDEr: 2.634787"), text.out.constData());
    QVERIFY(text.out.contains("METEOR: not computed"));
  }

  void scoreRejectsBadInput_data() {
    QTest::addColumn<QByteArray>("references");
    QTest::addColumn<QByteArray>("candidates");
    QTest::addColumn<QString>("message");
    QTest::newRow("mismatched ids") << QByteArray(R"({"1":["a dog"],"2":["a cat"]})")
                                    << QByteArray(R"({"1":"a dog","3":"a cow"})") << "differ";
    QTest::newRow("empty reference list") << QByteArray(R"({"1":[]})") << QByteArray(R"({"1":"a dog"})")
                                          << "empty reference list";
    QTest::newRow("bad references JSON") << QByteArray(R"({"1":["a dog"])") << QByteArray(R"({"1":"a dog"})")
                                         << "not valid JSON";
    QTest::newRow("bad candidates JSON") << QByteArray(R"({"1":["a dog"]})") << QByteArray("nope")
                                         << "not valid JSON";
    QTest::newRow("reference not a string") << QByteArray(R"({"1":["a dog", 5]})") << QByteArray(R"({"1":"a dog"})")
                                            << "must be a string";
    QTest::newRow("candidate list") << QByteArray(R"({"1":["a dog"]})") << QByteArray(R"({"1":["a", "b"]})")
                                    << "one candidate caption string";
    QTest::newRow("no images") << QByteArray("{}") << QByteArray("{}") << "no images";
  }
  void scoreRejectsBadInput() {
    QFETCH(QByteArray, references);
    QFETCH(QByteArray, candidates);
    QFETCH(QString, message);
    const QString dir = expnet_test::makeTempDir("metrics_cli_bad");
    const auto r = score(writeFile(dir, "R.json", references), writeFile(dir, "C.json", candidates));
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.startsWith("error: "), r.err.constData());
    QVERIFY2(r.err.contains(message.toUtf8()), r.err.constData());
  }
  void scoreMissingFile() {
    const auto r = score("/nonexistent/R.json", "/nonexistent/C.json");
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.contains("/nonexistent/R.json") && r.err.contains("no such file"), r.err.constData());
  }

  void benchMetricsJson() {
    const auto r = runProcess(expnet_test::cliPath(),
                              {"bench", "metrics", "--json", "--repeats", "1", "--threads", "1"});
    QVERIFY2(r.exitCode == 0, r.err.constData());
    const QJsonObject out = QJsonDocument::fromJson(r.out.trimmed()).object();
    QCOMPARE(out.value("images").toInt(), 5000);
    QCOMPARE(out.value("references_per_image").toInt(), 5);
    const QJsonObject ms = out.value("ms").toObject();
    for (const char* key : {"tokenize", "Bleu", "ROUGE_L", "CIDEr", "reward_setup", "reward", "reward_ids"})
      QVERIFY2(ms.value(key).toDouble(-1) > 0, key);
  }
};

QTEST_GUILESS_MAIN(TestMetricsCli)
#include "test_metrics_cli.moc"

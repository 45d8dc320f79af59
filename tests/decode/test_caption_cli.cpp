// `expnet caption` as a user runs it on the authors' tiny reference files.
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include "support/fixtures.h"

class TestCaptionCli : public QObject {
  Q_OBJECT

  QStringList modelArgs(const QString& dir) {
    return {QStringLiteral("caption"),     QStringLiteral("--model"), dir + QStringLiteral("/model_config.json"),
            QStringLiteral("--checkpoint"), dir + QStringLiteral("/checkpoint.pth"),
            QStringLiteral("--vocab"),      dir + QStringLiteral("/vocab.pickle"),
            QStringLiteral("--threads"),    QStringLiteral("1")};
  }

  // The authors' beam search on the tiny fixture (expected.json); empty when unreadable.
  static QJsonObject expectedBeam(const QString& dir) {
    QFile json(dir + QStringLiteral("/expected.json"));
    if (!json.open(QIODevice::ReadOnly)) return {};
    return QJsonDocument::fromJson(json.readAll()).object()[QStringLiteral("beam_search")].toObject();
  }

  static QList<QJsonObject> jsonLines(const QByteArray& out) {
    QList<QJsonObject> lines;
    for (const QByteArray& line : out.trimmed().split('\n'))
      if (!line.isEmpty()) lines << QJsonDocument::fromJson(line).object();
    return lines;
  }

 private slots:
  void captionsLikeTheReference() {
    EXPNET_FIXTURE(image, "reference/tiny/image0.png");
    const QString dir = QFileInfo(image).path();
    const QJsonObject beam = expectedBeam(dir);
    QVERIFY(!beam.isEmpty());

    const QString missing = QStringLiteral("/nonexistent/cat.jpg");
    const auto r = expnet_test::runProcess(
        expnet_test::cliPath(), modelArgs(dir) + QStringList{QStringLiteral("--beam"), QStringLiteral("3"),
                                                             QStringLiteral("--n-best"), QStringLiteral("3"),
                                                             QStringLiteral("--max-len"), QStringLiteral("12"),
                                                             QStringLiteral("--json"), image, missing});
    QCOMPARE(r.exitCode, 1);  // one file failed, the other was still captioned
    const auto lines = jsonLines(r.out);
    QCOMPARE(lines.size(), 2);
    QCOMPARE(lines[0][QStringLiteral("image")].toString(), image);
    const QJsonArray captions = lines[0][QStringLiteral("captions")].toArray();
    const QJsonArray expected = beam[QStringLiteral("tokens")].toArray()[0].toArray();
    const QJsonArray sums = beam[QStringLiteral("sum_logprobs")].toArray()[0].toArray();
    QCOMPARE(captions.size(), expected.size());
    for (int i = 0; i < captions.size(); ++i) {
      QCOMPARE(captions[i][QStringLiteral("tokens")].toArray(), expected[i].toArray());
      QVERIFY(std::abs(captions[i][QStringLiteral("sum_logprob")].toDouble() - sums[i].toDouble()) < 1e-3);
    }
    QCOMPARE(captions[0][QStringLiteral("text")].toString(),
             beam[QStringLiteral("captions")].toArray()[0].toArray()[0].toString());
    const QJsonObject ms = lines[0][QStringLiteral("ms")].toObject();
    for (const char* key : {"load", "preprocess", "encode", "decode"}) QVERIFY2(ms[QLatin1String(key)].toDouble() > 0, key);
    QCOMPARE(lines[1][QStringLiteral("image")].toString(), missing);
    QVERIFY(lines[1][QStringLiteral("error")].toString().contains(QStringLiteral("no such file")));
    QVERIFY(r.err.contains("could not be captioned"));
  }

  // bf16 matrix products (forced on, so CPUs without avx512_bf16 run it too,
  // emulated) give the reference's captions on the tiny fixture.
  void bf16CaptionsLikeTheReference() {
    EXPNET_FIXTURE(image, "reference/tiny/image0.png");
    const QString dir = QFileInfo(image).path();
    const QJsonObject beam = expectedBeam(dir);
    QVERIFY(!beam.isEmpty());
    const QStringList decoding{QStringLiteral("--beam"), QStringLiteral("3"),   QStringLiteral("--n-best"),
                               QStringLiteral("3"),      QStringLiteral("--max-len"), QStringLiteral("12"),
                               QStringLiteral("--json"), QStringLiteral("--precision"), QStringLiteral("bf16")};
    qputenv("EXPNET_CPU_BF16", "1");
    const auto r = expnet_test::runProcess(expnet_test::cliPath(), modelArgs(dir) + decoding + QStringList{image});
    qputenv("EXPNET_CPU_BF16", "0");  // as on a CPU without bfloat16: fp32, and it says so
    const auto fallback = expnet_test::runProcess(expnet_test::cliPath(), modelArgs(dir) + decoding + QStringList{image});
    qunsetenv("EXPNET_CPU_BF16");
    QCOMPARE(r.exitCode, 0);
    QVERIFY2(r.err.contains("matrix products in bf16"), r.err.constData());
    const QJsonArray captions = jsonLines(r.out)[0][QStringLiteral("captions")].toArray();
    const QJsonArray expected = beam[QStringLiteral("tokens")].toArray()[0].toArray();
    QCOMPARE(captions.size(), expected.size());
    for (int i = 0; i < captions.size(); ++i) QCOMPARE(captions[i][QStringLiteral("tokens")].toArray(), expected[i].toArray());
    QCOMPARE(fallback.exitCode, 0);
    QVERIFY2(fallback.err.contains("running in fp32 instead"), fallback.err.constData());
    QVERIFY(!fallback.err.contains("matrix products in bf16"));
    const auto bad = expnet_test::runProcess(expnet_test::cliPath(),
                                             modelArgs(dir) + QStringList{QStringLiteral("--precision"), QStringLiteral("fp8"), image});
    QVERIFY(bad.exitCode != 0);
    QVERIFY2(bad.err.contains("--precision") && bad.err.contains("fp8"), bad.err.constData());
  }

  void foldersAndBadFiles() {
    EXPNET_FIXTURE(image, "reference/tiny/image0.png");
    const QString dir = QFileInfo(image).path();
    const QString folder = expnet_test::makeTempDir(QStringLiteral("caption_folder"));
    QDir().mkpath(folder + QStringLiteral("/sub"));
    QVERIFY(QFile::copy(image, folder + QStringLiteral("/sub/a.png")));
    QFile broken(folder + QStringLiteral("/b.jpg"));
    QVERIFY(broken.open(QIODevice::WriteOnly));
    broken.write("this is not a jpeg");
    broken.close();
    const auto r = expnet_test::runProcess(expnet_test::cliPath(),
                                           modelArgs(dir) + QStringList{QStringLiteral("--json"), QStringLiteral("--max-len"),
                                                                        QStringLiteral("8"), folder});
    QCOMPARE(r.exitCode, 1);
    const auto lines = jsonLines(r.out);
    QCOMPARE(lines.size(), 2);
    QCOMPARE(lines[0][QStringLiteral("image")].toString(), folder + QStringLiteral("/b.jpg"));
    QVERIFY(!lines[0][QStringLiteral("error")].toString().isEmpty());
    QCOMPARE(lines[1][QStringLiteral("image")].toString(), folder + QStringLiteral("/sub/a.png"));
    QCOMPARE(lines[1][QStringLiteral("captions")].toArray().size(), 1);  // --n-best defaults to 1
  }

  void missingVocabularyIsExplained() {
    EXPNET_FIXTURE(image, "reference/tiny/image0.png");
    const QString dir = QFileInfo(image).path();
    const auto r = expnet_test::runProcess(
        expnet_test::cliPath(), {QStringLiteral("caption"), QStringLiteral("--model"), dir + QStringLiteral("/model_config.json"),
                                 QStringLiteral("--checkpoint"), dir + QStringLiteral("/checkpoint.pth"), image});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.contains("--vocab"), r.err.constData());
  }
};

QTEST_GUILESS_MAIN(TestCaptionCli)
#include "test_caption_cli.moc"

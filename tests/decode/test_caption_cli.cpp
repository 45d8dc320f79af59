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
    QFile json(dir + QStringLiteral("/expected.json"));
    QVERIFY(json.open(QIODevice::ReadOnly));
    const QJsonObject beam = QJsonDocument::fromJson(json.readAll()).object()[QStringLiteral("beam_search")].toObject();

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

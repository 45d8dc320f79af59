// The CLI as a user runs it: a separate process, stdout/stderr and exit codes.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include "support/fixtures.h"

using expnet_test::runProcess;

class TestCli : public QObject {
  Q_OBJECT
 private slots:
  void versionListsComponents() {
    const auto r = runProcess(expnet_test::cliPath(), {QStringLiteral("--version")});
    QCOMPARE(r.exitCode, 0);
    const QString out = QString::fromUtf8(r.out);
    for (const char* word : {"expnet ", "LibTorch ", "OpenCV ", "Qt ", "SQLite ", "device cpu"})
      QVERIFY2(out.contains(QLatin1String(word)), qPrintable(out));
  }
  void doctorJsonHasKeys() {
    const auto r = runProcess(expnet_test::cliPath(), {QStringLiteral("doctor"), QStringLiteral("--json"),
                                                        QStringLiteral("--threads"), QStringLiteral("1")});
    QCOMPARE(r.exitCode, 0);
    const QList<QByteArray> lines = r.out.trimmed().split('\n');
    QCOMPARE(lines.size(), 1);  // compact: one object, one line
    QJsonParseError error;
    const QJsonObject doc = QJsonDocument::fromJson(lines.front(), &error).object();
    QCOMPARE(error.error, QJsonParseError::NoError);
    for (const char* key : {"gflops", "threads", "blas_threads", "cuda", "devices"})
      QVERIFY2(doc.contains(QLatin1String(key)), key);
    QVERIFY(doc.value(QStringLiteral("gflops")).toDouble() > 0);
    QCOMPARE(doc.value(QStringLiteral("threads")).toInt(), 1);
    QVERIFY(doc.value(QStringLiteral("devices")).toArray().size() >= 1);
  }
  void unknownDeviceIsAClearError() {
    const auto r = runProcess(expnet_test::cliPath(), {QStringLiteral("doctor"), QStringLiteral("--device"),
                                                        QStringLiteral("tpu")});
    QVERIFY(r.exitCode != 0);
    QVERIFY2(r.err.contains("unknown device 'tpu'"), r.err.constData());
  }
  void unknownSubcommandFails() {
    const auto r = runProcess(expnet_test::cliPath(), {QStringLiteral("no-such-command")});
    QVERIFY(r.exitCode != 0);
  }
};

QTEST_GUILESS_MAIN(TestCli)
#include "test_cli.moc"

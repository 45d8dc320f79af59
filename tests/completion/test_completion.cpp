// The bash completion (`expnet completion bash`) run in a real bash, and the
// man pages help2man made at build time, as the package installs them.
#include <QDir>
#include <QFile>
#include <QStandardPaths>
#include <QtTest>

#include "support/fixtures.h"

using expnet_test::runProcess;

namespace {

const QString kCompletionFile = QStringLiteral(EXPNET_COMPLETION_FILE);

// What bash offers for the command line `words`, the cursor at the end of the last word.
QStringList completions(const QStringList& words) {
  const QString program = QStringLiteral(
      "source \"$1\" || exit 3; shift; COMP_WORDS=(\"$@\"); COMP_CWORD=$(($# - 1)); _expnet; "
      "printf '%s\\n' \"${COMPREPLY[@]}\"");
  const auto r = runProcess(QStringLiteral("bash"),
                            QStringList{QStringLiteral("-c"), program, QStringLiteral("bash"), kCompletionFile} + words);
  if (r.exitCode != 0) qWarning("bash failed (%d): %s", r.exitCode, r.err.constData());
  QStringList offered = QString::fromUtf8(r.out).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
  offered.sort();
  return offered;
}

QStringList sorted(QStringList list) {
  list.sort();
  return list;
}

QByteArray manPage(const QString& name) {
  const auto r = runProcess(QStringLiteral("gzip"), {QStringLiteral("-dc"), QStringLiteral(EXPNET_MAN_DIR "/") + name});
  return r.exitCode == 0 ? r.out : QByteArray();
}

}  // namespace

class TestCompletion : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    QVERIFY2(QFile::exists(kCompletionFile), qPrintable(kCompletionFile + " missing: build the expnet_manuals target"));
  }

  void buildScriptIsCurrent() {
    const auto r = runProcess(expnet_test::cliPath(), {QStringLiteral("completion"), QStringLiteral("bash")});
    QCOMPARE(r.exitCode, 0);
    QFile built(kCompletionFile);
    QVERIFY(built.open(QIODevice::ReadOnly));
    QCOMPARE(built.readAll(), r.out);
    QVERIFY(r.out.contains("complete -F _expnet expnet"));
  }

  void scriptIsValidBash() {
    const auto r = runProcess(QStringLiteral("bash"), {QStringLiteral("-n"), kCompletionFile});
    QVERIFY2(r.exitCode == 0, r.err.constData());
  }

  void completesSubcommands() {
    QCOMPARE(completions({"expnet", "ca"}), QStringList{"caption"});
    QCOMPARE(completions({"expnet", "runs", ""}), sorted({"list", "show", "table", "export", "follow", "stop", "fetch", "mirror"}));
    QCOMPARE(completions({"expnet", "dataset", ""}), sorted({"stats", "vocab", "make-shapes", "index", "query"}));
    const QStringList top = completions({"expnet", ""});
    for (const char* command : {"caption", "runs", "dataset", "checkpoint", "bench", "completion", "hosts"})
      QVERIFY2(top.contains(QLatin1String(command)), command);
    for (const char* hidden : {"remote", "transfer"})  // a host's side, started by ssh: not offered
      QVERIFY2(!top.contains(QLatin1String(hidden)), hidden);
  }

  void completesOptionsOfTheSubcommand() {
    const QStringList options = completions({"expnet", "runs", "export", "--"});
    for (const char* option : {"--csv", "--tensorboard", "--store", "--threads", "--device", "--help"})
      QVERIFY2(options.contains(QLatin1String(option)), option);
    QVERIFY(!options.contains(QStringLiteral("--version")));  // the root's, not export's
    QCOMPARE(completions({"expnet", "caption", "--dec"}), QStringList{"--decoder"});
  }

  void optionValuesAreSteppedOver() {
    // "runs" here is --device's value, not the runs subcommand.
    QCOMPARE(completions({"expnet", "--device", "cpu", "runs", ""}), sorted({"list", "show", "table", "export", "follow", "stop", "fetch", "mirror"}));
    QCOMPARE(completions({"expnet", "caption", "--model", "runs", "--json", "--dec"}), QStringList{"--decoder"});
  }

  void completesChoices() {
    QCOMPARE(completions({"expnet", "caption", "--decoder", ""}), sorted({"incremental", "full"}));
    QCOMPARE(completions({"expnet", "caption", "--search", "g"}), QStringList{"greedy"});
    QCOMPARE(completions({"expnet", "doctor", "--device", ""}), sorted({"cpu", "cuda"}));
    // --decoder=f: bash splits the word at '='.
    QCOMPARE(completions({"expnet", "caption", "--decoder", "="}), sorted({"incremental", "full"}));
    QCOMPARE(completions({"expnet", "caption", "--decoder", "=", "f"}), QStringList{"full"});
  }

  void completesFilesForPathsAndNothingForNumbers() {
    const QString dir = expnet_test::makeTempDir(QStringLiteral("completion-files"));
    QFile model(dir + QStringLiteral("/model.pth"));
    QVERIFY(model.open(QIODevice::WriteOnly));
    model.close();
    const QString prefix = dir + QStringLiteral("/mod");
    const QStringList expected{dir + QStringLiteral("/model.pth")};
    QCOMPARE(completions({"expnet", "caption", "--checkpoint", prefix}), expected);
    QCOMPARE(completions({"expnet", "checkpoint", "inspect", prefix}), expected);  // a positional file
    QCOMPARE(completions({"expnet", "runs", "export", "--tensorboard", prefix}), expected);
    QCOMPARE(completions({"expnet", "caption", "--beam", ""}).size(), 0);
  }

  void manPagesAreGzippedTroff_data() {
    QTest::addColumn<QString>("page");
    QTest::addColumn<QStringList>("mentions");  // as troff writes them: '-' is "\-"
    QTest::newRow("expnet") << QStringLiteral("expnet.1.gz")
                            << QStringList{".TH EXPNET", "caption", "\\-\\-version", "\\-\\-device", "SUBCOMMAND OPTIONS",
                                           "expnet\\-studio"};
    QTest::newRow("expnet-studio") << QStringLiteral("expnet-studio.1.gz")
                                   << QStringList{".TH EXPNET-STUDIO", "\\-\\-screenshot", "\\-\\-theme", "SEE ALSO"};
  }
  void manPagesAreGzippedTroff() {
    if (!EXPNET_MAN_PAGES_BUILT)
      QSKIP("help2man was not found when CMake configured: no man pages (packaging/install-deps.sh installs it)");
    QFETCH(QString, page);
    QFETCH(QStringList, mentions);
    QFile file(QStringLiteral(EXPNET_MAN_DIR "/") + page);
    QVERIFY2(file.open(QIODevice::ReadOnly), qPrintable(file.fileName()));
    const QByteArray header = file.read(10);
    QCOMPARE(header.left(2), QByteArray("\x1f\x8b"));
    QCOMPARE(header[3] & 0x08, 0);        // gzip -n: no file name stored...
    QCOMPARE(header.mid(4, 4), QByteArray(4, '\0'));  // ...and no time stamp, as lintian wants
    const QByteArray troff = manPage(page);
    for (const QString& mention : mentions)
      QVERIFY2(troff.contains(mention.toUtf8()), qPrintable(mention));
  }

  void manShowsTheOptions() {
    if (!EXPNET_MAN_PAGES_BUILT)
      QSKIP("help2man was not found when CMake configured: no man pages (packaging/install-deps.sh installs it)");
    if (QStandardPaths::findExecutable(QStringLiteral("man")).isEmpty()) QSKIP("man (man-db) is not installed");
    const auto r = runProcess(QStringLiteral("man"), {QStringLiteral("-l"), QStringLiteral(EXPNET_MAN_DIR "/expnet.1.gz")});
    QCOMPARE(r.exitCode, 0);
    const QString text = QString::fromUtf8(r.out);
    for (const char* words : {"--version", "--threads", "caption", "expnet SUBCOMMAND --help", "expnet-studio(1)"})
      QVERIFY2(text.contains(QLatin1String(words)), qPrintable(QLatin1String(words) + QLatin1Char('\n') + text));
  }
};

QTEST_GUILESS_MAIN(TestCompletion)
#include "test_completion.moc"

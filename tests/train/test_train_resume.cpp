// `expnet train` end to end on a very small model and shapes set: a run killed
// with SIGKILL mid-way and resumed ends with bit-identical parameters to an
// uninterrupted run (CPU, 1 thread); the run store and `expnet runs` see it.
#include <QProcess>
#include <QtTest>

#include <torch/torch.h>

#include <csignal>
#include <filesystem>
#include <fstream>

#include "run_folder_util.h"
#include "expnet/checkpoint/state_dict.h"
#include "support/fixtures.h"

namespace {

const QString kConfig = QStringLiteral(EXPNET_TRAIN_TEST_DIR "/tiny_train.json");

QStringList train_args(const QString& out, bool resume) {
  QStringList a{"train", "--config", kConfig, "--out", out, "--threads", "1", "--no-progress", "--json"};
  if (resume) a << "--resume";
  return a;
}

using expnet_test::latest_step;

}  // namespace

class TestTrainResume : public QObject {
  Q_OBJECT

 private slots:
  void killedAndResumedRunIsBitIdentical() {
    const QString whole = expnet_test::makeTempDir("train_whole");
    const auto a = expnet_test::runProcess(expnet_test::cliPath(), train_args(whole, false));
    QVERIFY2(a.exitCode == 0, a.err.constData());
    QVERIFY(a.out.contains("\"status\":\"finished\""));

    const QString killed = expnet_test::makeTempDir("train_killed");
    QProcess p;
    p.start(expnet_test::cliPath(), train_args(killed, false));
    QVERIFY(p.waitForStarted());
    QVERIFY2(expnet_test::signal_at_step(p, killed, 4, 20, SIGKILL), "the run ended before it could be killed");
    p.waitForFinished();
    QVERIFY(latest_step(killed) >= 4);

    const auto b = expnet_test::runProcess(expnet_test::cliPath(), train_args(killed, true));
    QVERIFY2(b.exitCode == 0, b.err.constData());

    // The store and the CLI see the run; steps logged once each after the resume.
    const auto show = expnet_test::runProcess(expnet_test::cliPath(),
                                              {"runs", "show", "tiny-resume", "--json", "--store", killed + "/runs.sqlite"});
    QVERIFY2(show.exitCode == 0, show.err.constData());
    QVERIFY(show.out.contains("\"status\":\"finished\""));
    const auto csv = expnet_test::runProcess(expnet_test::cliPath(),
                                             {"runs", "export", "tiny-resume", "--csv", "--store", whole + "/runs.sqlite"});
    QVERIFY(csv.exitCode == 0);
    QCOMPARE(csv.out.count("\nstep,"), 9);  // 2 epochs x 3 optimizer steps + 3 SCST steps
    QCOMPARE(csv.out.count("\nvalidation,"), 3);
    const auto csv2 = expnet_test::runProcess(expnet_test::cliPath(),
                                              {"runs", "export", "tiny-resume", "--csv", "--store", killed + "/runs.sqlite"});
    QCOMPARE(csv2.out.count("\nstep,"), 9);

    const auto x = expnet::read_state_dict((whole + "/final.pth").toStdString());
    const auto y = expnet::read_state_dict((killed + "/final.pth").toStdString());
    QCOMPARE(x.size(), y.size());
    QVERIFY(expnet_test::same_entries(x, y));
  }
};

QTEST_GUILESS_MAIN(TestTrainResume)
#include "test_train_resume.moc"

// Checkpoint writing under faults, on real `expnet` processes and a tiny
// keep_last 1 run (80 steps, a checkpoint after each): 20 SIGKILLs at random
// moments, each followed by --resume; writes past `ulimit -f` (EFBIG) at 5
// sizes in training and 4 in `expnet checkpoint export`. Every run must end
// with bytes identical to an uninterrupted run's, no temporary file, exit 1 with
// the file and "File too large" (never SIGABRT/SIGXFSZ), and a "failed" run.
#include <QElapsedTimer>
#include <QFile>
#include <QProcess>
#include <QRandomGenerator>
#include <QtTest>

#include <torch/torch.h>

#include <csignal>
#include <filesystem>
#include <fstream>

#include "expnet/checkpoint/state_dict.h"
#include "expnet/train/run_store.h"
#include "support/fixtures.h"
#include "train/run_folder_util.h"

namespace fs = std::filesystem;

namespace {

const QString kConfig = QStringLiteral(EXPNET_FAULTS_TEST_DIR "/fault_train.json");
constexpr int kFinalStep = 80;  // 2 epochs x 40 optimizer steps

QStringList train_args(const QString& out, bool resume) {
  QStringList a{"train", "--config", kConfig, "--out", out, "--threads", "1", "--no-progress", "--json"};
  if (resume) a << "--resume";
  return a;
}

// `args` run by the CLI with a file size limit of `blocks` KiB (bash's ulimit -f unit).
expnet_test::ProcessResult run_limited(int blocks, const QStringList& args) {
  return expnet_test::runProcess(QStringLiteral("/bin/bash"),
                                 QStringList{"-c", QStringLiteral("ulimit -f %1 && exec \"$0\" \"$@\"").arg(blocks),
                                             expnet_test::cliPath()} +
                                     args);
}

QByteArray bytes(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

QString stem_of(int step) { return QStringLiteral("step-%1").arg(step, 8, 10, QLatin1Char('0')); }

// Every file name in `folder`, sorted.
QStringList files_in(const QString& folder) {
  QStringList names;
  for (const auto& entry : fs::directory_iterator(folder.toStdString()))
    names << QString::fromStdString(entry.path().filename().string());
  names.sort();
  return names;
}

int temporaries_in(const QString& folder) {
  int n = 0;
  for (const auto& name : files_in(folder)) n += name.contains(QLatin1String(".tmp.")) ? 1 : 0;
  return n;
}

expnet::RunInfo stored_run(const QString& out) {
  return expnet::RunStore(fs::canonical((out + "/runs.sqlite").toStdString()).string()).find_run("fault-run");
}

}  // namespace

class TestCheckpointFaults : public QObject {
  Q_OBJECT

  QString reference_;  // the uninterrupted run

  // The run in `out` ended as the reference did: same final step checkpoint,
  // state and final.pth, byte for byte, and nothing else left in checkpoints/.
  void compareWithReference(const QString& out) {
    const QString ckpt = out + "/checkpoints/", ref = reference_ + "/checkpoints/";
    for (const QString& name : {stem_of(kFinalStep) + ".pth", stem_of(kFinalStep) + ".state", QStringLiteral("best.pth"),
                                QStringLiteral("latest.json")})
      QVERIFY2(bytes(ckpt + name) == bytes(ref + name) && !bytes(ref + name).isEmpty(), qPrintable(ckpt + name));
    QVERIFY(bytes(out + "/final.pth") == bytes(reference_ + "/final.pth"));
    QVERIFY(expnet_test::same_entries(expnet::read_state_dict((out + "/final.pth").toStdString()),
                                      expnet::read_state_dict((reference_ + "/final.pth").toStdString())));
    QCOMPARE(files_in(out + "/checkpoints"), files_in(reference_ + "/checkpoints"));
  }

 private slots:
  void initTestCase() {
    reference_ = expnet_test::makeTempDir("faults_reference");
    QElapsedTimer timer;
    timer.start();
    const auto r = expnet_test::runProcess(expnet_test::cliPath(), train_args(reference_, false));
    QVERIFY2(r.exitCode == 0, r.err.constData());
    QVERIFY(r.out.contains("\"status\":\"finished\""));
    QCOMPARE(expnet_test::latest_step(reference_), kFinalStep);
    const QStringList expected{"best.pth", "latest.json", stem_of(kFinalStep) + ".pth", stem_of(kFinalStep) + ".state"};
    QCOMPARE(files_in(reference_ + "/checkpoints"), expected);
    qInfo("uninterrupted run: %lld ms", static_cast<long long>(timer.elapsed()));
  }

  // Each cycle waits for a checkpoint newer than the last one (the resume
  // continued), then kills at a random moment of the next steps and saves.
  void twentyKillsAndResumesEndBitIdentical() {
    const QString out = expnet_test::makeTempDir("faults_killed");
    const QString ckpt = out + "/checkpoints";
    QRandomGenerator random(20261126);
    QElapsedTimer timer;
    timer.start();
    int kills = 0, left_temporaries = 0, left_extra_steps = 0, last = -1;
    for (int cycle = 0; kills < 20 && cycle < 30; ++cycle) {
      QProcess p;
      p.start(expnet_test::cliPath(), train_args(out, cycle > 0));
      QVERIFY(p.waitForStarted());
      expnet_test::wait_for_step(p, out, last + 1, 2);
      QTest::qWait(static_cast<int>(random.bounded(70)));
      if (p.state() == QProcess::Running) {
        ::kill(static_cast<pid_t>(p.processId()), SIGKILL);
        ++kills;
      }
      QVERIFY(p.waitForFinished(120000));
      if (p.exitStatus() == QProcess::NormalExit)
        QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
      // The checkpoint latest.json names is complete, and no older than before.
      const int now = expnet_test::latest_step(out);
      QVERIFY2(now > last, qPrintable(QStringLiteral("cycle %1: latest step %2 after %3").arg(cycle).arg(now).arg(last)));
      const QString stem = ckpt + "/" + stem_of(now);
      QVERIFY2(fs::exists((stem + ".pth").toStdString()) && fs::exists((stem + ".state").toStdString()), qPrintable(stem));
      left_temporaries += temporaries_in(ckpt) > 0 ? 1 : 0;
      int steps = 0;
      for (const auto& name : files_in(ckpt)) steps += name.startsWith(QLatin1String("step-")) ? 1 : 0;
      left_extra_steps += steps > 2 ? 1 : 0;
      last = now;
    }
    QCOMPARE(kills, 20);
    QVERIFY2(last < kFinalStep, "the run finished before its 20th kill: make it longer");
    const auto done = expnet_test::runProcess(expnet_test::cliPath(), train_args(out, true));
    QVERIFY2(done.exitCode == 0, done.err.constData());
    QVERIFY(done.out.contains("\"status\":\"finished\""));
    compareWithReference(out);
    QCOMPARE(temporaries_in(ckpt), 0);
    QCOMPARE(stored_run(out).status, std::string("finished"));
    qInfo("%d kills (%d left a temporary file, %d an extra step file) + resumes, then bit-identical: %lld ms", kills,
          left_temporaries, left_extra_steps, static_cast<long long>(timer.elapsed()));
  }

  // Past the file size limit the save fails with EFBIG: exit 1 naming the
  // file, the run "failed" with the reason, the previous checkpoint intact.
  void fileSizeLimitInTrainingFailsCleanly() {
    const QString out = expnet_test::makeTempDir("faults_efbig_train");
    const QString ckpt = out + "/checkpoints";
    QElapsedTimer timer;
    timer.start();
    {
      QProcess p;
      p.start(expnet_test::cliPath(), train_args(out, false));
      QVERIFY(p.waitForStarted());
      QVERIFY2(expnet_test::signal_at_step(p, out, 3, 5, SIGKILL), "the run ended before it could be killed");
      p.waitForFinished();
    }
    // A temporary file of a killed process (no such pid) goes on the next resume.
    const QString stale = ckpt + "/" + stem_of(99) + ".state.tmp.999999999.1";
    QVERIFY(QFile(stale).open(QIODevice::WriteOnly));
    // KiB: just below the .state (453 KiB), between it and the .pth (224 KiB),
    // below the .pth. Largest first: the killed run left a 115 KiB SQLite WAL,
    // which the first clean exit folds into the store (the store then needs < 100).
    for (const int blocks : {450, 300, 224, 160, 100}) {
      const int before = expnet_test::latest_step(out);
      const QString stem = ckpt + "/" + stem_of(before);
      const QByteArray pth = bytes(stem + ".pth"), state = bytes(stem + ".state");
      QVERIFY(!pth.isEmpty() && !state.isEmpty());
      const auto r = run_limited(blocks, train_args(out, true));
      const QString why = QStringLiteral("ulimit -f %1: exit %2: %3").arg(blocks).arg(r.exitCode).arg(QString(r.err.right(600)));
      QVERIFY2(r.finished && r.exitCode == 1, qPrintable(why));
      QVERIFY2(r.err.contains("File too large") && r.err.contains((ckpt + "/step-").toUtf8()), qPrintable(why));
      QVERIFY2(!r.err.contains("terminate"), qPrintable(why));
      QCOMPARE(expnet_test::latest_step(out), before);
      QVERIFY(bytes(stem + ".pth") == pth && bytes(stem + ".state") == state);
      QCOMPARE(temporaries_in(ckpt), 0);
      const QStringList expected{"latest.json", stem_of(before) + ".pth", stem_of(before) + ".state"};
      QCOMPARE(files_in(ckpt), expected);
      const auto run = stored_run(out);
      QCOMPARE(run.status, std::string("failed"));
      QVERIFY2(QString::fromStdString(run.error).contains("File too large"), run.error.c_str());
    }
    const auto done = expnet_test::runProcess(expnet_test::cliPath(), train_args(out, true));
    QVERIFY2(done.exitCode == 0, done.err.constData());
    compareWithReference(out);
    QCOMPARE(stored_run(out).status, std::string("finished"));
    qInfo("5 EFBIG resumes + a resume without limit, then bit-identical: %lld ms", static_cast<long long>(timer.elapsed()));
  }

  // `expnet checkpoint export` past the limit: exit 1 naming the file, the
  // previous output intact, no temporary file; without the limit it writes.
  void fileSizeLimitInExportFailsCleanly() {
    const QString dir = expnet_test::makeTempDir("faults_efbig_export");
    const QString target = dir + "/exported.pth";
    const QByteArray previous = bytes(reference_ + "/checkpoints/" + stem_of(kFinalStep) + ".state");
    {
      QFile f(target);
      QVERIFY(f.open(QIODevice::WriteOnly) && f.write(previous) == previous.size());
    }
    // What an export killed earlier left (its pid is gone): the next export of that file removes it.
    QVERIFY(QFile(target + ".tmp.999999999.1").open(QIODevice::WriteOnly));
    const QStringList args{"checkpoint", "export", "--checkpoint", reference_ + "/final.pth", "--out", target};
    for (const int blocks : {1, 40, 120, 200}) {
      const auto r = run_limited(blocks, args);
      const QString why = QStringLiteral("ulimit -f %1: exit %2: %3").arg(blocks).arg(r.exitCode).arg(QString(r.err));
      QVERIFY2(r.finished && r.exitCode == 1, qPrintable(why));
      QVERIFY2(r.err.contains("File too large") && r.err.contains(target.toUtf8()), qPrintable(why));
      QVERIFY(bytes(target) == previous);
      QCOMPARE(files_in(dir), QStringList{"exported.pth"});
    }
    const auto ok = expnet_test::runProcess(expnet_test::cliPath(), args);
    QVERIFY2(ok.exitCode == 0, ok.err.constData());
    QVERIFY(bytes(target) == bytes(reference_ + "/final.pth"));
    QCOMPARE(files_in(dir), QStringList{"exported.pth"});
  }

  // The run store is the first file a run writes: past the limit it names the
  // store and the reason (SQLite alone says "disk I/O error"), exit 1.
  void fileSizeLimitOnTheRunStoreNamesTheReason() {
    const QString dir = expnet_test::makeTempDir("faults_efbig_store");
    for (const int blocks : {4, 40}) {
      const QString out = dir + QStringLiteral("/out%1").arg(blocks);
      const auto r = run_limited(blocks, train_args(out, false));
      const QString why = QStringLiteral("ulimit -f %1: exit %2: %3").arg(blocks).arg(r.exitCode).arg(QString(r.err));
      QVERIFY2(r.finished && r.exitCode == 1, qPrintable(why));
      QVERIFY2(r.err.contains("runs.sqlite") && r.err.contains("ulimit -f"), qPrintable(why));
    }
  }
};

QTEST_GUILESS_MAIN(TestCheckpointFaults)
#include "test_checkpoint_faults.moc"

// `expnet train` end to end on a very small model and shapes set: a run killed
// with SIGKILL mid-way and resumed ends with bit-identical parameters to an
// uninterrupted run (CPU, 1 thread); the run store and `expnet runs` see it.
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
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

QStringList train_args(const QString& out, bool resume, const QString& config = kConfig) {
  QStringList a{"train", "--config", config, "--out", out, "--threads", "1", "--no-progress", "--json"};
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

  // "precision": "bf16" (autocast: bfloat16 products, float32 master weights): the run
  // trains (finite loss, weights saved in float32, not those of the fp32 run), and a
  // killed run resumed within that precision still ends bit-identical.
  void bf16RunTrainsAndResumesBitIdentical() {
    QFile tiny(kConfig);
    QVERIFY(tiny.open(QIODevice::ReadOnly));
    QJsonObject config = QJsonDocument::fromJson(tiny.readAll()).object();
    config["precision"] = "bf16";
    const QString dir = expnet_test::makeTempDir("train_bf16");
    const QString configFile = dir + "/tiny_bf16.json";
    QFile out(configFile);
    QVERIFY(out.open(QIODevice::WriteOnly) && out.write(QJsonDocument(config).toJson()) > 0);
    out.close();

    const QString whole = dir + "/whole", killed = dir + "/killed", fp32 = dir + "/fp32";
    const auto a = expnet_test::runProcess(expnet_test::cliPath(), train_args(whole, false, configFile));
    QVERIFY2(a.exitCode == 0, a.err.constData());
    QVERIFY2(a.err.contains("training in bf16"), a.err.right(2000).constData());
    QProcess p;
    p.start(expnet_test::cliPath(), train_args(killed, false, configFile));
    QVERIFY(p.waitForStarted());
    QVERIFY2(expnet_test::signal_at_step(p, killed, 4, 20, SIGKILL), "the run ended before it could be killed");
    p.waitForFinished();
    const auto b = expnet_test::runProcess(expnet_test::cliPath(), train_args(killed, true, configFile));
    QVERIFY2(b.exitCode == 0, b.err.constData());
    const auto c = expnet_test::runProcess(expnet_test::cliPath(), train_args(fp32, false));
    QVERIFY2(c.exitCode == 0, c.err.constData());

    const auto x = expnet::read_state_dict((whole + "/final.pth").toStdString());
    const auto y = expnet::read_state_dict((killed + "/final.pth").toStdString());
    QVERIFY(expnet_test::same_entries(x, y));
    for (const auto& [name, tensor] : x)
      if (tensor.is_floating_point()) QVERIFY2(tensor.scalar_type() == torch::kFloat, name.c_str());
    QVERIFY(!expnet_test::same_entries(x, expnet::read_state_dict((fp32 + "/final.pth").toStdString())));
    const auto csv = expnet_test::runProcess(expnet_test::cliPath(),
                                             {"runs", "export", "tiny-resume", "--csv", "--store", whole + "/runs.sqlite"});
    QVERIFY(!csv.out.contains("nan") && !csv.out.contains("inf"));
  }
};

QTEST_GUILESS_MAIN(TestTrainResume)
#include "test_train_resume.moc"

// Data-parallel training (c10d Gloo on loopback): 2 ranks with batch b end with
// the parameters of 1 process with batch 2b; a dead or hung rank makes the
// other fail within the process-group timeout instead of hanging.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QtTest>

#include <torch/torch.h>

#include <csignal>
#include <fstream>

#include "expnet/checkpoint.h"
#include "expnet/launch.h"
#include "support/fixtures.h"

namespace {

const QString kConfig = QStringLiteral(EXPNET_TRAIN_TEST_DIR "/dist_train.json");

// dist_train.json with some stage-0 keys changed, written into `dir`.
QString config_with(const QString& dir, const QJsonObject& stage_changes, int max_batches = -1, int checkpoint_every = -1) {
  QFile in(kConfig);
  in.open(QIODevice::ReadOnly);
  QJsonObject root = QJsonDocument::fromJson(in.readAll()).object();
  QJsonArray stages = root["stages"].toArray();
  QJsonObject stage = stages[0].toObject();
  for (auto it = stage_changes.begin(); it != stage_changes.end(); ++it) stage[it.key()] = it.value();
  if (max_batches > 0) stage["max_batches_per_epoch"] = max_batches;
  stages[0] = stage;
  root["stages"] = stages;
  if (checkpoint_every >= 0) root["checkpoint_every"] = checkpoint_every;
  const QString path = dir + "/config.json";
  QFile out(path);
  out.open(QIODevice::WriteOnly);
  out.write(QJsonDocument(root).toJson());
  return path;
}

// Attention key biases have an exactly zero gradient (softmax is invariant to a
// shift shared by all keys), so their computed gradient is rounding noise that
// RAdam's m/sqrt(v) turns into lr-sized steps: any change of summation order
// (2 ranks, or another thread count) moves them differently. They are left out;
// every other parameter must agree. Swin's fused qkv bias keeps its q and v thirds.
torch::Tensor comparable_part(const std::string& name, const torch::Tensor& t) {
  const auto ends_with = [&](const std::string& suffix) {
    return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (ends_with("mha.Wk.bias")) return {};
  if (ends_with("attn.qkv.bias")) {
    const int64_t c = t.size(0) / 3;
    return torch::cat({t.narrow(0, 0, c), t.narrow(0, 2 * c, c)});
  }
  return t;
}

double max_abs_difference(const QString& a, const QString& b) {
  const auto x = expnet::read_state_dict(a.toStdString());
  const auto y = expnet::read_state_dict(b.toStdString());
  if (x.size() != y.size()) return 1e9;
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (x[i].first != y[i].first || x[i].second.sizes() != y[i].second.sizes()) return 1e9;
    const auto p = comparable_part(x[i].first, x[i].second.to(torch::kDouble));
    const auto q = comparable_part(y[i].first, y[i].second.to(torch::kDouble));
    if (p.defined() && p.numel() > 0) worst = std::max(worst, (p - q).abs().max().item<double>());
  }
  return worst;
}

int latest_step(const QString& out) {
  std::ifstream in((out + "/checkpoints/latest.json").toStdString());
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto pos = text.find("step-");
  return pos == std::string::npos ? -1 : std::stoi(text.substr(pos + 5, 8));
}

void start_rank(QProcess& p, int rank, int port, const QString& config, const QString& out, int timeout_s) {
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert("RANK", QString::number(rank));
  env.insert("LOCAL_RANK", QString::number(rank));
  env.insert("WORLD_SIZE", "2");
  env.insert("MASTER_ADDR", "127.0.0.1");
  env.insert("MASTER_PORT", QString::number(port));
  p.setProcessEnvironment(env);
  p.start(expnet_test::cliPath(), {"train", "--config", config, "--out", out, "--threads", "1", "--no-progress",
                                   "--dist-timeout", QString::number(timeout_s)});
}

}  // namespace

class TestDistributed : public QObject {
  Q_OBJECT

 private slots:
  void twoRanksOfBatchBEqualOneProcessOfBatch2B() {
    const QString two = expnet_test::makeTempDir("dist_two_ranks");
    const auto a = expnet_test::runProcess(expnet_test::cliPath(), {"train", "--config", kConfig, "--out", two, "--nproc", "2",
                                                                    "--no-progress", "--json"});
    QVERIFY2(a.exitCode == 0, a.err.constData());
    QCOMPARE(a.out.count("\"status\":\"finished\""), 1);  // rank 0 alone reports

    const QString one = expnet_test::makeTempDir("dist_one_double_batch");
    const auto b = expnet_test::runProcess(expnet_test::cliPath(),
                                           {"train", "--config", config_with(one, {{"batch", 8}}), "--out", one,
                                            "--threads", "1", "--no-progress", "--json"});
    QVERIFY2(b.exitCode == 0, b.err.constData());

    // Control: one process at batch b trains differently, so the comparison can fail.
    const QString single = expnet_test::makeTempDir("dist_one_single_batch");
    const auto c = expnet_test::runProcess(expnet_test::cliPath(), {"train", "--config", kConfig, "--out", single,
                                                                    "--threads", "1", "--no-progress", "--json"});
    QVERIFY2(c.exitCode == 0, c.err.constData());

    const double same = max_abs_difference(two + "/final.pth", one + "/final.pth");
    const double control = max_abs_difference(two + "/final.pth", single + "/final.pth");
    qInfo("max |2 ranks x b - 1 x 2b| = %g, max |2 ranks x b - 1 x b| = %g", same, control);
    QVERIFY2(same <= 1e-5, qPrintable(QString::number(same)));
    QVERIFY2(control > 1e-4, qPrintable(QString::number(control)));

    // Rank 0 alone wrote the run store: 9 optimizer steps, one validation.
    const auto csv = expnet_test::runProcess(expnet_test::cliPath(),
                                             {"runs", "export", "tiny-dist", "--csv", "--store", two + "/runs.sqlite"});
    QVERIFY2(csv.exitCode == 0, csv.err.constData());
    QCOMPARE(csv.out.count("\nstep,"), 9);
    QCOMPARE(csv.out.count("\nvalidation,"), 1);
  }

  void deadRankMakesTheOtherFail() { failsWhenPeer(SIGKILL, 20, 15000); }

  void hungRankMakesTheOtherFailAfterTheTimeout() { failsWhenPeer(SIGSTOP, 5, 5000 + 20000); }

 private:
  // Rank 1 is killed (or stopped) mid-training; rank 0 must exit with an error
  // within `limit_ms` (the timeout plus slack for a loaded machine).
  void failsWhenPeer(int sig, int timeout_s, qint64 limit_ms) {
    const QString out = expnet_test::makeTempDir(sig == SIGKILL ? "dist_dead_rank" : "dist_hung_rank");
    const QString config = config_with(out, {}, 100000, 1);
    const int port = expnet::free_loopback_port();
    QProcess rank0, rank1;
    start_rank(rank0, 0, port, config, out, timeout_s);
    start_rank(rank1, 1, port, config, out, timeout_s);
    QVERIFY(rank0.waitForStarted() && rank1.waitForStarted());
    QElapsedTimer timer;
    timer.start();
    while (latest_step(out) < 2 && timer.elapsed() < 120000 && rank0.state() == QProcess::Running) QTest::qWait(20);
    QVERIFY2(latest_step(out) >= 2, rank0.readAllStandardError().constData());
    ::kill(static_cast<pid_t>(rank1.processId()), sig);
    timer.restart();
    const bool ended = rank0.waitForFinished(static_cast<int>(limit_ms));
    const qint64 took = timer.elapsed();
    ::kill(static_cast<pid_t>(rank1.processId()), SIGKILL);
    rank1.waitForFinished();
    if (!ended) {
      rank0.kill();
      rank0.waitForFinished();
    }
    const QByteArray err = rank0.readAllStandardError();
    qInfo("rank 0 ended after %lld ms: %s", static_cast<long long>(took), err.right(400).constData());
    QVERIFY2(ended, "rank 0 did not end after its peer went away");
    QVERIFY(rank0.exitStatus() == QProcess::NormalExit && rank0.exitCode() != 0);
    QVERIFY2(err.contains("distributed rank 0"), err.right(600).constData());
    if (sig == SIGSTOP) QVERIFY2(took >= (timeout_s - 1) * 1000, "failed before the timeout: the peer was only silent");
  }
};

QTEST_GUILESS_MAIN(TestDistributed)
#include "test_distributed.moc"

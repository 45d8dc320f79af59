// Distributed training: a dead or hung rank makes the other fail within the
// process-group timeout instead of hanging. The dead rank's run gets its timeout
// from --dist-timeout, the hung rank's from the config's "dist_timeout".
#include <torch/torch.h>

#include <csignal>

#include "dist_test_util.h"
#include "expnet/train/launch.h"

class TestDistributedFailure : public QObject {
  Q_OBJECT

 private slots:
  void deadRankMakesTheOtherFail() { failsWhenPeer(SIGKILL, 20, 15000); }

  void hungRankMakesTheOtherFailAfterTheTimeout() { failsWhenPeer(SIGSTOP, 5, 5000 + 20000); }

  void badTimeoutsAreRefused() {
    const QString out = expnet_test::makeTempDir("dist_bad_timeout");
    const QString config = config_with(out, {}, -1, -1, {{"dist_timeout", 0}});
    const auto zero = expnet_test::runProcess(expnet_test::cliPath(), {"train", "--config", config, "--out", out + "/run"});
    QVERIFY(zero.exitCode != 0);
    QVERIFY2(zero.err.contains("dist_timeout must be more than 0 and at most 604800 seconds (a week), not 0"), zero.err.constData());
    const auto flag = expnet_test::runProcess(expnet_test::cliPath(), {"train", "--config", kConfig, "--out", out + "/run",
                                                                      "--dist-timeout", "-3"});
    QVERIFY(flag.exitCode != 0);
    QVERIFY2(flag.err.contains("--dist-timeout"), flag.err.constData());
  }

 private:
  // Rank 1 is killed (or stopped) mid-training; rank 0 must exit with an error
  // within `limit_ms` (the timeout plus slack for a loaded machine).
  void failsWhenPeer(int sig, int timeout_s, qint64 limit_ms) {
    const QString out = expnet_test::makeTempDir(sig == SIGKILL ? "dist_dead_rank" : "dist_hung_rank");
    // SIGSTOP: the timeout from the config alone (no --dist-timeout); SIGKILL: from the option.
    const QString config = config_with(out, {}, 100000, 1, sig == SIGSTOP ? QJsonObject{{"dist_timeout", timeout_s}} : QJsonObject{});
    const int port = expnet::free_loopback_port();
    QProcess rank0, rank1;
    start_rank(rank0, 0, port, config, out, sig == SIGSTOP ? 0 : timeout_s);
    start_rank(rank1, 1, port, config, out, sig == SIGSTOP ? 0 : timeout_s);
    QVERIFY(rank0.waitForStarted() && rank1.waitForStarted());
    expnet_test::wait_for_step(rank0, out, 2, 20);
    QVERIFY2(latest_step(out) >= 2, rank0.readAllStandardError().constData());
    ::kill(static_cast<pid_t>(rank1.processId()), sig);
    QElapsedTimer timer;
    timer.start();
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
    QVERIFY2(err.contains(QString("did not answer within %1 s").arg(timeout_s).toUtf8()), err.right(600).constData());
    if (sig == SIGSTOP) QVERIFY2(took >= (timeout_s - 1) * 1000, "failed before the timeout: the peer was only silent");
  }
};

QTEST_GUILESS_MAIN(TestDistributedFailure)
#include "test_distributed_failure.moc"

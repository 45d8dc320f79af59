// Data-parallel training (c10d Gloo on loopback): 2 ranks with batch b end with
// the parameters of 1 process with batch 2b; an interrupted 2-rank run resumes
// exactly; SLURM's variables (srun) make ranks too; ranks of another expnet version
// are refused. Failure handling:
// test_distributed_failure.cpp.
#include <torch/torch.h>

#include <csignal>
#include <string>
#include <thread>
#include <vector>

#include "dist_test_util.h"
#include "expnet/train/distributed.h"
#include "train/rank_agreement.h"

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

  // SIGINT to the launcher: every rank agrees to stop after the same step, rank 0
  // checkpoints, exit 130; --resume --nproc 2 then ends bit-identical to an
  // uninterrupted 2-rank run (per-rank RNG streams are a function of the step).
  void interruptedRunResumesExactly() {
    const QString whole = expnet_test::makeTempDir("dist_whole");
    const QString config = config_with(whole, {{"dropout", 0.2}}, 24, 1);
    const QStringList common{"--nproc", "2", "--no-progress", "--json", "--config", config};
    const auto a = expnet_test::runProcess(expnet_test::cliPath(), QStringList{"train", "--out", whole} + common);
    QVERIFY2(a.exitCode == 0, a.err.constData());

    const QString cut = expnet_test::makeTempDir("dist_interrupted");
    QProcess p;
    p.start(expnet_test::cliPath(), QStringList{"train", "--out", cut} + common);
    QVERIFY(p.waitForStarted());
    QVERIFY2(expnet_test::signal_at_step(p, cut, 4, 10, SIGINT), "the run ended before it could be interrupted");
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 130);
    const int stopped_at = latest_step(cut);
    QVERIFY2(stopped_at >= 4 && stopped_at < 24, qPrintable(QString::number(stopped_at)));

    const auto b = expnet_test::runProcess(expnet_test::cliPath(), QStringList{"train", "--out", cut, "--resume"} + common);
    QVERIFY2(b.exitCode == 0, b.err.constData());
    const auto x = expnet::read_state_dict((whole + "/final.pth").toStdString());
    const auto y = expnet::read_state_dict((cut + "/final.pth").toStdString());
    QCOMPARE(x.size(), y.size());
    for (size_t i = 0; i < x.size(); ++i) QVERIFY2(torch::equal(x[i].second, y[i].second), x[i].first.c_str());
  }

  // Ranks of another expnet version (as two hosts with different installs would be)
  // are refused on every rank before the first step, naming the field: two real
  // c10d ranks (threads of this process, Gloo on loopback) whose fingerprints differ
  // only in the version.
  void ranksOfAnotherVersionAreRefused() {
    const int port = 29900 + QCoreApplication::applicationPid() % 90;
    std::string errors[2];
    std::vector<std::thread> ranks;
    for (int r = 0; r < 2; ++r)
      ranks.emplace_back([r, port, &errors] {
        expnet::DistributedEnv env;
        env.rank = r;
        env.world_size = 2;
        env.master_port = port;
        expnet::ProcessGroup group(env, std::chrono::seconds(30), "cpu");
        expnet::RankFingerprint mine{r == 0 ? EXPNET_VERSION : "0.0.9", "{}", "data", "words", "fresh"};
        try {
          expnet::check_ranks_agree(group, mine);
        } catch (const std::exception& e) {
          errors[r] = e.what();
        }
      });
    for (auto& rank : ranks) rank.join();
    for (const auto& error : errors)
      QVERIFY2(error.find("rank 1 has another expnet version than rank 0") != std::string::npos, error.c_str());
  }

  // srun sets SLURM's variables, not torchrun's: two ranks from SLURM_NTASKS,
  // SLURM_PROCID and the first host of SLURM_JOB_NODELIST train together; a node
  // range without scontrol to expand it is refused, saying what to set.
  void slurmVariablesMakeRanks() {
    const QString out = expnet_test::makeTempDir("dist_slurm");
    QProcess ranks[2];
    for (int r = 0; r < 2; ++r) {
      QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
      for (const char* name : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR"}) env.remove(name);
      env.insert("SLURM_NTASKS", "2");
      env.insert("SLURM_PROCID", QString::number(r));
      env.insert("SLURM_LOCALID", QString::number(r));
      env.insert("SLURM_JOB_NODELIST", "127.0.0.1,127.0.0.2");
      env.insert("MASTER_PORT", QString::number(29700 + QCoreApplication::applicationPid() % 200));
      ranks[r].setProcessEnvironment(env);
      ranks[r].start(expnet_test::cliPath(), {"train", "--config", kConfig, "--out", out, "--threads", "1", "--no-progress",
                                              "--dist-timeout", "60"});
    }
    for (QProcess& rank : ranks) QVERIFY(rank.waitForFinished(120000));
    const QString err0 = QString::fromUtf8(ranks[0].readAllStandardError());
    QVERIFY2(ranks[0].exitCode() == 0 && ranks[1].exitCode() == 0, qPrintable(err0 + ranks[1].readAllStandardError()));
    QVERIFY2(err0.contains("distributed: 2 ranks (Gloo)"), qPrintable(err0));
    QVERIFY(QFileInfo::exists(out + "/final.pth"));

    QProcess range;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.remove("WORLD_SIZE");
    env.remove("MASTER_ADDR");
    env.insert("SLURM_NTASKS", "2");
    env.insert("SLURM_PROCID", "1");
    env.insert("SLURM_JOB_NODELIST", "gpu[01-02]");
    env.insert("PATH", "/nonexistent");  // no scontrol
    range.setProcessEnvironment(env);
    range.start(expnet_test::cliPath(), {"train", "--config", kConfig, "--out", expnet_test::makeTempDir("dist_slurm_range")});
    QVERIFY(range.waitForFinished(60000));
    const QString why = QString::fromUtf8(range.readAllStandardError());
    QCOMPARE(range.exitCode(), 1);
    QVERIFY2(why.contains("SLURM_JOB_NODELIST 'gpu[01-02]' is a range and `scontrol` is not on the PATH") &&
                 why.contains("set MASTER_ADDR"),
             qPrintable(why));
  }
};

QTEST_GUILESS_MAIN(TestDistributed)
#include "test_distributed.moc"

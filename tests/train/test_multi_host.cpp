// Training across two hosts for real on one machine (docs/distributed.md): the
// second host is a network namespace joined to this one by a veth pair
// (tests/support/test_host.h). Rank 0 runs here on 10.213.N.1, rank 1 inside
// the namespace on 10.213.N.2, so c10d's TCPStore and Gloo cross the link; both
// see one run folder (a shared file system). Two hosts x 1 rank end
// bit-identical to `--nproc 2` on one host; hosts that disagree are refused
// before the first step, naming the difference. Needs root; CI requires it
// (EXPNET_REQUIRE_NETNS=1).
#include <torch/torch.h>  // before Qt's `slots` macro

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <memory>

#include <QDir>
#include <QElapsedTimer>
#include <QStandardPaths>

#include "dist_test_util.h"
#include "support/test_host.h"

namespace {

// A TCP port nobody listens on now (the kernel's pick for port 0).
int freePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  socklen_t size = sizeof address;
  ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size);
  ::close(fd);
  return ntohs(address.sin_port);
}

// A child process of `pid` (torchrun's worker: expnet, which re-executes itself as /proc/self/exe), 0 when none.
qint64 childOf(qint64 pid) {
  for (const QString& entry : QDir("/proc").entryList(QDir::Dirs)) {
    QFile stat("/proc/" + entry + "/stat");
    if (entry.toLongLong() <= 0 || !stat.open(QIODevice::ReadOnly)) continue;
    const QByteArray text = stat.readAll();
    if (text.mid(text.lastIndexOf(')') + 2).split(' ').value(1).toLongLong() == pid) return entry.toLongLong();
  }
  return 0;
}

// Both run folders' final.pth hold the same names and bit-identical tensors.
bool sameFinal(const QString& a, const QString& b) {
  return expnet_test::same_entries(expnet::read_state_dict((a + "/final.pth").toStdString()),
                                   expnet::read_state_dict((b + "/final.pth").toStdString()));
}

}  // namespace

class TestMultiHost : public QObject {
  Q_OBJECT
  std::unique_ptr<expnet_test::TestHost> host_;
  QString whole_, longConfig_;  // the uninterrupted 2-rank run of the long config, and that config

  // Rank `rank` of 2 (rank 1 inside the other host's namespace), rank 0's address as MASTER_ADDR.
  void startRank(QProcess& p, int rank, int port, const QStringList& args) {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("RANK", QString::number(rank));
    env.insert("LOCAL_RANK", "0");
    env.insert("WORLD_SIZE", "2");
    env.insert("MASTER_ADDR", host_->rootAddress());
    env.insert("MASTER_PORT", QString::number(port));
    p.setProcessEnvironment(env);
    QStringList train = QStringList{"train", "--threads", "1", "--no-progress"} + args;
    if (!args.contains("--dist-timeout")) train << "--dist-timeout" << "60";
    if (rank == 0)
      p.start(expnet_test::cliPath(), train);
    else
      p.start("ip", QStringList{"netns", "exec", host_->namespaceName(), expnet_test::cliPath()} + train);
    p.waitForStarted();
  }

  struct Outcome {
    int exit0 = -1, exit1 = -1;
    QString err0, err1;
  };
  Outcome runBoth(const QStringList& args0, const QStringList& args1) {
    QProcess zero, one;
    const int port = freePort();
    startRank(zero, 0, port, args0);
    startRank(one, 1, port, args1);
    zero.waitForFinished(150000);
    one.waitForFinished(30000);
    Outcome o{zero.exitCode(), one.exitCode(), QString::fromUtf8(zero.readAllStandardError()),
              QString::fromUtf8(one.readAllStandardError())};
    for (QProcess* p : {&zero, &one})
      if (p->state() != QProcess::NotRunning) p->kill(), p->waitForFinished(5000), o.exit0 = o.exit1 = -2;
    return o;
  }

 private slots:
  void initTestCase() {
    EXPNET_START_TEST_HOST(host_, "node1");
    // The uninterrupted run that the torchrun restart and the cut link must end equal to.
    whole_ = expnet_test::makeTempDir("multi_host_whole");
    longConfig_ = config_with(whole_, {{"dropout", 0.2}, {"epochs", 12}}, -1, 1);
    const auto reference = expnet_test::runProcess(
        expnet_test::cliPath(), {"train", "--config", longConfig_, "--out", whole_, "--nproc", "2", "--no-progress"});
    QVERIFY2(reference.exitCode == 0, reference.err.constData());
  }

  void twoHostsTrainAsTwoLocalRanks() {
    const QString shared = expnet_test::makeTempDir("multi_host_two");
    const auto both = runBoth({"--config", kConfig, "--out", shared}, {"--config", kConfig, "--out", shared});
    QVERIFY2(both.exit0 == 0 && both.exit1 == 0, qPrintable(both.err0 + "\n--- rank 1:\n" + both.err1));
    QVERIFY2(both.err0.contains("distributed: 2 ranks (Gloo)"), qPrintable(both.err0));

    const QString local = expnet_test::makeTempDir("multi_host_local");
    const auto a = expnet_test::runProcess(expnet_test::cliPath(), {"train", "--config", kConfig, "--out", local, "--nproc", "2",
                                                                    "--no-progress"});
    QVERIFY2(a.exitCode == 0, a.err.constData());
    QVERIFY2(sameFinal(shared, local), "the final checkpoints differ");
  }

  // Another config on the second host: both ranks refuse before the first step, naming it.
  void hostsThatDisagreeAreRefused() {
    const QString shared = expnet_test::makeTempDir("multi_host_disagree");
    const QString other = config_with(shared, {{"lr", 2e-3}});
    const auto both = runBoth({"--config", kConfig, "--out", shared}, {"--config", other, "--out", shared});
    QVERIFY(both.exit0 != 0 && both.exit1 != 0);
    for (const QString& err : {both.err0, both.err1})
      QVERIFY2(err.contains("the ranks disagree before the first step: rank 1 has another training config than rank 0"),
               qPrintable(err));
    QVERIFY2(!QFileInfo::exists(shared + "/checkpoints/latest.json"), "a step was taken");

    // The same config, but the second host's copy of the data has one caption with a word more:
    // the same sizes, another dataset and another vocabulary.
    const QString mine = expnet_test::makeTempDir("multi_host_data0"), theirs = expnet_test::makeTempDir("multi_host_data1");
    const auto made = expnet_test::runProcess(expnet_test::cliPath(), {"dataset", "make-shapes", "--out", mine + "/shapes",
                                                                      "--images", "120", "--seed", "99"});
    QVERIFY2(made.exitCode == 0, made.err.constData());
    QVERIFY(expnet_test::runProcess("cp", {"-r", mine + "/shapes", theirs + "/shapes"}).exitCode == 0);
    const auto edited = expnet_test::runProcess(
        "/usr/bin/python3", {"-c", "import json,sys; p=sys.argv[1]; d=json.load(open(p)); s=d['images'][0]['sentences'][0]; "
                                   "s['raw']+=' zebra'; s['tokens'].append('zebra'); json.dump(d, open(p,'w'))",
                             theirs + "/shapes/dataset_coco.json"});
    QVERIFY2(edited.exitCode == 0, edited.err.constData());
    const auto data = runBoth({"--config", kConfig, "--out", mine, "--dist-timeout", "20"},
                              {"--config", kConfig, "--out", theirs, "--dist-timeout", "20"});
    QVERIFY(data.exit0 != 0 && data.exit1 != 0);
    QVERIFY2(data.err0.contains("rank 1 has another dataset than rank 0") &&
                 data.err0.contains("rank 1 has another vocabulary than rank 0"),
             qPrintable(data.err0.right(2000)));
    QVERIFY2(!QFileInfo::exists(mine + "/checkpoints/latest.json"), "a step was taken");
  }

  // torchrun (Debian's, static rendezvous: its agent on node 0 hosts the store)
  // on both hosts with --max_restarts 2; the worker of the second host killed
  // with SIGKILL mid-run: the group restarts, `--resume auto` continues from the
  // last checkpoint, and the final checkpoint equals the uninterrupted run's.
  void torchrunRestartsAfterAKilledRank() {
    const QString torchrun = QStandardPaths::findExecutable("torchrun", {"/usr/bin"});
    if (torchrun.isEmpty()) {
      if (expnet_test::TestHost::required()) QFAIL("EXPNET_TEST_HOSTS_UNAVAILABLE: /usr/bin/torchrun (python3-torch) is missing");
      QSKIP("EXPNET_TEST_HOSTS_UNAVAILABLE: /usr/bin/torchrun (python3-torch) is missing");
    }
    const QString whole = whole_, config = longConfig_;
    const QString shared = expnet_test::makeTempDir("multi_host_torchrun");
    const int port = freePort();
    struct Nodes {  // ends what a failed check leaves running (torchrun ends its workers)
      QProcess p[2];
      ~Nodes() {
        for (QProcess& node : p)
          if (node.state() != QProcess::NotRunning) node.terminate(), node.waitForFinished(20000), node.kill(), node.waitForFinished(5000);
      }
    } running;
    QProcess* nodes = running.p;
    for (int node = 0; node < 2; ++node) {
      // -r/-t 0:1 and --log_dir: Debian's torchrun 1.13 crashes on its default -r 0 under Python 3.11.
      const QStringList args{"--no_python", "--nnodes", "2", "--nproc_per_node", "1", "--node_rank", QString::number(node),
                             "--master_addr", host_->rootAddress(), "--master_port", QString::number(port),
                             "--max_restarts", "2", "-r", "0:1", "-t", "0:1", "--log_dir", shared + "/torchrun-" + QString::number(node),
                             expnet_test::cliPath(), "train", "--config", config, "--out", shared, "--resume", "auto",
                             "--threads", "1", "--no-progress", "--dist-timeout", "20"};
      if (node == 0)
        nodes[node].start(torchrun, args);
      else
        nodes[node].start("ip", QStringList{"netns", "exec", host_->namespaceName(), torchrun} + args);
      QVERIFY(nodes[node].waitForStarted());
    }
    expnet_test::wait_for_step(nodes[0], shared, 6, 20);
    qint64 worker = 0;
    for (int tries = 0; tries < 50 && !worker; ++tries, QTest::qWait(20)) worker = childOf(nodes[1].processId());
    QVERIFY2(worker > 0 && latest_step(shared) < 100,
             qPrintable(QString("the run ended before its worker could be killed (step %1):\n").arg(latest_step(shared)) +
                        QString::fromUtf8(nodes[0].readAllStandardError() + "\n--- node 1:\n" + nodes[1].readAllStandardError()).right(5000)));
    qInfo("killing the second host's worker (pid %lld) at checkpoint step %d", worker, latest_step(shared));
    ::kill(static_cast<pid_t>(worker), SIGKILL);
    for (int node = 0; node < 2; ++node) QVERIFY2(nodes[node].waitForFinished(170000), "torchrun did not end");
    const QString logs = QString::fromUtf8(nodes[0].readAllStandardError() + "\n--- node 1:\n" + nodes[1].readAllStandardError());
    QVERIFY2(nodes[0].exitCode() == 0 && nodes[1].exitCode() == 0, qPrintable(logs.right(6000)));
    QVERIFY2(logs.contains("resumed from step-"), qPrintable(logs.right(6000)));
    QVERIFY2(sameFinal(whole, shared), "the final checkpoints differ");
  }

  // The link cut for longer than --dist-timeout without torchrun: both ranks end
  // within the timeout plus 30 s, the run is "interrupted" (not failed, not
  // running); with the link back, `--resume auto` finishes it bit-identical.
  void aCutLinkInterruptsThenResumeAutoFinishes() {
    const QString whole = whole_, config = longConfig_;
    const QString shared = expnet_test::makeTempDir("multi_host_cut");
    const QStringList args{"--config", config, "--out", shared, "--resume", "auto", "--dist-timeout", "10"};
    QProcess zero, one;
    const int port = freePort();
    startRank(zero, 0, port, args);
    startRank(one, 1, port, args);
    expnet_test::wait_for_step(zero, shared, 6, 20);
    const auto stop = [&] {  // what a failed check leaves running
      for (QProcess* p : {&zero, &one}) p->kill(), p->waitForFinished(5000);
    };
    if (zero.state() != QProcess::Running || latest_step(shared) >= 100) stop();
    QVERIFY2(zero.state() == QProcess::Running, "the run ended before the cut");
    QElapsedTimer clock;
    clock.start();
    QVERIFY(host_->cutLink());
    const bool ended = zero.waitForFinished(40000) && one.waitForFinished(40000 - int(clock.elapsed()));
    const qint64 endedMs = clock.elapsed();
    QVERIFY(host_->restoreLink());
    const QString err0 = QString::fromUtf8(zero.readAllStandardError()), err1 = QString::fromUtf8(one.readAllStandardError());
    if (!ended) stop();
    QVERIFY2(ended, "the ranks did not end within the timeout plus 30 s of the cut");
    qInfo("both ranks ended %lld ms after the cut (--dist-timeout 10)", endedMs);
    QVERIFY(zero.exitCode() != 0 && one.exitCode() != 0);
    QVERIFY2(err0.contains("another rank died, its host was lost or did not answer within 10 s"), qPrintable(err0.right(3000)));
    const auto status = expnet_test::runProcess(expnet_test::cliPath(), {"runs", "show", "tiny-dist", "--store", shared + "/runs.sqlite", "--json"});
    QVERIFY2(status.out.contains("\"status\":\"interrupted\""), status.out.left(400).constData());

    // Rank 1 given a folder of its own instead of the shared one: first without the data, then
    // with a copy of it but none of the checkpoints; both refused, saying that --out must be shared.
    const QString apart = expnet_test::makeTempDir("multi_host_apart");
    QStringList argsApart = args;
    argsApart[argsApart.indexOf("--out") + 1] = apart;
    const auto noData = runBoth(args, argsApart);
    QVERIFY(noData.exit0 != 0 && noData.exit1 != 0);
    QVERIFY2(noData.err1.contains("every rank must see rank 0's --out"), qPrintable(noData.err1.right(2000)));
    QVERIFY(expnet_test::runProcess("cp", {"-r", shared + "/shapes", apart + "/shapes"}).exitCode == 0);
    const auto noCheckpoint = runBoth(args, argsApart);
    QVERIFY(noCheckpoint.exit0 != 0 && noCheckpoint.exit1 != 0);
    for (const QString& err : {noCheckpoint.err0, noCheckpoint.err1})
      QVERIFY2(err.contains("rank 1 has another checkpoint to resume from than rank 0") &&
                   err.contains("--out must be one folder on a file system every host shares"),
               qPrintable(err.right(2000)));

    const auto again = runBoth(args, args);
    QVERIFY2(again.exit0 == 0 && again.exit1 == 0, qPrintable(again.err0.right(3000) + "\n--- rank 1:\n" + again.err1.right(3000)));
    QVERIFY2(again.err0.contains("resumed from step-"), qPrintable(again.err0.right(3000)));
    QVERIFY2(sameFinal(whole, shared), "the final checkpoints differ");
  }

  void cleanupTestCase() {
    if (host_) host_->stop();
  }
};

QTEST_GUILESS_MAIN(TestMultiHost)
#include "test_multi_host.moc"

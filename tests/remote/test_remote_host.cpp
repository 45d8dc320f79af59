// Remote hosts for real on one machine (docs/remote.md): a host is a network
// namespace running Debian's sshd (tests/support/test_host.h), its `expnet` this
// build's binary. Through the CLI: hosts add/check, a run started there with
// `train --host` under hostile names (nothing is ever run by a shell), followed
// with `runs follow --host` across a cut link and continued from the last cursor
// (the rows equal the host's store, none lost, none twice), stopped from here and
// resumed there, its checkpoint fetched home (resumable, SHA-256 checked) and
// captioning as it does there, a dataset evaluated there and kept here (`eval --host`), and a changed host key refused with ssh's own words. Needs root; CI requires it (EXPNET_REQUIRE_NETNS=1).
#include <QDirIterator>
#include <QElapsedTimer>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QtTest>

#include <memory>

#include "expnet/metrics/sample_evaluation.h"
#include "expnet/train/run_store.h"
#include "support/fixtures.h"
#include "support/test_host.h"

namespace {

const QString kHostile = QStringLiteral("out; $(touch PWNED) 'q' \"x\" -rf");

QString recipe(const QString& dir, int epochs) {
  const QString path = dir + "/recipe.json";
  QFile file(path);
  if (!file.open(QIODevice::WriteOnly)) return {};
  file.write(expnet_test::tinyShapesRecipe(QStringLiteral("remote; $(touch PWNED) 'q'"), 11, epochs));
  return path;
}

// Lines of a running `expnet runs follow --host` as they come.
struct Follow {
  QProcess process;
  ~Follow() {
    if (process.state() != QProcess::NotRunning && !process.waitForFinished(5000)) process.kill();
    process.waitForFinished(1000);
  }
  QList<QJsonObject> lines;
  QByteArray pending;
  void start(const QStringList& args) {
    process.start(expnet_test::cliPath(), args);
    process.waitForStarted();
  }
  void read() {
    pending += process.readAllStandardOutput();
    for (int end; (end = pending.indexOf('\n')) >= 0; pending.remove(0, end + 1))
      lines << QJsonDocument::fromJson(pending.left(end)).object();
  }
  int count(const QString& type) const {
    int n = 0;
    for (const auto& line : lines) n += line["type"].toString() == type;
    return n;
  }
  // Waits until `done` or `ms` pass; false on timeout.
  template <typename Done>
  bool waitUntil(Done done, int ms) {
    QElapsedTimer clock;
    clock.start();
    while (!done() && clock.elapsed() < ms) {
      process.waitForReadyRead(200);
      read();
      if (process.state() == QProcess::NotRunning) read();
    }
    return done();
  }
};

using expnet_test::pwnedFiles;

}  // namespace

class TestRemoteHost : public QObject {
  Q_OBJECT
  std::unique_ptr<expnet_test::TestHost> host_;
  QString config_;

  // runs fetch: resumed from a partial copy, refused (and removed) when its
  // SHA-256 differs, and the checkpoint brought home captions here as it does there.
  void bringTheCheckpointHome(const QString& store, const QString& there) {
    const QString name = QStringLiteral("remote; $(touch PWNED) 'q'");
    const QString home = expnet_test::makeTempDir("remote_home") + "/final.pth";
    QFile original(there);
    QVERIFY(original.open(QIODevice::ReadOnly));
    const QByteArray bytes = original.readAll();
    const auto writePartial = [&](const QByteArray& content) {
      QFile partial(home + ".partial");
      QVERIFY(partial.open(QIODevice::WriteOnly));
      partial.write(content);
    };
    writePartial(bytes.left(bytes.size() / 2));
    const QStringList fetchArgs{"runs", "fetch", name, "--host", "gpu", "--store", store, "--to", home};
    const auto resumed = cli(fetchArgs);
    QVERIFY2(resumed.exitCode == 0, resumed.err.constData());
    QVERIFY2(resumed.err.contains(QString("resuming at %1 of %2 bytes").arg(bytes.size() / 2).arg(bytes.size()).toUtf8()),
             resumed.err.constData());
    QFile copy(home);
    QVERIFY(copy.open(QIODevice::ReadOnly));
    QVERIFY(copy.readAll() == bytes);
    copy.close();
    QFile::remove(home);
    writePartial(QByteArray(bytes.size() / 2, 'x'));  // not the file's first half
    const auto damaged = cli(fetchArgs);
    QCOMPARE(damaged.exitCode, 1);
    QVERIFY2(damaged.err.contains("does not match its SHA-256 there"), damaged.err.constData());
    QVERIFY(!QFileInfo::exists(home + ".partial") && !QFileInfo::exists(home));
    QVERIFY2(cli(fetchArgs).exitCode == 0, "a second fetch after a damaged one");
    // Captioned here with the copy, and there (over ssh) with the original: the same caption.
    QString here, remote;
    const QString why = expnet_test::captionHereAndThere(*host_, home, there, &here, &remote);
    QVERIFY2(why.isEmpty(), qPrintable(why));
    QCOMPARE(here, remote);
  }

  expnet_test::ProcessResult cli(const QStringList& args, int timeoutMs = 60000) {
    return expnet_test::runProcess(expnet_test::cliPath(), args, timeoutMs);
  }

 private slots:
  void initTestCase() {
    EXPNET_START_TEST_HOST(host_, "gpu-test");
    config_ = expnet_test::makeTempDir("remote_config");
    qputenv("EXPNET_HOME", (config_ + "/home").toUtf8());  // hosts.json, the run registry: the test's own
    const auto added = cli({"hosts", "add", "gpu", "--destination", host_->alias(), "--program", expnet_test::cliPath(),
                            "--work-dir", host_->workDir(), "--ssh-option=-F", "--ssh-option=" + host_->sshConfig()});
    QVERIFY2(added.exitCode == 0, added.err.constData());
  }

  void checkReportsTheEngineThere() {
    const auto check = cli({"hosts", "check", "gpu", "--json"});
    QVERIFY2(check.exitCode == 0, check.err.constData());
    const auto report = QJsonDocument::fromJson(check.out).object();
    QCOMPARE(report["doctor"].toObject()["version"].toString(), QStringLiteral(EXPNET_VERSION));
    QVERIFY(report["doctor"].toObject()["free_bytes"].toDouble() > 0);
    // No expnet at that path there: one sentence naming the host and the fix.
    QVERIFY(cli({"hosts", "add", "nowhere", "--destination", host_->alias(), "--program", "/opt/none/expnet",
                 "--ssh-option=-F", "--ssh-option=" + host_->sshConfig()})
                .exitCode == 0);
    const auto missing = cli({"hosts", "check", "nowhere"});
    QCOMPARE(missing.exitCode, 1);
    QVERIFY2(missing.err.contains("host 'nowhere'") && missing.err.contains("has no `/opt/none/expnet`"),
             missing.err.constData());
    // A store there of a newer schema (a newer expnet wrote it): one line naming the host and the schema.
    QVERIFY(QDir().mkpath(host_->workDir() + "/newer"));
    { expnet::RunStore(QString(host_->workDir() + "/newer/runs.sqlite").toStdString()).create_run("n", "{}", "/tmp/n"); }
    const auto bump = expnet_test::runProcess("/usr/bin/python3", {"-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); "
                                                                         "c.execute('PRAGMA user_version = 9'); c.commit()",
                                                                   host_->workDir() + "/newer/runs.sqlite"});
    QCOMPARE(bump.exitCode, 0);
    const auto newer = cli({"runs", "follow", "--host", "gpu", "--store", "newer/runs.sqlite"});
    QCOMPARE(newer.exitCode, 1);
    QVERIFY2(newer.err.contains("host 'gpu'") && newer.err.contains("is of schema 9, newer than this expnet"),
             newer.err.constData());
    // A destination that would be an option of ssh's is refused before ssh runs.
    const auto option = cli({"hosts", "check", "--", "-oProxyCommand=touch PWNED"});
    QCOMPARE(option.exitCode, 1);
    QVERIFY2(option.err.contains("not starting with '-'"), option.err.constData());
  }

  // A run started there under hostile names, followed across a cut link.
  void aRunThereIsFollowedAcrossACutLink() {
    const QString out = "runs/" + kHostile;
    const auto started = cli({"train", "--host", "gpu", "--config", recipe(config_, 60), "--out", out, "--threads", "1", "--json"});
    QVERIFY2(started.exitCode == 0, started.err.constData());
    const auto launch = QJsonDocument::fromJson(started.out).object();
    QCOMPARE(launch["status"].toString(), QStringLiteral("started"));
    const QString store = out + "/runs.sqlite";
    QVERIFY2(QFileInfo::exists(host_->workDir() + "/" + store), "the run's store is not in its folder, under its hostile name");

    Follow first;
    first.start({"runs", "follow", "--host", "gpu", "--store", store});
    QVERIFY2(first.waitUntil([&] { return first.count("step") >= 3; }, 30000), first.process.readAllStandardError().constData());
    // A mirror follows it too, across the same cut, reconnecting by itself.
    const QString mirrorPath = config_ + "/mirror.sqlite";
    QProcess mirror, second;
    mirror.start(expnet_test::cliPath(), {"runs", "mirror", "--host", "gpu", "--store", store, "--mirror", mirrorPath});
    QVERIFY(mirror.waitForStarted());
    // A second studio of the same user follows the same run into the same mirror file.
    second.start(expnet_test::cliPath(), {"runs", "mirror", "--host", "gpu", "--store", store, "--mirror", mirrorPath});
    QVERIFY(second.waitForStarted());
    QElapsedTimer cut;
    cut.start();
    QVERIFY(host_->cutLink());
    // ssh's keepalives give up on the dead link: the follow ends, saying so.
    QVERIFY2(first.waitUntil([&] { return first.process.state() == QProcess::NotRunning; }, 30000),
             "the follow did not notice the cut link within 30 s");
    QVERIFY(first.process.exitCode() != 0);
    const QString why = QString::fromUtf8(first.process.readAllStandardError());
    QVERIFY2(why.contains("host 'gpu'"), qPrintable(why));
    qInfo("the follow noticed the cut after %lld ms", static_cast<long long>(cut.elapsed()));
    while (cut.elapsed() < 20000) QTest::qWait(200);  // a 20 s cut
    QVERIFY(host_->restoreLink());

    Follow rest;
    rest.start({"runs", "follow", "--host", "gpu", "--store", store, "--since", first.lines.last()["cursor"].toString()});
    QVERIFY2(rest.waitUntil([&] { return rest.count("end") == 1; }, 120000), rest.process.readAllStandardError().constData());
    QVERIFY(rest.process.waitForFinished(10000));
    QCOMPARE(rest.process.exitCode(), 0);

    QList<int> steps;
    QString status;
    for (const auto* follow : {&first, &rest})
      for (const auto& line : follow->lines) {
        if (line["type"] == "step") steps << line["step"].toInt();
        if (line["type"] == "run") status = line["status"].toString();
      }
    QCOMPARE(status, QStringLiteral("finished"));
    const expnet::RunStore there((host_->workDir() + "/" + store).toStdString(), expnet::RunStore::Open::read_only);
    const auto runs = there.list_runs();
    QCOMPARE(runs.size(), size_t(1));
    QCOMPARE(QString::fromStdString(runs.front().name), QStringLiteral("remote; $(touch PWNED) 'q'"));
    QList<int> expected;
    for (const auto& step : there.steps(runs.front().id)) expected << static_cast<int>(step.step);
    QCOMPARE(steps, expected);  // every row once, in order
    QVERIFY2(pwnedFiles(host_->workDir()).isEmpty(), qPrintable(pwnedFiles(host_->workDir()).join(", ")));

    QVERIFY2(mirror.waitForFinished(120000), "the mirror did not end within 120 s of the run");
    const QString mirrorLog = QString::fromUtf8(mirror.readAllStandardError());
    QVERIFY2(mirror.exitCode() == 0 && mirrorLog.contains("reconnecting to gpu"), qPrintable(mirrorLog));
    QVERIFY2(second.waitForFinished(60000) && second.exitCode() == 0, second.readAllStandardError().constData());
    const expnet::RunStore copy(mirrorPath.toStdString(), expnet::RunStore::Open::read_only);
    QCOMPARE(copy.list_runs().size(), size_t(1));
    QCOMPARE(copy.list_runs().front().status, std::string("finished"));
    const auto hostSteps = there.steps(runs.front().id), mirrorSteps = copy.steps(runs.front().id);
    QCOMPARE(mirrorSteps.size(), hostSteps.size());  // row for row
    for (size_t i = 0; i < hostSteps.size(); ++i) {
      QCOMPARE(mirrorSteps[i].step, hostSteps[i].step);
      QCOMPARE(mirrorSteps[i].loss, hostSteps[i].loss);
    }
    QCOMPARE(copy.validations(runs.front().id).size(), there.validations(runs.front().id).size());
    QCOMPARE(copy.samples(runs.front().id).size(), there.samples(runs.front().id).size());

    // The studio lists the mirrored run with its host (the README's picture when
    // EXPNET_SCREENSHOT_DIR names a folder).
    const QString folder = qEnvironmentVariableIsEmpty("EXPNET_SCREENSHOT_DIR") ? config_ : qEnvironmentVariable("EXPNET_SCREENSHOT_DIR");
    const QString png = folder + "/runs-remote.png";
    const auto shot = expnet_test::runProcess(expnet_test::studioPath(), {"--screenshot", png, "--page", "runs", "--store", mirrorPath,
                                                                         "--select", QString::fromStdString(runs.front().name)});
    QVERIFY2(shot.exitCode == 0 && QFileInfo(png).size() > 0, shot.err.constData());
    QFile json(png + ".json");
    QVERIFY(json.open(QIODevice::ReadOnly));
    const auto listed = QJsonDocument::fromJson(json.readAll()).object()["content"].toObject()["rows"].toArray();
    QCOMPARE(listed.size(), 1);  // the mirror's run, nothing of this machine's own registry
    QCOMPARE(listed[0].toObject()["host"].toString(), QStringLiteral("gpu"));
    QCOMPARE(listed[0].toObject()["status"].toString(), QStringLiteral("finished"));
  }

  // Stop from here (Ctrl-C there: a checkpoint, "interrupted" within 10 s), then
  // --resume there: it finishes, every step once.
  void aRunThereIsStoppedAndResumed() {
    const QString out = "runs/stop me; $(touch PWNED)";
    const QString store = out + "/runs.sqlite";
    const QString config = recipe(config_, 200);
    const auto started = cli({"train", "--host", "gpu", "--config", config, "--out", out, "--threads", "1"});
    QVERIFY2(started.exitCode == 0, started.err.constData());
    Follow running;
    running.start({"runs", "follow", "--host", "gpu", "--store", store});
    QVERIFY2(running.waitUntil([&] { return running.count("step") >= 5; }, 30000), running.process.readAllStandardError().constData());
    const QString name = QStringLiteral("remote; $(touch PWNED) 'q'");
    const auto stopped = cli({"runs", "stop", name, "--host", "gpu", "--store", store});
    QVERIFY2(stopped.exitCode == 0, stopped.err.constData());
    QElapsedTimer clock;
    clock.start();
    QVERIFY2(running.waitUntil([&] { return running.count("end") == 1; }, 10000), "not ended within 10 s of the stop");
    QString status;
    for (const auto& line : running.lines)
      if (line["type"] == "run") status = line["status"].toString();
    QCOMPARE(status, QStringLiteral("interrupted"));
    qInfo("interrupted %lld ms after the stop", static_cast<long long>(clock.elapsed()));
    const auto again = cli({"runs", "stop", name, "--host", "gpu", "--store", store});
    QCOMPARE(again.exitCode, 1);
    QVERIFY2(again.err.contains("is not running"), again.err.constData());

    const auto resumed = cli({"train", "--host", "gpu", "--config", config, "--out", out, "--resume", "--threads", "1"});
    QFile log(host_->workDir() + "/" + out + "/train.log");
    log.open(QIODevice::ReadOnly);
    QVERIFY2(resumed.exitCode == 0, qPrintable(QString::fromUtf8(resumed.err) + "\nlog:\n" + QString::fromUtf8(log.readAll())));
    Follow rest;
    rest.start({"runs", "follow", "--host", "gpu", "--store", store});
    QVERIFY2(rest.waitUntil([&] { return rest.count("end") == 1; }, 120000), rest.process.readAllStandardError().constData());
    for (const auto& line : rest.lines)
      if (line["type"] == "run") status = line["status"].toString();
    QCOMPARE(status, QStringLiteral("finished"));
    const expnet::RunStore there((host_->workDir() + "/" + store).toStdString(), expnet::RunStore::Open::read_only);
    QList<int> steps;
    for (const auto& step : there.steps(there.list_runs().front().id)) steps << static_cast<int>(step.step);
    QCOMPARE(steps.size(), 200 * 5);
    for (int i = 0; i < steps.size(); ++i) QCOMPARE(steps[i], i + 1);
    QVERIFY2(pwnedFiles(host_->workDir()).isEmpty(), qPrintable(pwnedFiles(host_->workDir()).join(", ")));
    bringTheCheckpointHome(store, host_->workDir() + "/" + out + "/final.pth");
  }

  // The host's disk fills up (a 512 KiB file system mounted there on the run's folder):
  // the run stops, and what comes back names the host and the reason.
  void aHostWhoseDiskFillsUp() {
    const QString full = host_->workDir() + "/full";
    QVERIFY(QDir().mkpath(full));
    QVERIFY2(host_->mountSmallDisk(full, "512k"), qPrintable(host_->lastError()));
    const auto started = cli({"train", "--host", "gpu", "--config", recipe(config_, 400), "--out", "full/run", "--threads", "1"});
    QString why = QString::fromUtf8(started.err);
    if (started.exitCode == 0) {  // it ran out of space after the settling time: the run says so
      Follow run;
      run.start({"runs", "follow", "--host", "gpu", "--store", "full/run/runs.sqlite"});
      QVERIFY2(run.waitUntil([&] { return run.process.state() == QProcess::NotRunning; }, 120000), "the follow did not end");
      QJsonObject last;
      for (const auto& line : run.lines)
        if (line["type"] == "run") last = line;
      why = last["status"].toString() + ": " + last["error"].toString() + QString::fromUtf8(run.process.readAllStandardError());
      QVERIFY2(last["status"] == "failed" || last["status"] == "interrupted", qPrintable(why));
    } else {
      QVERIFY2(why.contains("host 'gpu'"), qPrintable(why));
    }
    qInfo("a full disk on the host: %s", qPrintable(why.simplified().left(400)));
    QVERIFY2(why.contains("No space left on device") || why.contains("disk is full") || why.contains("EFBIG"), qPrintable(why));
  }

  // `eval --host`: the host captions and scores its dataset (hostile path), with
  // progress here; the result joins this computer's copy's evaluation store,
  // captions and scores equal to an evaluation made here. --device is the host's.
  void anEvaluationThereJoinsTheHomeStore() {
    const QString there = QStringLiteral("data; $(touch PWNED) 'q'"), home = config_ + "/home shapes";
    for (const QString& out : {host_->workDir() + "/" + there, home}) {
      const auto made = cli({"dataset", "make-shapes", "--out", out, "--images", "12", "--seed", "5"});
      QVERIFY2(made.exitCode == 0, made.err.constData());
    }
    const auto remote = cli({"eval", "--host", "gpu", "--dataset", there, "--split", "all", "--model", "demo", "--beam",
                             "2", "--threads", "1", "--home-dataset", home, "--json"}, 120000);
    QVERIFY2(remote.exitCode == 0, remote.err.constData());
    QVERIFY2(remote.err.contains("gpu: 12 of 12 images (100%)"), remote.err.constData());
    const auto imported = QJsonDocument::fromJson(remote.out).object();
    QCOMPARE(imported["evaluation"].toObject()["model"].toString(), QStringLiteral("demo on gpu"));
    const auto local = cli({"eval", "--dataset", home, "--split", "all", "--model", "demo", "--beam", "2", "--json"}, 120000);
    QVERIFY2(local.exitCode == 0, local.err.constData());
    const auto here = QJsonDocument::fromJson(local.out).object();
    QCOMPARE(imported["per_image"].toArray().size(), 12);
    for (int i = 0; i < 12; ++i) {
      const auto a = imported["per_image"].toArray()[i].toObject(), b = here["per_image"].toArray()[i].toObject();
      QCOMPARE(a["cocoid"], b["cocoid"]);
      QCOMPARE(a["caption"], b["caption"]);
      QVERIFY2(a["image"].toString().startsWith(home), "a sample names the host's image, not this computer's");
    }
    QCOMPARE(imported["corpus"].toObject()["CIDEr"].toDouble(), here["corpus"].toObject()["CIDEr"].toDouble());
    // Both kept apart in the home store: the Datasets page lists them.
    const QString db = QString::fromStdString(expnet::default_evaluation_db(home.toStdString()));
    QCOMPARE(expnet::list_sample_evaluations(db.toStdString()).size(), size_t(2));
    // Again: nothing new is added.
    const auto again = cli({"eval", "--host", "gpu", "--dataset", there, "--split", "all", "--model", "demo", "--beam", "2",
                            "--threads", "1", "--home-dataset", home, "--json"}, 120000);
    QVERIFY2(again.exitCode == 0, again.err.constData());
    QCOMPARE(QJsonDocument::fromJson(again.out).object()["evaluation"].toObject()["captioned"].toInt(), 0);
    QCOMPARE(expnet::list_sample_evaluations(db.toStdString()).size(), size_t(2));

    // Another dataset here: refused, naming it.
    const QString small = config_ + "/small shapes";
    QVERIFY(cli({"dataset", "make-shapes", "--out", small, "--images", "3", "--seed", "5"}).exitCode == 0);
    const auto other = cli({"eval", "--host", "gpu", "--dataset", there, "--split", "all", "--model", "demo", "--beam", "2",
                            "--threads", "1", "--home-dataset", small}, 120000);
    QCOMPARE(other.exitCode, 1);
    QVERIFY2(other.err.contains("lacks: name this computer's copy of the dataset the host evaluated"), other.err.constData());
    // --device names the host's device: refused there (it has no CUDA), not here.
    const auto cuda = cli({"eval", "--host", "gpu", "--dataset", there, "--split", "all", "--model", "demo", "--device", "cuda"});
    QCOMPARE(cuda.exitCode, 1);
    QVERIFY2(cuda.err.contains("host 'gpu': expnet eval failed there") && cuda.err.contains("no CUDA"), cuda.err.constData());
    QVERIFY2(pwnedFiles(host_->workDir()).isEmpty(), qPrintable(pwnedFiles(host_->workDir()).join(", ")));
  }

  // An expnet there of an older follow format (what its `runs follow` would
  // first say, written by a script standing in for it): the mirror refuses it,
  // naming the host and both versions, and writes nothing.
  void anOlderExpnetThereIsNamed() {
    const QString old = host_->workDir() + "/old-expnet";
    QFile script(old);
    QVERIFY(script.open(QIODevice::WriteOnly));
    script.write("#!/bin/sh\nread -r request\necho '{\"type\":\"hello\",\"version\":0,\"expnet\":\"0.9.0\"}'\n");
    script.close();
    QVERIFY(script.setPermissions(script.permissions() | QFileDevice::ExeOwner));
    QVERIFY(cli({"hosts", "add", "old", "--destination", host_->alias(), "--program", old, "--work-dir", host_->workDir(),
                 "--ssh-option=-F", "--ssh-option=" + host_->sshConfig()}).exitCode == 0);
    const QString mirror = config_ + "/old-mirror.sqlite";
    const auto refused = cli({"runs", "mirror", "--host", "old", "--store", "runs/any/runs.sqlite", "--mirror", mirror});
    QCOMPARE(refused.exitCode, 1);
    QVERIFY2(refused.err.contains("host 'old'") && refused.err.contains("(0.9.0) speaks follow format 0") &&
                 refused.err.contains("this one (" EXPNET_VERSION ") reads format 1"),
             refused.err.constData());
    QVERIFY2(!refused.err.contains("reconnecting"), "a refusal is not a dropped link: it must not be retried");
  }

  // Last: the host's key changes; ssh refuses it and says so, and so do we.
  void aChangedHostKeyIsRefused() {
    QVERIFY(host_->replaceHostKey());
    const auto check = cli({"hosts", "check", "gpu"});
    QCOMPARE(check.exitCode, 1);
    QVERIFY2(check.err.contains("host key is unknown or has changed") && check.err.contains("ssh-keygen -R"),
             check.err.constData());
  }

  void cleanupTestCase() {
    if (host_) host_->stop();
  }
};

QTEST_MAIN(TestRemoteHost)
#include "test_remote_host.moc"

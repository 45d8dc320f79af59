// The studio's side of remote hosts (docs/remote.md), for real on one machine:
// a host in a network namespace running sshd (tests/support/test_host.h). The
// Hosts dialog adds and checks it; the Training page's worker starts a run there,
// follows it into the mirror across a 20 s cut link (the page says "reconnecting
// to HOST"), picks it up again after the page is destroyed and made anew (the
// studio restarted), stops and resumes it from the Training page, sees it
// "interrupted" within 10 s of its trainer's SIGKILL and resumes it from the Runs page; the Runs page's action
// brings its final checkpoint home, which captions as `expnet caption` does on
// the host. The Datasets page evaluates on the host, the result kept here. Nothing is run by a shell: names hold quotes, `;` and `$()`.
// Needs root; CI requires it (EXPNET_REQUIRE_NETNS=1).
#include <sys/resource.h>
#include <csignal>
#include <unistd.h>

#include <QDirIterator>
#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QComboBox>
#include <QLineEdit>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QTimer>
#include <QtTest>

#include <functional>
#include <memory>
#include <optional>

#include "expnet/remote/run_mirror.h"
#include "expnet/train/run_store.h"
#include "runs/runactions.h"
#include "runs/runslisting.h"
#include "shell/hostsdialog.h"
#include "shell/studiocontext.h"
#include "support/fixtures.h"
#include "support/test_host.h"
#include "common/hostchoice.h"
#include "datasets/datasetspage.h"
#include "expnet/metrics/sample_evaluation.h"
#include "training/trainingpage.h"

namespace {

const QString kRunName = QStringLiteral("studio; $(touch PWNED) 'q'");
// Long enough for every stop, resume and cut below on any machine: the test stops it itself.
constexpr int kEpochs = 100000;
const QString kOut = QStringLiteral("runs/from the studio; $(touch PWNED) \"x\"");

QByteArray recipe(int epochs) { return expnet_test::tinyShapesRecipe(kRunName, 7, epochs); }

class StallWatch;
StallWatch* watching = nullptr;
void resumeWatching();

// Runs the event loop until `done` or `ms` pass. Only these waits count as stalls:
// the test's own blocking steps (cutting the link, a CLI run) are not the studio's.
bool waitFor(const std::function<bool()>& done, int ms) {
  resumeWatching();
  QElapsedTimer clock;
  clock.start();
  while (!done() && clock.elapsed() < ms) QTest::qWait(100);
  return done();
}

using expnet_test::pwnedFiles;

// The longest gap between ticks of a 10 ms timer: how long the event loop was blocked.
class StallWatch : public QObject {
 public:
  StallWatch() {
    clock_.start();
    timer_.callOnTimeout([this] {
      longest_ = std::max(longest_, clock_.restart());
    });
    timer_.start(10);
    watching = this;
  }
  ~StallWatch() override { watching = nullptr; }
  void resume() { clock_.restart(); }
  qint64 longestMs() const { return longest_; }

 private:
  QTimer timer_;
  QElapsedTimer clock_;
  qint64 longest_ = 0;
};

// CPU seconds (user + system) of this process's descendants now alive (the mirrors and their ssh), from /proc.
double descendantsCpuSeconds() {
  QHash<qint64, qint64> parent;
  QHash<qint64, double> cpu;
  const double tick = double(sysconf(_SC_CLK_TCK));
  for (const QString& entry : QDir("/proc").entryList(QDir::Dirs)) {
    bool numeric = false;
    const qint64 pid = entry.toLongLong(&numeric);
    if (!numeric) continue;
    QFile stat("/proc/" + entry + "/stat");
    if (!stat.open(QIODevice::ReadOnly)) continue;
    const QByteArray text = stat.readAll();
    const QList<QByteArray> fields = text.mid(text.lastIndexOf(')') + 2).split(' ');  // from field 3 (state) on
    if (fields.size() < 13) continue;
    parent[pid] = fields[1].toLongLong();
    cpu[pid] = (fields[11].toDouble() + fields[12].toDouble()) / tick;  // utime, stime
  }
  double total = 0;
  for (auto it = parent.cbegin(); it != parent.cend(); ++it) {
    for (qint64 up = it.value(); up > 1; up = parent.value(up, 0))
      if (up == QCoreApplication::applicationPid()) {
        total += cpu.value(it.key());
        break;
      }
  }
  return total;
}

void resumeWatching() {
  if (watching) watching->resume();
}

double selfCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + 1e-6 * double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}

}  // namespace

class TestRemoteStudio : public QObject {
  Q_OBJECT
  std::unique_ptr<expnet_test::TestHost> host_;
  QString home_;

  QString message(const TrainingPage& page) const { return page.describe()["message"].toString(); }

 private slots:
  void initTestCase() {
    EXPNET_START_TEST_HOST(host_, "gpu-studio");
    home_ = expnet_test::makeTempDir("remote_studio");
    qputenv("EXPNET_HOME", (home_ + "/home").toUtf8());  // hosts.json, mirrors, the run registry: the test's own
    qputenv("EXPNET_CLI", expnet_test::cliPath().toUtf8());
    QCoreApplication::setOrganizationName("expnet-test-remote");  // not the user's settings
    QSettings().clear();
  }

  // The Hosts dialog saves a host (a bad one is refused naming the field) and checks it over ssh.
  void theHostsDialogAddsAndChecks() {
    HostsDialog dialog;
    QString error;
    expnet::Host bad;
    bad.name = "gpu";
    bad.destination = "-oProxyCommand=touch PWNED";
    QVERIFY(!dialog.addHost(bad, &error));
    QVERIFY2(error.contains("destination"), qPrintable(error));
    expnet::Host host;
    host.name = "gpu";
    host.destination = host_->alias().toStdString();
    host.program = expnet_test::cliPath().toStdString();
    host.work_dir = host_->workDir().toStdString();
    host.ssh_options = {"-F", host_->sshConfig().toStdString()};
    QVERIFY2(dialog.addHost(host, &error), qPrintable(error));
    QCOMPARE(dialog.hostNames(), QStringList{"gpu"});
    QSignalSpy checked(&dialog, &HostsDialog::checked);
    dialog.check("gpu");
    QVERIFY(checked.wait(30000));
    QVERIFY2(checked.first().at(1).toBool(), qPrintable(checked.first().at(2).toString()));
    QVERIFY2(dialog.status().contains("expnet " EXPNET_VERSION) && dialog.status().contains("free"), qPrintable(dialog.status()));
  }

  // The Datasets page evaluates on the host (its copy of the dataset under a
  // hostile path): progress here, Cancel ends the host's work (what it captioned
  // is kept there), Evaluate again resumes; the result joins this dataset's
  // store, shown worst first with the captions an evaluation here gives.
  void theDatasetsPageEvaluatesThere() {
    const QString there = QStringLiteral("data; $(touch PWNED) 'q'"), home = home_ + "/home shapes";
    for (const QString& out : {host_->workDir() + "/" + there, home}) {
      const auto made = expnet_test::runProcess(expnet_test::cliPath(), {"dataset", "make-shapes", "--out", out, "--images",
                                                                        "60", "--seed", "9"});
      QVERIFY2(made.exitCode == 0, made.err.constData());
    }
    qputenv("XDG_CACHE_HOME", (home_ + "/cache").toUtf8());  // the home copy's index and evaluation store
    StudioContext context;
    StallWatch stalls;
    DatasetsPage page(&context);
    page.resize(1200, 800);
    page.show();
    page.openDataset(home);
    QVERIFY2(waitFor([&] { return !page.isBusy() && page.describe()["total"].toInt() == 60; }, 60000),
             QJsonDocument(page.describe()).toJson().left(600).constData());
    const auto state = [&] { return page.describe()["evaluation"].toObject()["state"].toString(); };
    QVERIFY(page.findChild<HostChoice*>("evalWhere")->setHost("gpu"));
    page.evaluate("demo", "all", 0);  // no path there yet: refused, saying what to do
    QVERIFY2(state().contains("Name this dataset's path on gpu"), qPrintable(state()));
    page.findChild<QLineEdit*>("evalDatasetThere")->setText(there);
    page.findChild<QComboBox*>("evalDeviceThere")->setCurrentText("cpu");
    page.evaluate("demo", "all", 0);
    QVERIFY2(waitFor([&] { return state().contains(" / 60 images") && state().section(' ', 0, 0).toInt() >= 3; }, 60000),
             qPrintable(state()));
    page.findChild<QPushButton*>("evalCancel")->click();
    QVERIFY(waitFor([&] { return !page.isBusy(); }, 15000));
    QVERIFY2(state().startsWith("Cancelled"), qPrintable(state()));
    QVERIFY2(waitFor([] { return expnet_test::runProcess("pgrep", {"-f", "--progress-lines"}).exitCode != 0; }, 10000),
             "the host's expnet eval still runs 10 s after Cancel");
    page.evaluate("demo", "all", 0);
    QVERIFY(waitFor([&] { return !page.isBusy() && !state().contains(" / "); }, 120000));
    QVERIFY2(state().contains("on gpu: 60 images") && !state().contains("(0 resumed)"), qPrintable(state()));
    const QJsonObject d = page.describe();
    QCOMPARE(d["sort"].toString(), QStringLiteral("score: worst first"));
    const QJsonArray evaluations = d["evaluation"].toObject()["evaluations"].toArray();
    QCOMPARE(evaluations.size(), 1);
    QCOMPARE(evaluations[0].toObject()["model"].toString(), QStringLiteral("demo on gpu"));
    QCOMPARE(d["evaluation"].toObject()["shown"].toInteger(), evaluations[0].toObject()["id"].toInteger());
    // The captions the host gave are those an evaluation here gives.
    const auto local = expnet_test::runProcess(expnet_test::cliPath(), {"eval", "--dataset", home, "--split", "all", "--model",
                                                                       "demo", "--beam", "3", "--json", "--db", home_ + "/here.sqlite"}, 120000);
    QVERIFY2(local.exitCode == 0, local.err.constData());
    const auto mine = expnet::load_sample_evaluation(
        expnet::default_evaluation_db(home.toStdString()), evaluations[0].toObject()["id"].toInteger());
    const QJsonArray expected = QJsonDocument::fromJson(local.out).object()["per_image"].toArray();
    QCOMPARE(static_cast<int>(mine.per_image.size()), expected.size());
    for (int i = 0; i < expected.size(); ++i)
      QCOMPARE(QString::fromStdString(mine.per_image[i].caption), expected[i].toObject()["caption"].toString());
    QVERIFY2(pwnedFiles(host_->workDir()).isEmpty(), qPrintable(pwnedFiles(host_->workDir()).join(", ")));
    QVERIFY2(stalls.longestMs() < 500, qPrintable(QString("the event loop stalled %1 ms").arg(stalls.longestMs())));
  }

  void theTrainingPageTrainsThere() {
    StudioContext context;
    StallWatch stalls;
    QSettings().setValue("training/threads", 1);  // the trainer there at --threads 1
    auto page = std::make_unique<TrainingPage>(&context);
    page->restoreSettings();
    QVERIFY(page->setWhere("gpu"));
    QVERIFY(page->setConfigJson(recipe(kEpochs)));
    page->setOutputDir(kOut);
    page->start();
    QVERIFY2(waitFor([&] { return page->snapshot().steps.size() >= 3; }, 60000), qPrintable(message(*page)));
    QCOMPARE(page->describe()["where"].toString(), QStringLiteral("gpu"));
    QVERIFY2(page->describe()["process"].toObject()["command"].toString().isEmpty(), "a local trainer was started");
    QCOMPARE(page->snapshot().storePath, page->remote()->mirrorPath());
    const QString hostStore = host_->workDir() + "/" + kOut + "/runs.sqlite";
    QVERIFY2(QFileInfo::exists(hostStore), "the run's store is not in its folder on the host, under its hostile name");

    // The studio closed and opened again while the run goes on: it follows the run again.
    page->saveSettings();
    page.reset();
    page = std::make_unique<TrainingPage>(&context);
    page->restoreSettings();
    QCOMPARE(page->where(), QStringLiteral("gpu"));
    QVERIFY2(waitFor([&] { return page->snapshot().found; }, 30000), qPrintable(message(*page)));
    const size_t stepsAtRestart = page->snapshot().steps.size();
    QVERIFY2(waitFor([&] { return page->snapshot().steps.size() > stepsAtRestart; }, 30000), qPrintable(message(*page)));

    // Stop there (a checkpoint, then "interrupted"), Resume from the page.
    auto* stop = page->findChild<QPushButton*>("stop");
    QVERIFY(stop->isEnabled());
    stop->click();
    QVERIFY2(waitFor([&] { return page->snapshot().run.status == "interrupted"; }, 30000), qPrintable(message(*page)));
    auto* resume = page->findChild<QPushButton*>("resume");
    QVERIFY2(waitFor([&] { return resume->isEnabled(); }, 10000), "Resume stays disabled after the stop");
    const size_t stepsAtStop = page->snapshot().steps.size();
    resume->click();
    QVERIFY2(waitFor([&] { return page->snapshot().run.status == "running" && page->snapshot().steps.size() > stepsAtStop; }, 60000),
             qPrintable(message(*page)));
    // The trainer there killed (SIGKILL: no checkpoint, no last word): the mirror says
    // "interrupted" within 10 s, and Resume from the Runs page's row of its mirror (as the
    // main window wires it) continues it from its last checkpoint.
    QVERIFY(waitFor([&] { return stop->isEnabled(); }, 10000));
    const qint64 trainer = trainerPid(host_->workDir() + "/" + kOut);
    QVERIFY2(trainer > 0, "no trainer pid in the run folder's lock");
    QElapsedTimer sinceKill;
    sinceKill.start();
    QCOMPARE(::kill(static_cast<pid_t>(trainer), SIGKILL), 0);
    QVERIFY2(waitFor([&] { return page->snapshot().run.status == "interrupted"; }, 10000),
             qPrintable(QString("still %1 10 s after the trainer was killed: ").arg(QString::fromStdString(page->snapshot().run.status)) +
                        message(*page)));
    qInfo("interrupted in the mirror %lld ms after the trainer was killed", static_cast<long long>(sinceKill.elapsed()));
    resumeFromTheRunsPage(*page);
    const size_t stepsAtSecondStop = page->snapshot().steps.size();
    QVERIFY2(waitFor([&] { return page->snapshot().run.status == "running" && page->snapshot().steps.size() > stepsAtSecondStop; },
                     60000),
             qPrintable(QString::fromStdString(page->snapshot().run.status) + " " + QString::number(page->snapshot().steps.size()) + " " + [&] {
               QFile log(host_->workDir() + "/" + kOut + "/train.log");
               log.open(QIODevice::ReadOnly);
               return QString::fromUtf8(log.readAll().right(3000));
             }()));

    // The link cut for 20 s: the page says it is reconnecting, never freezes, then catches up to the end.
    QElapsedTimer cut;
    cut.start();
    QVERIFY(host_->cutLink());
    QVERIFY2(waitFor([&] { return page->remote()->reconnecting(); }, 45000), qPrintable(message(*page)));
    QVERIFY2(message(*page).contains("reconnecting to gpu"), qPrintable(message(*page)));
    resumeWatching();
    if (cut.elapsed() < 20000) QTest::qWait(int(20000 - cut.elapsed()));  // a 20 s cut at least
    const size_t stepsAtCut = page->snapshot().steps.size();
    QVERIFY(host_->restoreLink());
    qInfo("link restored %lld ms after the cut, %zu steps at the restart, %zu at the stop, %zu mirrored before the cut",
          static_cast<long long>(cut.elapsed()), stepsAtRestart, stepsAtStop, stepsAtCut);
    // Caught up: the mirror moves past where it was at the cut. Then stopped a last time: the follow ends with the run.
    QVERIFY2(waitFor([&] { return !page->remote()->reconnecting() && page->snapshot().steps.size() > stepsAtCut + 5; }, 120000),
             qPrintable(message(*page)));
    QVERIFY(waitFor([&] { return stop->isEnabled(); }, 10000));
    stop->click();
    QVERIFY2(waitFor([&] { return page->snapshot().run.status == "interrupted" && !page->remote()->isActive(); }, 60000),
             qPrintable(message(*page)));
    qInfo("longest event-loop stall while following: %lld ms", static_cast<long long>(stalls.longestMs()));
    QVERIFY2(stalls.longestMs() < 500, qPrintable(QString("the event loop stalled %1 ms").arg(stalls.longestMs())));

    // The mirror equals the host's store row for row: every step once, in order.
    const expnet::RunStore there(hostStore.toStdString(), expnet::RunStore::Open::read_only);
    const expnet::RunStore copy(page->remote()->mirrorPath().toStdString(), expnet::RunStore::Open::read_only);
    const auto hostSteps = there.steps(there.list_runs().front().id);
    const auto mirrorSteps = copy.steps(copy.list_runs().front().id);
    QVERIFY(hostSteps.size() > stepsAtCut);
    QCOMPARE(mirrorSteps.size(), hostSteps.size());
    for (size_t i = 0; i < hostSteps.size(); ++i) {
      QCOMPARE(mirrorSteps[i].step, int64_t(i + 1));
      QCOMPARE(mirrorSteps[i].loss, hostSteps[i].loss);
    }
    QCOMPARE(QString::fromStdString(copy.list_runs().front().name), kRunName);
    QVERIFY2(pwnedFiles(host_->workDir()).isEmpty(), qPrintable(pwnedFiles(host_->workDir()).join(", ")));
    bringHomeAndCaption(page->remote()->mirrorPath(), host_->workDir() + "/" + kOut + "/checkpoints/best.pth");
  }

  // A run that ends by itself: the page follows it to "finished", the follow ends, the final checkpoint comes home.
  void aRunIsFollowedToItsEnd() {
    StudioContext context;
    QSettings().remove("training/remoteRuns");
    auto page = std::make_unique<TrainingPage>(&context);
    page->restoreSettings();
    QVERIFY(page->setWhere("gpu"));
    QVERIFY(page->setConfigJson(expnet_test::tinyShapesRecipe(QStringLiteral("to the end"), 3, 4)));
    page->setOutputDir(QStringLiteral("runs/to the end"));
    page->start();
    QVERIFY2(waitFor([&] { return page->snapshot().run.status == "finished" && !page->remote()->isActive(); }, 180000),
             qPrintable(message(*page) + " status " + QString::fromStdString(page->snapshot().run.status) + " active " +
                        QString::number(page->remote()->isActive()) + " steps " + QString::number(page->snapshot().steps.size())));
    const expnet::RunStore copy(page->remote()->mirrorPath().toStdString(), expnet::RunStore::Open::read_only);
    QCOMPARE(copy.steps(copy.list_runs().front().id).size(), size_t(4 * 5));
    bringHomeAndCaption(page->remote()->mirrorPath(), host_->workDir() + "/runs/to the end/final.pth");
  }

  // Four runs started on the host from one Training page (trainers at --threads
  // 1): the page shows the last, the others go on being mirrored in the
  // background. What the studio process pays, and its mirror and ssh children apart.
  void fourRunsFollowedCostLittle() {
    StudioContext context;
    QSettings().remove("training/remoteRuns");
    auto page = std::make_unique<TrainingPage>(&context);
    page->restoreSettings();  // --threads 1
    page->resize(1024, 640);
    page->show();
    QVERIFY(page->setWhere("gpu"));
    QVERIFY(page->setConfigJson(recipe(100000)));
    QStringList stores;
    for (int i = 0; i < 4; ++i) {
      page->setOutputDir(QStringLiteral("runs/four-%1").arg(i));
      page->start();
      stores << QStringLiteral("runs/four-%1/runs.sqlite").arg(i);
      QVERIFY2(waitFor([&] {
                 return page->snapshot().storePath == RemoteTraining::mirrorPathFor("gpu", stores.back()) &&
                        page->snapshot().steps.size() >= 3;
               }, 60000),
               qPrintable(message(*page)));
      QCOMPARE(page->remote()->store(), stores.back());
    }
    QCOMPARE(page->remote()->backgroundRuns().size(), 3);
    QStringList mirrors;
    for (const QString& store : stores) mirrors << RemoteTraining::mirrorPathFor("gpu", store);
    const auto mirroredSteps = [&](const QString& mirror) {
      const expnet::RunStore copy(mirror.toStdString(), expnet::RunStore::Open::read_only);
      return copy.steps(copy.list_runs().front().id).size();
    };
    const size_t firstBefore = mirroredSteps(mirrors.front());

    StallWatch stalls;
    resumeWatching();
    const double self0 = selfCpuSeconds(), children0 = descendantsCpuSeconds();
    QElapsedTimer wall;
    wall.start();
    QTest::qWait(20000);
    const double seconds = double(wall.elapsed()) / 1000;
    const double self = (selfCpuSeconds() - self0) / seconds, children = (descendantsCpuSeconds() - children0) / seconds;
    const qint64 stall = stalls.longestMs();
    qInfo("following 4 runs for %.0f s: the studio process %.1f%% of a core, its mirror and ssh children %.1f%%, "
          "longest event-loop stall %lld ms",
          seconds, 100 * self, 100 * children, static_cast<long long>(stall));
    QVERIFY2(mirroredSteps(mirrors.front()) > firstBefore, "a run followed in the background is not mirrored");

    // Closed and opened again: all four are followed again.
    page->saveSettings();
    page.reset();
    page = std::make_unique<TrainingPage>(&context);
    page->restoreSettings();
    QCOMPARE(page->remote()->backgroundRuns().size(), 3);
    QCOMPARE(page->remote()->store(), stores.back());
    for (const QString& store : stores) {
      const auto stopped = expnet_test::runProcess(expnet_test::cliPath(), {"runs", "stop", kRunName, "--host", "gpu", "--store", store}, 60000);
      QVERIFY2(stopped.exitCode == 0, stopped.err.constData());
    }
    QVERIFY2(waitFor([&] { return !page->remote()->isActive() && page->remote()->backgroundRuns().isEmpty(); }, 60000),
             "the mirrors did not end after the stops");
    for (int i = 0; i < 4; ++i) {
      const expnet::RunStore copy(mirrors[i].toStdString(), expnet::RunStore::Open::read_only);
      QCOMPARE(copy.list_runs().front().status, std::string("interrupted"));
      const expnet::RunStore there((host_->workDir() + "/" + stores[i]).toStdString(), expnet::RunStore::Open::read_only);
      QCOMPARE(copy.steps(copy.list_runs().front().id).size(), there.steps(there.list_runs().front().id).size());
    }
    QVERIFY2(self < 0.25, qPrintable(QString("the studio process used %1% of a core").arg(100 * self)));  // gross: the figure is the note's
    QVERIFY2(stall < 500, qPrintable(QString("the event loop stalled %1 ms").arg(stall)));
  }

  void cleanupTestCase() {
    if (host_) host_->stop();
  }

 private:
  // The Runs page's row of the mirror's run, as the page lists it.
  static std::optional<RunRow> mirrorRow(const QString& mirror) {
    for (const auto& r : loadRunsListing({mirror}).rows)
      if (r.storePath == QFileInfo(mirror).absoluteFilePath()) return r;
    return std::nullopt;
  }

  // The Runs page's Resume on the page's mirrored run: the Training page resumes it there.
  // The pid a run folder's trainer wrote into its lock (docs/remote.md: `runs stop` reads it too).
  static qint64 trainerPid(const QString& folder) {
    QFile lock(folder + "/run-folder.lock");
    if (!lock.open(QIODevice::ReadOnly)) return 0;
    return QJsonDocument::fromJson(lock.readAll()).object()["pid"].toInteger();
  }

  void resumeFromTheRunsPage(TrainingPage& page) {
    const std::optional<RunRow> row = mirrorRow(page.remote()->mirrorPath());
    QVERIFY(row);
    QCOMPARE(row->status, QStringLiteral("interrupted"));
    QWidget owner;
    RunActions actions(&owner);
    actions.setCurrent(&*row);
    connect(&actions, &RunActions::resumeOnHostRequested, &page, &TrainingPage::resumeOnHost);
    QSignalSpy asked(&actions, &RunActions::resumeOnHostRequested);
    actions.resume();
    QCOMPARE(asked.size(), 1);
    QCOMPARE(asked.first().at(0).toString(), QStringLiteral("gpu"));
    QCOMPARE(asked.first().at(1).toString(), kOut);
  }

  // The Runs page's action on the mirrored run: its final checkpoint copied home
  // with a progress bar, then loaded; it captions here as the original does there.
  void bringHomeAndCaption(const QString& mirror, const QString& there) {
    const std::optional<RunRow> row = mirrorRow(mirror);
    QVERIFY(row);
    QCOMPARE(row->host, QStringLiteral("gpu"));
    QWidget owner;
    RunActions actions(&owner);
    actions.setCurrent(&*row);
    QSignalSpy opened(&actions, &RunActions::openCheckpointRequested);
    actions.openBestCheckpoint();
    QVERIFY2(opened.wait(60000), qPrintable(actions.message()));
    const QString home = opened.first().first().toString();
    QVERIFY2(actions.message().contains("SHA-256 checked"), qPrintable(actions.message()));
    QFile copy(home), original(there);
    QVERIFY(copy.open(QIODevice::ReadOnly) && original.open(QIODevice::ReadOnly));
    QVERIFY(copy.readAll() == original.readAll());

    QString here, remote;
    const QString why = expnet_test::captionHereAndThere(*host_, home, there, &here, &remote);
    QVERIFY2(why.isEmpty(), qPrintable(why));
    QCOMPARE(here, remote);
  }
};

QTEST_MAIN(TestRemoteStudio)
#include "test_remote_studio.moc"

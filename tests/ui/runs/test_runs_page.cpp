// The Runs page against real run stores: written with the engine's RunStore (as
// the trainer writes them) or by a child `expnet train`.
#include <QFile>
#include <QLabel>
#include <QJsonArray>
#include <QJsonDocument>
#include <QProcess>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QtTest>

#include <csignal>
#include <cmath>

#include <sqlite3.h>

#include "expnet/train/run_lock.h"
#include "expnet/train/run_registry.h"
#include "expnet/train/run_store.h"
#include "expnet/train/config_diff.h"
#include "runs/runactions.h"
#include "runs/runcomparisontabs.h"
#include "runs/runcurves.h"
#include "runs/runspage.h"
#include "runs/runstablemodel.h"
#include "caption/captionpage.h"
#include "shell/mainwindow.h"
#include "shell/studiocontext.h"
#include "support/fixtures.h"
#include "support/page_driving.h"
#include "training/trainingpage.h"

namespace {

QString config(const QString& name, double lr, int dModel) {
  return QStringLiteral(R"({"name": "%1", "seed": 1, "model": {"d_model": %3, "N_enc": 2, "N_dec": 2},
    "stages": [{"name": "xe", "objective": "xe", "lr": %2, "epochs": 2}]})")
      .arg(name)
      .arg(lr)
      .arg(dModel);
}

// A finished run of `steps` optimizer steps with a validation every 10 steps.
int64_t makeRun(const QString& store, const QString& name, const QString& configJson, int steps, double scale,
                const QString& outDir = QString()) {
  expnet::RunStore s(store.toStdString());
  const int64_t id = s.create_run(name.toStdString(), configJson.toStdString(),
                                  (outDir.isEmpty() ? QFileInfo(store).absolutePath() + "/" + name : outDir).toStdString());
  s.add_stage(id, 0, "xe", "{}");
  std::vector<expnet::StepRecord> rows;
  for (int i = 1; i <= steps; ++i)  // run, stage, epoch, step, loss, lr, grad norm, images/s, skipped, wall s
    rows.push_back({id, 0, (i - 1) / 10, i, scale * 4.0 / (1.0 + 0.05 * i), 1e-3 * (1.0 - double(i) / (steps + 1)), 0,
                    100.0 + i % 7, false, 0.5 * i});
  s.log_steps(rows);
  for (int e = 0; e < steps / 10; ++e) {
    // run, stage, epoch, step, BLEU-1..4, ROUGE-L, CIDEr-D
    s.log_validation({id, 0, e, (e + 1) * 10, 0, 0, 0, scale * 0.02 * (e + 1), 0, scale * 0.1 * (e + 1)});
    s.log_samples({{id, 0, e, "images/a.png", (name + " caption a").toStdString(), "a red circle"},
                   {id, 0, e, "images/b.png", (name + " caption b").toStdString(), "a blue square"}});
  }
  s.set_status(id, "finished");
  return id;
}

// Until a listing read after this call is shown and nothing else is pending.
bool waitListing(RunsPage& page) {
  QSignalSpy spy(&page, &RunsPage::listingUpdated);
  page.refresh();
  if (!spy.wait(10000)) return false;
  QElapsedTimer clock;
  clock.start();
  while (page.isBusy() && clock.elapsed() < 10000) QTest::qWait(20);
  return !page.isBusy();
}

int rowOf(RunsPage& page, const QString& name) {
  const auto& rows = page.model()->rows();
  for (size_t i = 0; i < rows.size(); ++i)
    if (QString::fromStdString(rows[i].info.name) == name) return int(i);
  return -1;
}

QString statusOf(RunsPage& page, const QString& name) {
  const int row = rowOf(page, name);
  return row < 0 ? QString() : page.model()->rows()[size_t(row)].status;
}

QString keyOf(RunsPage& page, const QString& name) {
  const int row = rowOf(page, name);
  return row < 0 ? QString() : page.model()->rows()[size_t(row)].key();
}

QByteArray fileBytes(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

}  // namespace

class TestRunsPage : public QObject {
  Q_OBJECT
  QString dir_;

 private slots:
  void initTestCase() {
    dir_ = expnet_test::makeTempDir(QStringLiteral("runs_page"));
    qputenv("XDG_DATA_HOME", (dir_ + "/data").toUtf8());  // this test's default store, registry and trash
  }

  void listsRegisteredStoresAndOnesOpenedByHand() {
    // Two run folders registered as a trainer registers them, one store opened by hand.
    QDir().mkpath(dir_ + "/a");
    QDir().mkpath(dir_ + "/b");
    QDir().mkpath(dir_ + "/elsewhere");
    makeRun(dir_ + "/a/runs.sqlite", "alpha", config("shapes-demo", 1e-3, 128), 40, 1.0, dir_ + "/a");
    makeRun(dir_ + "/b/runs.sqlite", "beta", config("shapes-demo", 5e-4, 128), 30, 0.8, dir_ + "/b");
    makeRun(dir_ + "/elsewhere/runs.sqlite", "gamma", config("paper", 2e-4, 512), 20, 1.2);
    expnet::register_run_store((dir_ + "/a/runs.sqlite").toStdString());
    expnet::register_run_store((dir_ + "/b/runs.sqlite").toStdString());

    RunsPage page;
    QVERIFY(waitListing(page));
    QVERIFY(rowOf(page, "alpha") >= 0 && rowOf(page, "beta") >= 0);
    QCOMPARE(rowOf(page, "gamma"), -1);
    QVERIFY(page.openStore(dir_ + "/elsewhere", false));
    QSignalSpy listed(&page, &RunsPage::listingUpdated);
    QVERIFY(listed.wait(10000));
    QVERIFY(rowOf(page, "gamma") >= 0);

    const QJsonObject d = page.describe();
    QJsonObject alpha;
    for (const auto& row : d.value("rows").toArray())
      if (row.toObject().value("name").toString() == "alpha") alpha = row.toObject();
    QCOMPARE(alpha.value("status").toString(), QStringLiteral("finished"));
    QCOMPARE(alpha.value("recipe").toString(), QStringLiteral("shapes: xe 2 ep"));
    QCOMPARE(alpha.value("steps").toInt(), 40);
    QVERIFY(std::abs(alpha.value("best_cider_d").toDouble() - 0.4) < 1e-12);
    QCOMPARE(alpha.value("best_epoch").toInt(), 3);
    QCOMPARE(alpha.value("wall_s").toDouble(), 20.0);

    // Filter by text (any column).
    page.setFilterText(QStringLiteral("d 512"));
    QCOMPARE(page.describe().value("rows").toArray().size(), 1);
    page.setFilterText(QString());
    QVERIFY(page.describe().value("rows").toArray().size() >= 3);

    // `expnet runs list` finds the same registered runs (not the store opened by hand without remembering it).
    const auto cli = expnet_test::runProcess(expnet_test::cliPath(), {"runs", "list", "--json"});
    QVERIFY2(cli.exitCode == 0, cli.err.constData());
    QVERIFY(cli.out.contains("\"name\":\"alpha\"") && cli.out.contains("\"name\":\"beta\""));
    QVERIFY(!cli.out.contains("\"name\":\"gamma\""));
    QVERIFY(cli.out.contains("\"status\":\"finished\""));

    // Sorting by best CIDEr-D sorts numbers as numbers.
    page.table()->sortByColumn(RunsTableModel::BestCider, Qt::DescendingOrder);
    QCOMPARE(page.describe().value("rows").toArray().first().toObject().value("name").toString(), QStringLiteral("alpha"));
  }

  // Registered stores whose files are gone: a short notice (two named, the rest counted, all in
  // the tooltip) whose link forgets them.
  void missingStoresAreNamedBrieflyAndForgotten() {
    QStringList gone;
    for (const char* name : {"gone1", "gone2", "gone3"}) {
      QDir().mkpath(dir_ + "/" + name);
      gone << dir_ + "/" + name + "/runs.sqlite";
      makeRun(gone.back(), name, config("shapes-demo", 1e-3, 128), 5, 1.0, dir_ + "/" + name);
      expnet::register_run_store(gone.back().toStdString());
      QVERIFY(QDir(dir_ + "/" + name).removeRecursively());
    }
    RunsPage page;
    QVERIFY(waitListing(page));
    auto* notice = page.findChild<QLabel*>("problems");
    QVERIFY(notice && !notice->isHidden());
    QVERIFY2(notice->text().contains("3 registered stores no longer exist") && notice->text().contains("and 1 more") &&
                 !notice->text().contains(gone[2]),
             qPrintable(notice->text()));
    QVERIFY(notice->toolTip().contains(gone[2]));
    QSignalSpy listed(&page, &RunsPage::listingUpdated);
    emit notice->linkActivated("forget");
    QVERIFY(listed.wait(10000));
    QVERIFY(notice->isHidden());
    for (const auto& known : expnet::known_run_stores()) QVERIFY(!gone.contains(QString::fromStdString(known.path)));
  }

  void curvesAndSamplesEqualTheStoresValues() {
    RunsPage page;
    QVERIFY(waitListing(page));
    QSignalSpy details(&page, &RunsPage::detailsUpdated);
    page.selectRuns({QStringLiteral("alpha"), QStringLiteral("beta")});
    QVERIFY(details.wait(10000));
    QCOMPARE(page.selectedKeys().size(), 2);
    for (const QString& name : {QStringLiteral("alpha"), QStringLiteral("beta")}) {
      const QString key = keyOf(page, name);
      const QString store = key.section('#', 0, 0);
      expnet::RunStore s(store.toStdString());
      const auto run = s.find_run(name.toStdString());
      const auto steps = s.steps(run.id);
      const auto loss = page.curves()->points(key, QStringLiteral("loss"), false);
      QCOMPARE(loss.size(), qsizetype(steps.size()));
      for (size_t i = 0; i < steps.size(); ++i) {
        QCOMPARE(loss[qsizetype(i)].x(), double(steps[i].step));
        QCOMPARE(loss[qsizetype(i)].y(), steps[i].loss);
      }
      const auto validations = s.validations(run.id);
      const auto cider = page.curves()->points(key, QStringLiteral("cider_d"), false);
      QCOMPARE(cider.size(), qsizetype(validations.size()));
      for (size_t i = 0; i < validations.size(); ++i) QCOMPARE(cider[qsizetype(i)].y(), validations[i].cider_d);
    }
    // The curves are described for screenshots, one entry per plotted line.
    QVERIFY(page.describe().value("series").toArray().size() >= 10);

    // Config diff: only the keys that differ (lr), not the ones they share.
    const QJsonArray diff = page.configDiff()->describe();
    QCOMPARE(diff.size(), 1);
    QCOMPARE(diff.first().toObject().value("key").toString(), QStringLiteral("stages[0].lr"));

    // Sample captions side by side at the validation shown (the newest both have: epoch 3).
    const QJsonObject samples = page.samples()->describe();
    QCOMPARE(samples.value("rows").toArray().size(), 2);
    const QJsonArray captions = samples.value("rows").toArray().first().toObject().value("captions").toArray();
    QCOMPARE(captions.size(), 2);
    QCOMPARE(captions[0].toString(), QStringLiteral("alpha caption a"));
  }

  void exportsEqualTheCommandLines() {
    RunsPage page;
    QVERIFY(waitListing(page));
    QVERIFY(page.setCurrentRun(keyOf(page, "alpha")));
    QSignalSpy done(page.actions(), &RunActions::finished);
    const QString csv = dir_ + "/alpha.csv", tensorboard = dir_ + "/tb/alpha";
    page.actions()->exportCsv(csv);
    QVERIFY(done.wait(10000));
    QVERIFY2(done.last().at(0).toBool(), qPrintable(page.actions()->message()));
    const auto cli = expnet_test::runProcess(expnet_test::cliPath(), {"runs", "export", "alpha", "--csv"});
    QVERIFY2(cli.exitCode == 0, cli.err.constData());
    QCOMPARE(fileBytes(csv), cli.out);
    QCOMPARE(cli.out.count("\nstep,"), 40);
    page.actions()->exportTensorBoard(tensorboard);
    QVERIFY(done.wait(10000));
    QVERIFY2(done.last().at(0).toBool(), qPrintable(page.actions()->message()));
    const QStringList files = QDir(tensorboard).entryList({"events.out.tfevents.*"}, QDir::Files);
    QCOMPARE(files.size(), 1);
    QVERIFY(QFileInfo(tensorboard + "/" + files.first()).size() > 40 * 3 * 20);  // 40 steps x 3 scalars, and more

    // Two runs selected: a folder each under the one chosen, which --logdir overlays.
    page.selectRuns({"alpha", "beta"});
    QTRY_COMPARE(page.describe().value("selected").toArray().size(), 2);
    QCoreApplication::processEvents();  // the selection reaches the actions in the page's next pass
    const QString both = dir_ + "/tb/both";
    page.actions()->exportTensorBoard(both);
    QVERIFY(done.wait(10000));
    QVERIFY2(done.last().at(0).toBool(), qPrintable(page.actions()->message()));
    QCOMPARE(QDir(both).entryList(QDir::Dirs | QDir::NoDotAndDotDot), (QStringList{"alpha", "beta"}));
    for (const char* run : {"alpha", "beta"})
      QCOMPARE(QDir(both + "/" + run).entryList({"events.out.tfevents.*"}, QDir::Files).size(), 1);
    QVERIFY2(page.actions()->message().contains("2 runs"), qPrintable(page.actions()->message()));
  }

  void configDiffFlattensNestedKeys() {
    const std::string a = R"({"a": 1, "m": {"d": 128, "l": [1, 2]}, "s": "x", "lr": 0.001})";
    const std::string b = R"({"a": 1, "m": {"d": 256, "l": [1, 3]}, "t": true, "lr": 0.0001})";
    const auto diff = expnet::diff_configs({a, b});
    QStringList keys;
    for (const auto& d : diff) keys << QString::fromStdString(d.key);
    QCOMPARE(keys, QStringList({"lr", "m.d", "m.l[1]", "s", "t"}));
    QCOMPARE(diff[1].values, (std::vector<std::string>{"128", "256"}));
    QCOMPARE(diff[0].values, (std::vector<std::string>{"0.001", "0.0001"}));
    QCOMPARE(diff[3].values, (std::vector<std::string>{"\"x\"", "—"}));
    QVERIFY(expnet::diff_configs({a, a}).empty());
    QVERIFY(expnet::diff_configs({a}).empty());
    QCOMPARE(expnet::describe_changes(diff, 2), std::string("lr 0.001 -> 0.0001, m.d 128 -> 256 and 3 more"));
  }

  void editsReachTheStore() {
    RunsPage page;
    QVERIFY(waitListing(page));
    const int row = rowOf(page, "beta");
    QSignalSpy done(page.actions(), &RunActions::finished);
    QSignalSpy listed(&page, &RunsPage::listingUpdated);
    auto* model = page.model();
    model->setData(model->index(row, RunsTableModel::Notes), QStringLiteral("lower lr"), Qt::EditRole);
    QVERIFY(done.wait(10000));
    QVERIFY(done.last().at(0).toBool());
    QVERIFY(listed.wait(10000));
    model->setData(model->index(rowOf(page, "beta"), RunsTableModel::Tags), QStringLiteral("ablation, lr"), Qt::EditRole);
    QVERIFY(done.wait(10000));
    QVERIFY(listed.wait(10000));
    model->setData(model->index(rowOf(page, "beta"), RunsTableModel::Name), QStringLiteral("beta-lr"), Qt::EditRole);
    QVERIFY(done.wait(10000));
    QVERIFY(listed.wait(10000));
    expnet::RunStore s((dir_ + "/b/runs.sqlite").toStdString());
    const auto info = s.find_run("beta-lr");
    QCOMPARE(QString::fromStdString(info.notes), QStringLiteral("lower lr"));
    QCOMPARE(QString::fromStdString(info.tags), QStringLiteral("ablation, lr"));
    QVERIFY(rowOf(page, "beta-lr") >= 0);
    // A name taken by another run of the same store is refused with the reason.
    makeRun(dir_ + "/b/runs.sqlite", "beta-2", config("shapes-demo", 5e-4, 128), 10, 1.0, dir_ + "/b2");
    QVERIFY(waitListing(page));
    model->setData(model->index(rowOf(page, "beta-2"), RunsTableModel::Name), QStringLiteral("beta-lr"), Qt::EditRole);
    QVERIFY(done.wait(10000));
    QVERIFY(!done.last().at(0).toBool());
    QVERIFY2(page.actions()->message().contains("beta-lr"), qPrintable(page.actions()->message()));
  }

  void statusComesFromTheTrainersLock() {
    QDir().mkpath(dir_ + "/live");
    const QString store = dir_ + "/live/runs.sqlite";
    const int64_t id = makeRun(store, "held", config("shapes-demo", 1e-3, 128), 10, 1.0, dir_ + "/live");
    expnet::RunStore(store.toStdString()).set_status(id, "running");
    RunsPage page;
    page.openStore(store, false);
    {
      expnet::RunLock lock(store.toStdString(), id);  // as a trainer holds it
      QVERIFY(waitListing(page));
      QCOMPARE(statusOf(page, "held"), QStringLiteral("running"));
      // A running run is not deleted: refused with the reason, nothing moves.
      QVERIFY(page.setCurrentRun(keyOf(page, "held")));
      QSignalSpy done(page.actions(), &RunActions::finished);
      page.actions()->deleteRun();
      QVERIFY(done.size() == 1 || done.wait(10000));
      QVERIFY(!done.last().at(0).toBool());
      QVERIFY2(page.actions()->message().contains("running"), qPrintable(page.actions()->message()));
      QVERIFY(QFileInfo::exists(store));
    }
    // The trainer is gone (the lock with it) and the store still says running: interrupted.
    QVERIFY(waitListing(page));
    QCOMPARE(statusOf(page, "held"), QStringLiteral("interrupted"));
  }

  void deleteMovesToTheTrashAndUndoBringsItBack() {
    RunsPage page;
    QVERIFY(waitListing(page));
    const QString store = dir_ + "/a/runs.sqlite";
    QVERIFY(page.setCurrentRun(keyOf(page, "alpha")));
    QSignalSpy done(page.actions(), &RunActions::finished);
    QSignalSpy listed(&page, &RunsPage::listingUpdated);
    page.actions()->deleteRun();
    QVERIFY(done.wait(20000));
    QVERIFY2(done.last().at(0).toBool(), qPrintable(page.actions()->message()));
    QVERIFY(listed.wait(10000));
    QCOMPARE(rowOf(page, "alpha"), -1);
    QVERIFY(!QFileInfo::exists(dir_ + "/a"));  // the run folder went to the trash
    QVERIFY(QDir(dir_ + "/data/expnet/trash").entryList(QDir::Dirs | QDir::NoDotAndDotDot).size() >= 1);
    page.actions()->undoDelete();
    QVERIFY(done.wait(20000));
    QVERIFY2(done.last().at(0).toBool(), qPrintable(page.actions()->message()));
    QVERIFY(listed.wait(10000));
    QVERIFY(rowOf(page, "alpha") >= 0);
    expnet::RunStore s(store.toStdString());
    QCOMPARE(s.steps(s.find_run("alpha").id).size(), size_t(40));
  }

  void badStoresShowTheirErrorAndAreNotWritten() {
    // A store of a newer version and a file that is not a store at all.
    const QString newer = dir_ + "/newer.sqlite", broken = dir_ + "/broken.sqlite", empty = dir_ + "/empty.sqlite";
    QFile(empty).open(QIODevice::WriteOnly);
    makeRun(newer, "future", config("x", 1e-3, 64), 10, 1.0);
    {
      sqlite3* db = nullptr;
      QCOMPARE(sqlite3_open(newer.toUtf8().constData(), &db), SQLITE_OK);
      QCOMPARE(sqlite3_exec(db, "PRAGMA journal_mode=DELETE; PRAGMA user_version=99", nullptr, nullptr, nullptr), SQLITE_OK);
      sqlite3_close(db);
    }
    QFile f(broken);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QByteArray(8192, '\x5a'));
    f.close();
    const QByteArray newerBytes = fileBytes(newer), brokenBytes = fileBytes(broken);
    RunsPage page;
    page.openStore(newer, false);
    page.openStore(broken, false);
    page.openStore(empty, false);
    QVERIFY(waitListing(page));
    const QJsonArray problems = page.describe().value("problems").toArray();
    QCOMPARE(problems.size(), 3);
    QString text;
    for (const auto& p : problems) text += p.toObject().value("error").toString() + "\n";
    QVERIFY2(text.contains("newer"), qPrintable(text));
    QCOMPARE(rowOf(page, "future"), -1);
    QCOMPARE(fileBytes(newer), newerBytes);
    QCOMPARE(fileBytes(broken), brokenBytes);
    QCOMPARE(QFileInfo(empty).size(), 0);  // read, not made a store
    const auto cli = expnet_test::runProcess(expnet_test::cliPath(), {"runs", "list", "--store", empty});
    QVERIFY(cli.exitCode != 0);
    QVERIFY2(cli.err.contains("empty (0 bytes)"), cli.err.constData());
    QCOMPARE(QFileInfo(empty).size(), 0);
    QVERIFY(rowOf(page, "beta-lr") >= 0);
  }

  void followsALiveChildTrainingAndSeesItKilled() {
    // A real `expnet train` child with this test's data folder: it registers its store itself.
    // The tiny recipe with many more epochs: it runs long enough to be watched, then killed.
    QFile tiny(QStringLiteral(EXPNET_TINY_TRAIN_CONFIG));
    QVERIFY(tiny.open(QIODevice::ReadOnly));
    QJsonObject recipe = QJsonDocument::fromJson(tiny.readAll()).object();
    QJsonObject stage = recipe.value("stages").toArray().first().toObject();
    stage.insert("epochs", 200);
    recipe.insert("stages", QJsonArray{stage});
    const QString configFile = dir_ + "/long_tiny.json";
    QFile configOut(configFile);
    QVERIFY(configOut.open(QIODevice::WriteOnly));
    configOut.write(QJsonDocument(recipe).toJson());
    configOut.close();
    const QString out = dir_ + "/child";
    QProcess child;
    child.setProgram(expnet_test::cliPath());
    child.setArguments({"train", "--config", configFile, "--out", out, "--threads", "1", "--no-progress"});
    child.setProcessChannelMode(QProcess::ForwardedErrorChannel);
    child.start();
    QVERIFY(child.waitForStarted());
    RunsPage page;
    page.setPollIntervals(200, 200);
    page.refresh();
    QSignalSpy details(&page, &RunsPage::detailsUpdated);
    QString key;
    QElapsedTimer clock;
    clock.start();
    qsizetype firstPoints = -1, laterPoints = -1;
    while (clock.elapsed() < 240000 && child.state() == QProcess::Running) {
      QTest::qWait(100);
      if (statusOf(page, "tiny-page") != QLatin1String("running")) continue;
      if (key.isEmpty()) {
        key = keyOf(page, "tiny-page");
        page.selectRuns({key});
      }
      const qsizetype n = page.curves()->points(key, QStringLiteral("loss"), false).size();
      if (n > 0 && firstPoints < 0) firstPoints = n;
      if (firstPoints > 0 && n > firstPoints) {
        laterPoints = n;
        break;
      }
    }
    QVERIFY2(!key.isEmpty(), "the child's run never showed as running");
    QVERIFY2(laterPoints > firstPoints, "the selected live run's curve did not grow");
    ::kill(pid_t(child.processId()), SIGKILL);
    QVERIFY(child.waitForFinished(10000));
    QElapsedTimer after;
    after.start();
    while (after.elapsed() < 10000 && statusOf(page, "tiny-page") != QLatin1String("interrupted")) QTest::qWait(100);
    QCOMPARE(statusOf(page, "tiny-page"), QStringLiteral("interrupted"));
  }

  void actionsReachTheCaptionAndTrainingPages() {
    // The run the previous test killed: its best checkpoint captions on the Caption
    // page, and Resume continues it in the Training page's child process.
    const QString out = dir_ + "/child";
    QVERIFY(QFileInfo::exists(out + "/checkpoints/best.pth"));
    QVERIFY(QFileInfo::exists(out + "/checkpoints/latest.json"));
    StudioContext context;
    MainWindow window(&context);
    auto* page = qobject_cast<RunsPage*>(window.page(QStringLiteral("runs")));
    QVERIFY(window.showPage(QStringLiteral("runs")));
    QVERIFY(waitListing(*page));
    QVERIFY(page->setCurrentRun(keyOf(*page, "tiny-page")));
    page->actions()->openBestCheckpoint();
    QCOMPARE(window.currentPage()->pageId(), QStringLiteral("caption"));
    auto* caption = qobject_cast<CaptionPage*>(window.page(QStringLiteral("caption")));
    QVERIFY(expnet_test::waitUntil([&] { return caption->modelLoaded() && !caption->isBusy(); }, 60000));
    QVERIFY2(context.modelName().contains("best.pth"), qPrintable(context.modelName()));

    auto* training = qobject_cast<TrainingPage*>(window.page(QStringLiteral("training")));
    training->process()->setProgram(expnet_test::cliPath());
    QVERIFY(window.showPage(QStringLiteral("runs")));
    QVERIFY(page->setCurrentRun(keyOf(*page, "tiny-page")));
    page->actions()->resume();
    QCOMPARE(window.currentPage()->pageId(), QStringLiteral("training"));
    QVERIFY2(training->process()->isRunning(), qPrintable(training->describe().value("message").toString()));
    // Live again: the trainer holds the run's lock.
    const QString key = keyOf(*page, "tiny-page");
    QVERIFY2(expnet_test::waitUntil(
        [&] { return expnet::run_is_live(key.section('#', 0, 0).toStdString(), key.section('#', 1).toLongLong()); },
        60000), qPrintable(QJsonDocument(training->describe()).toJson()));
    QSignalSpy ended(training->process(), &TrainingProcess::finished);
    training->stop();
    QVERIFY(ended.wait(60000));
  }
};

QTEST_MAIN(TestRunsPage)
#include "test_runs_page.moc"

#include "ui_scenarios.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTableView>
#include <QScrollBar>
#include <QProcess>
#include <QSpinBox>
#include <QTimer>
#include <QtTest>

#include <cmath>

#include "shell/studiocontext.h"
#include "caption/captionmodel.h"
#include "caption/captionpage.h"
#include "compare/comparepage.h"
#include "datasets/datasetspage.h"
#include "datasets/imagegridmodel.h"
#include "expnet/train/run_store.h"
#include "runs/runcurves.h"
#include "runs/runspage.h"
#include "runs/runstablemodel.h"
#include "training/trainingcharts.h"
#include "training/trainingpage.h"
#include "support/page_driving.h"

namespace {

// Longest interval between two ticks of a 10 ms timer while it runs.
class GapWatch {
 public:
  GapWatch() {
    timer_.setInterval(10);
    QObject::connect(&timer_, &QTimer::timeout, [this] {
      const qint64 now = clock_.elapsed();
      longest_ = std::max(longest_, now - last_);
      last_ = now;
    });
    clock_.start();
    timer_.start();
  }
  qint64 longestMs() const { return longest_; }

 private:
  QTimer timer_;
  QElapsedTimer clock_;
  qint64 last_ = 0, longest_ = 0;
};

}  // namespace

GapResult captionFolderGap(const QString& model, const QString& checkpoint, const QString& vocab, const QString& image,
                           const QString& extraDir, const QString& workDir) {
  GapResult r;
  for (int i = 0; i < 12; ++i)
    if (!QFile::copy(image, workDir + QString("/img%1.png").arg(i, 2, 10, QChar('0')))) {
      r.error = QStringLiteral("cannot copy %1 into %2").arg(image, workDir);
      return r;
    }
  // Images that differ in size and format.
  for (const QString& name : QDir(extraDir).entryList(QDir::Files)) QFile::copy(extraDir + "/" + name, workDir + "/extra_" + name);
  const int images = int(QDir(workDir).entryList(QDir::Files).size());
  StudioContext context;
  CaptionPage page(&context);
  page.show();
  GapWatch watch;
  page.loadModel({model, checkpoint, vocab});
  page.addPaths({workDir});
  if (!expnet_test::waitUntil([&] { return page.modelLoaded() && !page.isBusy(); })) {
    r.error = QStringLiteral("captioning did not finish (model loaded: %1)").arg(page.modelLoaded());
    return r;
  }
  r.longestMs = watch.longestMs();
  r.items = page.model()->rowCount();
  r.ok = r.items == images;
  if (!r.ok) r.error = QStringLiteral("%1 rows for %2 images").arg(r.items).arg(images);
  return r;
}

GapResult trainingGap(const QString& configFile, const QString& cli, const QString& workDir, int steps) {
  GapResult r;
  QFile config(configFile);
  if (!config.open(QIODevice::ReadOnly)) {
    r.error = QStringLiteral("cannot read %1").arg(configFile);
    return r;
  }
  StudioContext context;
  TrainingPage page(&context);
  page.resize(1200, 800);
  page.show();  // chart repaints are part of what is measured
  page.process()->setProgram(cli);
  page.poller()->setIntervalMs(100);
  QString error;
  if (!page.setConfigJson(config.readAll(), &error)) {
    r.error = error;
    return r;
  }
  page.setOutputDir(workDir + "/run");
  page.findChild<QSpinBox*>(QStringLiteral("threads"))->setValue(1);
  int exitCode = -2;
  QObject::connect(&page, &TrainingPage::trainingFinished, [&](int code) { exitCode = code; });
  GapWatch watch;
  page.start();
  if (!expnet_test::waitUntil([&] { return exitCode != -2; })) {
    r.error = QStringLiteral("the training child did not finish");
    return r;
  }
  if (exitCode != 0) {
    r.error = QStringLiteral("the training child exited with %1").arg(exitCode);
    return r;
  }
  expnet_test::waitUntil([&] { return page.charts()->points(QStringLiteral("loss")).size() >= steps; });
  r.longestMs = watch.longestMs();
  r.items = int(page.charts()->points(QStringLiteral("loss")).size());
  r.ok = r.items == steps;
  if (!r.ok) r.error = QStringLiteral("%1 loss points plotted, expected %2").arg(r.items).arg(steps);
  return r;
}

GapResult compareEvaluationGap(const QString& cli, const QString& workDir, int images) {
  GapResult r;
  const QString shapes = workDir + QStringLiteral("/shapes");
  QProcess make;
  make.start(cli, {QStringLiteral("dataset"), QStringLiteral("make-shapes"), QStringLiteral("--out"), shapes,
                   QStringLiteral("--images"), QString::number(images), QStringLiteral("--seed"), QStringLiteral("31")});
  if (!make.waitForFinished(300000) || make.exitCode() != 0) {
    r.error = QStringLiteral("expnet dataset make-shapes failed: %1").arg(QString::fromUtf8(make.readAllStandardError()));
    return r;
  }
  StudioContext context;
  ComparePage page(&context);
  page.resize(1200, 800);
  page.show();  // slot states, progress and the charts' repaints are part of what is measured
  GapWatch watch;
  page.evaluateDataset(shapes, QStringLiteral("all"), images);
  if (!expnet_test::waitUntil([&] { return !page.isBusy(); })) {
    r.error = QStringLiteral("the evaluation did not finish");
    return r;
  }
  r.longestMs = watch.longestMs();
  const QJsonObject evaluation = page.describe().value(QStringLiteral("evaluation")).toObject();
  r.items = evaluation.value(QStringLiteral("done")).toInt();
  r.ok = evaluation.value(QStringLiteral("state")).toString() == QStringLiteral("done") && r.items == images;
  if (!r.ok)
    r.error = QStringLiteral("evaluation %1 after %2 of %3 images: %4")
                  .arg(evaluation.value(QStringLiteral("state")).toString())
                  .arg(r.items)
                  .arg(images)
                  .arg(evaluation.value(QStringLiteral("message")).toString());
  return r;
}

namespace {
// `images` entries over the 40 files of a small shapes set: many rows, few files.
QString makeRepeatedShapes(const QString& cli, const QString& workDir, int images, QString* error) {
  const QString shapes = workDir + QStringLiteral("/shapes");
  QProcess make;
  make.start(cli, {QStringLiteral("dataset"), QStringLiteral("make-shapes"), QStringLiteral("--out"), shapes,
                   QStringLiteral("--images"), QStringLiteral("40"), QStringLiteral("--seed"), QStringLiteral("32")});
  if (!make.waitForFinished(300000) || make.exitCode() != 0) {
    *error = QStringLiteral("expnet dataset make-shapes failed: %1").arg(QString::fromUtf8(make.readAllStandardError()));
    return {};
  }
  QFile source(shapes + QStringLiteral("/dataset_coco.json"));
  if (!source.open(QIODevice::ReadOnly)) {
    *error = QStringLiteral("cannot read %1").arg(source.fileName());
    return {};
  }
  const QJsonArray base = QJsonDocument::fromJson(source.readAll()).object().value(QStringLiteral("images")).toArray();
  QJsonArray entries;
  for (int i = 0; i < images; ++i) {
    QJsonObject entry = base[i % base.size()].toObject();
    entry.insert(QStringLiteral("cocoid"), i + 1);
    entry.insert(QStringLiteral("split"), i % 10 == 0 ? QStringLiteral("val") : QStringLiteral("train"));
    entries.append(entry);
  }
  QFile big(shapes + QStringLiteral("/big.json"));
  if (!big.open(QIODevice::WriteOnly) ||
      big.write(QJsonDocument(QJsonObject{{"dataset", "shapes"}, {"images", entries}}).toJson(QJsonDocument::Compact)) < 0) {
    *error = QStringLiteral("cannot write %1").arg(big.fileName());
    return {};
  }
  return big.fileName();
}
}  // namespace

GapResult datasetsGap(const QString& cli, const QString& workDir, const QString& dataset, int images, int evaluate,
                      DatasetsGap* figures) {
  GapResult r;
  const QString file = dataset.isEmpty() ? makeRepeatedShapes(cli, workDir, images, &r.error) : dataset;
  if (file.isEmpty()) return r;
  StudioContext context;
  GapWatch watch;
  // Kept until the figures are taken: closing an index checkpoints its
  // thumbnails into the file, which the page's destructor waits for (at exit).
  DatasetsPage building(&context);
  building.show();
  building.openDataset(file);
  if (!expnet_test::waitUntil([&] { return !building.isBusy(); })) {
    r.error = QStringLiteral("indexing did not finish");
    return r;
  }
  if (!building.describe().value(QStringLiteral("error")).toString().isEmpty()) {
    r.error = building.describe().value(QStringLiteral("error")).toString();
    return r;
  }
  building.hide();
  DatasetsPage page(&context);
  page.resize(1200, 800);
  page.show();
  QElapsedTimer firstScreen;
  firstScreen.start();
  page.openDataset(file);
  if (!expnet_test::waitUntil([&] { return page.gridFilled(); })) {
    r.error = QStringLiteral("opening the indexed set did not finish");
    return r;
  }
  figures->firstScreenMs = firstScreen.elapsed();
  expnet_test::waitUntil([&] { return !page.isBusy(); });  // the statistics too
  r.items = int(page.grid()->total());
  if (dataset.isEmpty() && r.items != images) {
    r.error = QStringLiteral("%1 rows for %2 images").arg(r.items).arg(images);
    return r;
  }
  // Scroll through the first 5,000 rows (or all), a page step at a time, 60 times a second.
  auto* view = page.findChild<QTableView*>(QStringLiteral("imageGrid"));
  auto* bar = view->verticalScrollBar();
  GapWatch scrolling;
  while (bar->value() < bar->maximum() && view->rowAt(0) * page.grid()->columns() < 5000) {
    bar->setValue(bar->value() + bar->pageStep());
    QTest::qWait(16);
  }
  expnet_test::waitUntil([&] { return !page.isBusy(); });
  figures->scrollLongestMs = scrolling.longestMs();
  if (evaluate > 0) {
    page.evaluate(QStringLiteral("demo"), QStringLiteral("val"), evaluate);
    if (!expnet_test::waitUntil([&] { return !page.isBusy(); })) {
      r.error = QStringLiteral("the evaluation did not finish");
      return r;
    }
  }
  r.longestMs = watch.longestMs();
  r.ok = true;
  return r;
}

GapResult runsGap(const QString& workDir, int runs, int steps, RunsGap* figures) {
  GapResult r;
  // A data folder of its own: the runs that earlier scenarios trained are not listed.
  qputenv("XDG_DATA_HOME", (workDir + QStringLiteral("/data")).toUtf8());
  const QString store = workDir + QStringLiteral("/runs.sqlite");
  try {
    expnet::RunStore s(store.toStdString());
    for (int k = 0; k < runs; ++k) {
      const std::string name = "run-" + std::to_string(k);
      const std::string config = R"({"name": "shapes-demo", "model": {"d_model": 128, "N_enc": 2, "N_dec": 2},
          "stages": [{"name": "xe", "lr": )" + std::to_string(1e-4 * (k + 1)) + "}]}";
      const int64_t id = s.create_run(name, config, (workDir + QStringLiteral("/") + QString::fromStdString(name)).toStdString());
      std::vector<expnet::StepRecord> rows(static_cast<size_t>(steps));
      for (int i = 0; i < steps; ++i) {
        auto& row = rows[size_t(i)];
        row.run = id;
        row.epoch = i / 1000;
        row.step = i + 1;
        row.loss = 4.0 / (1.0 + 0.001 * (k + 1) * i) + 0.05 * std::sin(i * 0.7 + k);
        row.lr = 1e-4 * (k + 1);
        row.images_per_s = 90 + (i + k) % 20;
        row.wall_s = 0.1 * (i + 1);
      }
      s.log_steps(rows);
      for (int e = 0; e < steps / 1000; ++e) {
        expnet::ValidationRecord v;
        v.run = id;
        v.epoch = e;
        v.step = (e + 1) * 1000;
        v.cider_d = 0.1 * (e + 1) + 0.01 * k;
        v.bleu4 = 0.02 * (e + 1);
        s.log_validation(v);
      }
      s.set_status(id, "finished");
    }
  } catch (const std::exception& e) {
    r.error = QString::fromStdString(e.what());
    return r;
  }
  RunsPage page;
  page.resize(1400, 900);
  page.show();
  GapWatch watch;
  QElapsedTimer clock;
  clock.start();
  page.openStore(store, false);
  if (!expnet_test::waitUntil([&] { return page.listed() && !page.isBusy() && page.model()->rowCount() == runs; }, 60000)) {
    r.error = QStringLiteral("the page did not list the %1 runs (%2 rows)").arg(runs).arg(page.model()->rowCount());
    return r;
  }
  figures->listMs = clock.restart();
  page.table()->selectAll();
  if (!expnet_test::waitUntil([&] { return !page.isBusy() && page.curves()->runKeys().size() == runs; }, 60000)) {
    r.error = QStringLiteral("the curves of %1 runs were not drawn (%2)").arg(runs).arg(page.curves()->runKeys().size());
    return r;
  }
  figures->overlayMs = clock.elapsed();
  page.curves()->setXAxis(RunCurves::XAxis::Epoch);
  QTest::qWait(50);
  page.curves()->setSmoothing(0.9);
  QTest::qWait(50);
  page.curves()->setLogScale(true);
  QTest::qWait(50);
  page.curves()->setXAxis(RunCurves::XAxis::WallTime);
  QTest::qWait(50);
  page.curves()->showReadout(QStringLiteral("loss"), steps / 2.0);
  QTest::qWait(50);
  page.setFilterText(QStringLiteral("run-1"));
  QTest::qWait(50);
  page.setFilterText(QString());
  QTest::qWait(200);
  r.longestMs = watch.longestMs();
  r.items = int(page.curves()->runKeys().size()) * steps;
  r.ok = true;
  return r;
}

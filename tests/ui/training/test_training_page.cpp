// The Training page driven as a user would: a tiny recipe started from the
// form runs in a real `expnet train` child; the plotted points must be the run
// store's rows (read here through RunStore directly, not through the page);
// Stop leaves a checkpoint, Resume finishes the run; a run folder opens from
// the store; the studio's --screenshot shows it.
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QSettings>
#include <QTimer>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTableWidget>
#include <QtTest>

#include "shell/mainwindow.h"
#include "shell/studiocontext.h"
#include "expnet/train/run_store.h"
#include "support/fixtures.h"
#include "support/studio_screenshot.h"
#include "training/trainingcharts.h"
#include "training/trainingpage.h"

namespace {
constexpr int kWaitMs = 120000;

QByteArray tinyConfig() {
  QFile file(QStringLiteral(EXPNET_TRAINPAGE_TEST_DIR "/tiny_page.json"));
  return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

QPushButton* button(TrainingPage& page, const char* name) { return page.findChild<QPushButton*>(QString::fromLatin1(name)); }

// Plotted (x, y) must equal the store's rows: same steps, same values.
void compareWithStore(const TrainingPage& page, const QString& storePath, const QString& runName) {
  expnet::RunStore store(storePath.toStdString());
  const auto run = store.find_run(runName.toStdString());
  const auto rows = store.steps(run.id);
  const auto validations = store.validations(run.id);
  const QVector<QPointF> loss = page.charts()->points(QStringLiteral("loss"));
  const QVector<QPointF> lr = page.charts()->points(QStringLiteral("lr"));
  QCOMPARE(loss.size(), qsizetype(rows.size()));
  QCOMPARE(lr.size(), qsizetype(rows.size()));
  for (size_t i = 0; i < rows.size(); ++i) {
    QCOMPARE(loss[qsizetype(i)].x(), double(rows[i].step));
    QCOMPARE(loss[qsizetype(i)].y(), rows[i].loss);
    QCOMPARE(lr[qsizetype(i)].y(), rows[i].lr);
  }
  const QVector<QPointF> cider = page.charts()->points(QStringLiteral("cider_d"));
  QCOMPARE(cider.size(), qsizetype(validations.size()));
  for (size_t i = 0; i < validations.size(); ++i) QCOMPARE(cider[qsizetype(i)].y(), validations[i].cider_d);
}
}  // namespace

class TestTrainingPage : public QObject {
  Q_OBJECT
 private:
  QString runDir_;  // the run the first test leaves finished, reused by the later ones

 private slots:
  void initTestCase() { QVERIFY2(!tinyConfig().isEmpty(), "tests/ui/training/tiny_page.json is missing"); }

  void progressLineOfTheTrainerParses() {
    TrainProgressLine line;
    QVERIFY(TrainProgressLine::parse(
        "[xe] epoch 2/8 [######..................] 12/40 37.5 img/s ETA 0m21s loss 2.1034 CIDEr-D 0.012", &line));
    QCOMPARE(line.stage, QString("xe"));
    QCOMPARE(line.epoch, 2);
    QCOMPARE(line.epochs, 8);
    QCOMPARE(line.done, 12);
    QCOMPARE(line.total, 40);
    QCOMPARE(line.imagesPerSecond, 37.5);
    QCOMPARE(line.loss, 2.1034);
    QVERIFY(!TrainProgressLine::parse("[12:00:00] info stage xe epoch 1: loss 2.0", &line));
  }

  void presetsFillTheForm() {
    StudioContext context;
    TrainingPage page(&context);
    page.applyPreset(QStringLiteral("paper"));
    auto* stages = page.findChild<QTableWidget*>(QStringLiteral("stages"));
    QCOMPARE(stages->columnCount(), 4);  // stages A-D
    QCOMPARE(stages->item(0, 0)->text(), QString("A"));
    page.applyPreset(QStringLiteral("shapes-demo"));
    QCOMPARE(stages->columnCount(), 2);
    QString error;
    const QJsonObject config = page.formConfig(&error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    QCOMPARE(config.value("dataset").toString(), QString("shapes"));
  }

  // The recipe form's layer kinds become the model object's keys, checked by the engine.
  void layerKindsGoIntoTheModel() {
    StudioContext context;
    TrainingPage page(&context);
    QVERIFY(page.setConfigJson(tinyConfig()));
    auto* encoder = page.findChild<QComboBox*>(QStringLiteral("encoderLayer"));
    auto* decoder = page.findChild<QComboBox*>(QStringLiteral("decoderLayer"));
    QVERIFY(encoder && decoder);
    QCOMPARE(encoder->currentText(), QString("(the model's own)"));
    encoder->setCurrentText(QStringLiteral("ngsan"));
    decoder->setCurrentText(QStringLiteral("self_attention"));
    QString error;
    QJsonObject model = page.formConfig(&error).value("model").toObject();
    QVERIFY2(error.isEmpty(), qPrintable(error));
    QCOMPARE(model.value("encoder_layer").toString(), QString("ngsan"));
    QCOMPARE(model.value("decoder_layer").toString(), QString("self_attention"));
    QCOMPARE(model.value("d_model").toInt(), 32);  // the rest is the config's model
    // One dynamic expansion takes one NE: the groups [4, 8] become [12].
    encoder->setCurrentText(QStringLiteral("dynamic_expansion"));
    model = page.formConfig(&error).value("model").toObject();
    QVERIFY2(error.isEmpty(), qPrintable(error));
    QCOMPARE(model.value("num_exp_enc_list").toArray(), QJsonArray({12}));
    // A preset name as the model works too, and a loaded config shows its kinds.
    page.applyPreset(QStringLiteral("shapes-ablation"));
    encoder->setCurrentText(QStringLiteral("self_attention"));
    const QJsonObject config = page.formConfig(&error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    QVERIFY(page.setConfigJson(QJsonDocument(config).toJson()));
    QCOMPARE(encoder->currentText(), QString("self_attention"));
  }

  void badFieldIsRefusedWithTheEnginesMessage() {
    StudioContext context;
    TrainingPage page(&context);
    QVERIFY(page.setConfigJson(tinyConfig()));
    page.setOutputDir(expnet_test::makeTempDir(QStringLiteral("trainpage_bad")) + "/run");
    auto* stages = page.findChild<QTableWidget*>(QStringLiteral("stages"));
    stages->item(1, 0)->setText(QStringLiteral("sgd"));  // objective
    button(page, "start")->click();
    QVERIFY(!page.process()->isRunning());
    const QString message = page.findChild<QLabel*>(QStringLiteral("message"))->text();
    QVERIFY2(message.contains("'objective' must be xe, scst or pnaic"), qPrintable(message));
    stages->item(1, 0)->setText(QStringLiteral("xe"));
    stages->item(4, 0)->setText(QStringLiteral("eight"));  // batch
    button(page, "start")->click();
    QVERIFY(!page.process()->isRunning());
    QVERIFY(page.findChild<QLabel*>(QStringLiteral("message"))->text().contains("'eight' is not a number"));
  }

  void trainerErrorsReachThePageAndTheLog() {
    StudioContext context;
    TrainingPage page(&context);
    page.process()->setProgram(expnet_test::cliPath());
    QVERIFY(page.setConfigJson(tinyConfig()));
    page.findChild<QLineEdit*>(QStringLiteral("dataset"))->setText(QStringLiteral("/no/such/dataset.json"));
    page.setOutputDir(expnet_test::makeTempDir(QStringLiteral("trainpage_fail")) + "/run");
    QSignalSpy finished(&page, &TrainingPage::trainingFinished);
    button(page, "start")->click();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, kWaitMs);
    QCOMPARE(finished.at(0).at(0).toInt(), 1);  // `expnet` prints "error: ..." and exits 1
    QVERIFY(page.findChild<QLabel*>(QStringLiteral("message"))->text().contains("failed"));
    const QString log = page.findChild<QPlainTextEdit*>(QStringLiteral("log"))->toPlainText();
    QVERIFY2(log.contains("/no/such/dataset.json"), qPrintable(log));
    QVERIFY(button(page, "start")->isEnabled());

    TrainingPage missing(&context);
    missing.process()->setProgram(QStringLiteral("/no/such/expnet"));
    QVERIFY(missing.setConfigJson(tinyConfig()));
    missing.setOutputDir(expnet_test::makeTempDir(QStringLiteral("trainpage_noprogram")) + "/run");
    button(missing, "start")->click();
    QTRY_VERIFY_WITH_TIMEOUT(missing.findChild<QLabel*>(QStringLiteral("message"))->text().contains("EXPNET_CLI"), 10000);
    QVERIFY(!missing.process()->isRunning());
  }

  void startPlotStopCheckpointResume() {
    StudioContext context;
    TrainingPage page(&context);
    page.resize(1200, 800);
    page.show();
    page.process()->setProgram(expnet_test::cliPath());
    page.poller()->setIntervalMs(100);
    QVERIFY(page.setConfigJson(tinyConfig()));
    runDir_ = expnet_test::makeTempDir(QStringLiteral("trainpage_run")) + "/run";
    page.setOutputDir(runDir_);
    page.findChild<QSpinBox*>(QStringLiteral("threads"))->setValue(1);
    QSignalSpy finished(&page, &TrainingPage::trainingFinished);

    button(page, "start")->click();
    QVERIFY(page.process()->isRunning());
    QVERIFY(!button(page, "start")->isEnabled());
    QVERIFY(button(page, "stop")->isEnabled());
    // Stop once a few steps are plotted: SIGINT, a checkpoint, exit status 130.
    QTRY_VERIFY_WITH_TIMEOUT(page.charts()->points(QStringLiteral("loss")).size() >= 3, kWaitMs);
    button(page, "stop")->click();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, kWaitMs);
    QCOMPARE(finished.at(0).at(0).toInt(), 130);
    QFile latest(runDir_ + "/checkpoints/latest.json");
    QVERIFY(latest.open(QIODevice::ReadOnly));
    const QString stem = QJsonDocument::fromJson(latest.readAll()).object().value("checkpoint").toString();
    QVERIFY(QFileInfo::exists(runDir_ + "/checkpoints/" + stem + ".pth"));
    QVERIFY(QFileInfo::exists(runDir_ + "/checkpoints/" + stem + ".state"));
    QTRY_COMPARE_WITH_TIMEOUT(QString::fromStdString(page.snapshot().run.status), QString("interrupted"), kWaitMs);
    QTRY_COMPARE_WITH_TIMEOUT(page.charts()->points(QStringLiteral("loss")).size(), qsizetype(page.snapshot().steps.size()), 5000);
    compareWithStore(page, runDir_ + "/runs.sqlite", "tiny-page");
    const int stoppedAt = int(page.snapshot().steps.size());
    QVERIFY(stoppedAt < 4 * 3 + 2);  // stopped before the end

    // Resume runs to the end: 4 x 3 XE steps + 2 SCST steps.
    QVERIFY(button(page, "resume")->isEnabled());
    button(page, "resume")->click();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 2, kWaitMs);
    QCOMPARE(finished.at(1).at(0).toInt(), 0);
    QVERIFY(QFileInfo::exists(runDir_ + "/final.pth"));
    QTRY_COMPARE_WITH_TIMEOUT(QString::fromStdString(page.snapshot().run.status), QString("finished"), kWaitMs);
    QTRY_COMPARE_WITH_TIMEOUT(page.charts()->points(QStringLiteral("loss")).size(), qsizetype(14), 5000);
    compareWithStore(page, runDir_ + "/runs.sqlite", "tiny-page");
    QCOMPARE(page.charts()->points(QStringLiteral("cider_d")).size(), qsizetype(5));  // one per epoch

    const QJsonObject d = page.describe();
    QCOMPARE(d.value("run").toString(), QString("tiny-page"));
    QCOMPARE(d.value("status").toString(), QString("finished"));
    QCOMPARE(d.value("progress").toObject().value("fraction").toDouble(), 1.0);
    QVERIFY(d.value("log_lines").toInt() > 0);
    QVERIFY(!d.value("samples").toArray().isEmpty());
    bool sawLoss = false;
    for (const auto& s : d.value("series").toArray())
      if (s.toObject().value("name") == "loss") {
        sawLoss = true;
        QCOMPARE(s.toObject().value("points").toInt(), 14);
      }
    QVERIFY(sawLoss);
    QVERIFY(!button(page, "resume")->isEnabled());  // nothing left to resume
  }

  // Quitting while a trainer runs here asks first: Cancel keeps it training; "Stop with a
  // checkpoint, then quit" stops it with a checkpoint and the window closes once it has.
  // The next start shows that run again (its curves), ready to resume.
  void quittingWhileTrainingAsksFirst() {
    QCoreApplication::setOrganizationName("expnet-test-trainpage-quit");  // not the user's settings
    QSettings().clear();
    StudioContext context;
    auto window = std::make_unique<MainWindow>(&context);
    auto* page = qobject_cast<TrainingPage*>(window->page("training"));
    page->process()->setProgram(expnet_test::cliPath());
    page->poller()->setIntervalMs(100);
    QVERIFY(page->setConfigJson(tinyConfig()));
    const QString dir = expnet_test::makeTempDir(QStringLiteral("trainpage_quit")) + "/run";
    page->setOutputDir(dir);
    page->findChild<QSpinBox*>(QStringLiteral("threads"))->setValue(1);
    window->show();
    window->showPage("training");
    button(*page, "start")->click();
    QTRY_VERIFY_WITH_TIMEOUT(page->charts()->points(QStringLiteral("loss")).size() >= 2, kWaitMs);
    // The question, answered as a user would once it is on screen.
    const auto answer = [](bool stop) {
      auto* timer = new QTimer;
      timer->setInterval(100);
      QObject::connect(timer, &QTimer::timeout, [timer, stop] {
        QMessageBox* box = nullptr;
        for (QWidget* w : QApplication::topLevelWidgets())
          if (w->objectName() == "quitQuestion" && w->isVisible()) box = qobject_cast<QMessageBox*>(w);
        if (!box) return;
        timer->stop();
        timer->deleteLater();
        if (!stop) return box->button(QMessageBox::Cancel)->click();
        for (QAbstractButton* b : box->buttons())
          if (b->text().startsWith("Stop with a checkpoint")) b->click();
      });
      timer->start();
    };
    answer(false);
    QVERIFY(!window->close());
    QVERIFY(window->isVisible() && page->process()->isRunning());
    answer(true);
    QVERIFY(!window->close());  // not yet: once the checkpoint is written
    QTRY_VERIFY_WITH_TIMEOUT(!window->isVisible(), kWaitMs);
    QVERIFY(!page->process()->isRunning());
    QVERIFY(QFileInfo::exists(dir + "/checkpoints/latest.json"));
    const size_t steps = page->snapshot().steps.size();

    window.reset();  // the studio started again: the run shown before is shown again
    auto again = std::make_unique<MainWindow>(&context);
    again->restoreSettings();
    auto* shown = qobject_cast<TrainingPage*>(again->page("training"));
    QTRY_VERIFY_WITH_TIMEOUT(shown->snapshot().found, 10000);
    QCOMPARE(QString::fromStdString(shown->snapshot().run.status), QStringLiteral("interrupted"));
    QCOMPARE(shown->snapshot().steps.size(), steps);
    QTRY_COMPARE_WITH_TIMEOUT(shown->charts()->points(QStringLiteral("loss")).size(), qsizetype(steps), 5000);
    QVERIFY(button(*shown, "resume")->isEnabled());
    QSettings().clear();
  }

  void startRefusesAFolderWithCheckpoints() {
    if (runDir_.isEmpty()) QSKIP("needs the run of startPlotStopCheckpointResume");
    StudioContext context;
    TrainingPage page(&context);
    page.process()->setProgram(expnet_test::cliPath());
    QVERIFY(page.setConfigJson(tinyConfig()));
    page.setOutputDir(runDir_);
    button(page, "start")->click();
    QVERIFY(!page.process()->isRunning());
    QVERIFY(page.findChild<QLabel*>(QStringLiteral("message"))->text().contains("already has checkpoints"));
  }

  void openARunFolderFromTheStore() {
    if (runDir_.isEmpty()) QSKIP("needs the run of startPlotStopCheckpointResume");
    StudioContext context;
    TrainingPage page(&context);
    QVERIFY(page.openRun(runDir_));
    QVERIFY(page.isBusy());
    QTRY_VERIFY_WITH_TIMEOUT(!page.isBusy(), kWaitMs);
    QCOMPARE(QString::fromStdString(page.snapshot().run.name), QString("tiny-page"));
    compareWithStore(page, runDir_ + "/runs.sqlite", "tiny-page");
    QCOMPARE(page.findChild<QLineEdit*>(QStringLiteral("runName"))->text(), QString("tiny-page"));  // the run's recipe
    QVERIFY(!page.openRun(runDir_ + "/no-such-folder"));
  }

  // Two runs of one recipe in two folders, as many rows each: after following one,
  // opening the other shows the other's curves and runs, never the first's.
  void switchingRunsShowsTheNamedRunsCurves() {
    const QString root = expnet_test::makeTempDir("trainpage_two_runs");
    QStringList folders;
    for (const QString& name : {QStringLiteral("run-a"), QStringLiteral("run-b")}) {
      const QString folder = root + "/" + name;
      QDir().mkpath(folder);
      expnet::RunStore store((folder + "/runs.sqlite").toStdString());
      const int64_t id = store.create_run(name.toStdString(), tinyConfig().toStdString(), folder.toStdString());
      store.add_stage(id, 0, "xe", "{}");
      std::vector<expnet::StepRecord> steps;
      for (int64_t step = 1; step <= 30; ++step) {
        expnet::StepRecord r;
        r.run = id;
        r.step = step;
        r.loss = (name == "run-a" ? 5.0 : 9.0) / double(step);
        r.lr = name == "run-a" ? 1e-3 : 2e-3;
        steps.push_back(r);
      }
      store.log_steps(steps);
      expnet::ValidationRecord v;
      v.run = id;
      v.cider_d = name == "run-a" ? 0.25 : 0.75;
      store.log_validation(v);
      store.set_status(id, "finished");
      folders << folder;
    }
    StudioContext context;
    TrainingPage page(&context);
    for (const int which : {0, 1, 0}) {
      QVERIFY(page.openRun(folders[which]));
      const QString name = which == 0 ? "run-a" : "run-b";
      QTRY_VERIFY_WITH_TIMEOUT(!page.isBusy() && QString::fromStdString(page.snapshot().run.name) == name, kWaitMs);
      compareWithStore(page, folders[which] + "/runs.sqlite", name);
      const QJsonArray runs = page.describe()["runs"].toArray();
      QCOMPARE(runs.size(), 1);
      QCOMPARE(runs[0].toObject()["name"].toString(), name);
    }
  }

  void studioScreenshotOfARun() {
    if (runDir_.isEmpty()) QSKIP("needs the run of startPlotStopCheckpointResume");
    const QString png = expnet_test::makeTempDir(QStringLiteral("trainpage_shot")) + "/training.png";
    const auto r = expnet_test::runStudioScreenshot(
        png, {"--page", "training", "--run", runDir_, "--threads", "1", "--size", "1024x640"});
    QVERIFY2(r.finished && r.exitCode == 0, r.err.constData());
    QJsonObject d;
    expnet_test::readScreenshotDescription(png, &d);
    if (QTest::currentTestFailed()) return;
    // A run shown (its title, progress line, charts) still fits a 1024-pixel screen: no sideways scrolling.
    QVERIFY2(d.value("page_least_width").toInt() <= d.value("page_shown_width").toInt(),
             qPrintable(QStringLiteral("%1 > %2").arg(d.value("page_least_width").toInt()).arg(d.value("page_shown_width").toInt())));
    const QJsonObject content = d.value("content").toObject();
    QCOMPARE(content.value("run").toString(), QString("tiny-page"));
    QCOMPARE(content.value("step_rows").toInt(), 14);
    // The studio finds the `expnet` built next to it.
    QCOMPARE(QFileInfo(content.value("process").toObject().value("program").toString()).canonicalFilePath(),
             QFileInfo(expnet_test::cliPath()).canonicalFilePath());
    const auto bad = expnet_test::runStudioScreenshot(png, {"--page", "training", "--run", runDir_ + "/nope"});
    QVERIFY(bad.exitCode != 0);
    QVERIFY(bad.err.contains("not a run folder"));
  }
};

QTEST_MAIN(TestTrainingPage)
#include "test_training_page.moc"

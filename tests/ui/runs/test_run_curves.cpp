// The Runs page's curve overlay (RunCurves) and the EMA it shares with the
// Training page (smoothCurve): the EMA against hand-computed values, plotted
// points equal to the records, the epoch axis across stages, the wall-time
// axis leaving out older runs with a note, the log toggle, the hover read-out,
// a live run's update, 50 runs x 10,000 steps timed, and screenshots in the
// light and dark palettes ($EXPNET_TEST_TMP/runcurves/*.png).
#include <QApplication>
#include <QCheckBox>
#include <QElapsedTimer>
#include <QJsonObject>
#include <QSlider>
#include <QStyle>
#include <QStyleFactory>
#include <QtTest>
#include <qcustomplot.h>

#include <cmath>
#include <random>

#include "common/curvesmoothing.h"
#include "common/theme.h"
#include "runs/runcurves.h"
#include "support/fixtures.h"

namespace {
struct StageShape {
  int epochs, stepsPerEpoch;
};

// The rows of a run under construction (its own, not shared: tests fill them in place).
RunRows& rowsOf(RunSeriesInput& run) {
  if (run.rows.use_count() != 1) run.rows = std::make_shared<RunRows>(*run.rows);
  return const_cast<RunRows&>(*run.rows);  // made non-const above or by RunSeriesInput's default
}

// A plausible run: loss falling with noise (XE, then a lower SCST stage), lr
// with warm-up and steps, throughput around `speed`, CIDEr-D rising per epoch.
RunSeriesInput makeRun(const QString& key, const QString& label, unsigned seed, const QVector<StageShape>& stages,
                       bool wallTime = true, double speed = 120, int stopAfter = -1) {
  RunSeriesInput run;
  run.key = key;
  run.label = label;
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0, 1);
  const double rate = 1.0 + 0.15 * (seed % 5), floor = 1.5 + 0.1 * (seed % 3);
  int64_t step = 0;
  double wall = 0;
  int epochsDone = 0;
  for (int stage = 0; stage < stages.size(); ++stage) {
    for (int epoch = 0; epoch < stages[stage].epochs; ++epoch) {
      for (int i = 0; i < stages[stage].stepsPerEpoch; ++i) {
        if (stopAfter >= 0 && step >= stopAfter) return run;
        ++step;
        expnet::StepRecord s;
        s.stage = stage;
        s.epoch = epoch;
        s.step = step;
        const double t = double(step) / 1000.0;
        s.loss = (stage == 0 ? floor + 3.5 * std::exp(-t * rate) : floor * 0.7) + 0.15 * noise(rng);
        s.lr = (stage == 0 ? 5e-4 : 1e-4) * std::min(1.0, step / 200.0) * std::pow(0.8, epoch / 3);
        s.images_per_s = speed + 6 * noise(rng);
        s.grad_norm = 1;
        wall += 24.0 / s.images_per_s;
        s.wall_s = wallTime ? wall : 0;
        rowsOf(run).steps.push_back(s);
      }
      expnet::ValidationRecord v;
      v.stage = stage;
      v.epoch = epoch;
      v.step = step;
      ++epochsDone;
      v.cider_d = 0.4 + 2.2 * (1 - std::exp(-0.25 * rate * epochsDone)) + 0.05 * noise(rng);
      v.bleu4 = 0.1 + 0.25 * (1 - std::exp(-0.3 * rate * epochsDone)) + 0.01 * noise(rng);
      rowsOf(run).validations.push_back(v);
    }
  }
  return run;
}

expnet::StepRecord stepRow(int64_t stage, int64_t epoch, int64_t step, double loss, double wall = 0) {
  expnet::StepRecord s;
  s.stage = stage;
  s.epoch = epoch;
  s.step = step;
  s.loss = loss;
  s.lr = 1e-4 * double(step);
  s.images_per_s = 100 + double(step);
  s.wall_s = wall;
  return s;
}

expnet::ValidationRecord validationRow(int64_t stage, int64_t epoch, int64_t step, double cider) {
  expnet::ValidationRecord v;
  v.stage = stage;
  v.epoch = epoch;
  v.step = step;
  v.cider_d = cider;
  v.bleu4 = cider / 10;
  return v;
}

QVector<double> xs(const QVector<QPointF>& points) {
  QVector<double> out;
  for (const auto& p : points) out << p.x();
  return out;
}

QVector<double> ys(const QVector<QPointF>& points) {
  QVector<double> out;
  for (const auto& p : points) out << p.y();
  return out;
}

// Exactly equal points (QPointF's == is fuzzy).
bool same(const QVector<QPointF>& a, const QVector<QPointF>& b) { return xs(a) == xs(b) && ys(a) == ys(b); }

bool near(double a, double b) { return std::abs(a - b) < 1e-9 * std::max(1.0, std::abs(b)); }

void setPalette(bool dark) {
  QApplication::setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
  QApplication::setPalette(dark ? Theme::darkPalette() : QApplication::style()->standardPalette());
}
}  // namespace

class TestRunCurves : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { setPalette(false); }

  void emaAgainstHandComputedValues() {
    const double nan = std::nan("");
    // Weight 0: the values themselves.
    QCOMPARE(smoothCurve({3, 1, 4}, 0), QVector<double>({3, 1, 4}));
    // Weight 0.5: ema 0.5, 1.25, (NaN: unchanged), 2.625 over norms 0.5, 0.75, 0.875.
    const QVector<double> half = smoothCurve({1, 2, nan, 4}, 0.5);
    QCOMPARE(half.size(), 4);
    QVERIFY(near(half[0], 1.0));        // debiased: the first value, not 0.5
    QVERIFY(near(half[1], 5.0 / 3.0));  // 1.25 / 0.75
    QVERIFY(near(half[2], 5.0 / 3.0));  // a NaN adds nothing and repeats the average so far
    QVERIFY(near(half[3], 3.0));        // 2.625 / 0.875
    // Weight 0.9: 10 -> 1 / 0.1; 20 -> (0.9 + 2) / 0.19; 30 -> (2.61 + 3) / 0.271.
    const QVector<double> heavy = smoothCurve({10, 20, 30}, 0.9);
    QVERIFY(near(heavy[0], 10.0));
    QVERIFY(near(heavy[1], 2.9 / 0.19));
    QVERIFY(near(heavy[2], 5.61 / 0.271));
    // Before any finite value there is no average.
    const QVector<double> leading = smoothCurve({nan, INFINITY, 2}, 0.9);
    QVERIFY(std::isnan(leading[0]) && std::isnan(leading[1]));
    QVERIFY(near(leading[2], 2.0));
    QVERIFY(smoothCurve({}, 0.6).isEmpty());
    // A new stage (XE -> SCST) starts the average afresh: its first value is itself, not pulled by XE's.
    const QVector<double> staged = smoothCurve({10, 20, -1, -3}, 0.5, {0, 0, 1, 1});
    QVERIFY(near(staged[1], 20.0 * 0.5 / 0.75 + 10.0 * 0.25 / 0.75));  // (0.25*10 + 0.5*20) / 0.75
    QVERIFY(near(staged[2], -1.0));
    QVERIFY(near(staged[3], (0.25 * -1 + 0.5 * -3) / 0.75));
  }

  void pointsEqualTheRecords() {
    RunCurves curves;
    RunSeriesInput a = makeRun("s#1", "xe-small", 1, {{2, 30}});
    rowsOf(a).steps[7].skipped = true;  // NaN guard: left out of the loss curve only
    rowsOf(a).steps[7].loss = std::nan("");
    RunSeriesInput b = makeRun("s#2", "xe-tiny", 2, {{3, 10}});
    curves.setRuns({a, b});
    QCOMPARE(curves.runKeys(), QStringList({"s#1", "s#2"}));
    for (const RunSeriesInput* run : {&a, &b}) {
      QVector<QPointF> loss, lr, speed, cider, bleu4;
      QVector<double> lossValues;
      for (const auto& s : run->rows->steps) {
        if (!s.skipped) {
          loss << QPointF(double(s.step), s.loss);
          lossValues << s.loss;
        }
        lr << QPointF(double(s.step), s.lr);
        speed << QPointF(double(s.step), s.images_per_s);
      }
      for (const auto& v : run->rows->validations) {
        cider << QPointF(double(v.step), v.cider_d);
        bleu4 << QPointF(double(v.step), v.bleu4);
      }
      QVERIFY(same(curves.points(run->key, "loss"), loss));
      QVERIFY(same(curves.points(run->key, "lr"), lr));
      QVERIFY(same(curves.points(run->key, "images_per_s"), speed));
      QVERIFY(same(curves.points(run->key, "cider_d"), cider));
      QVERIFY(same(curves.points(run->key, "bleu4"), bleu4));
      // The smoothed loss: the shared EMA (default weight 0.6) over the kept values, at their steps.
      const QVector<QPointF> smoothed = curves.points(run->key, "loss", true);
      const QVector<double> expected = smoothCurve(lossValues, 0.6);
      QCOMPARE(xs(smoothed), xs(loss));
      QCOMPARE(ys(smoothed), expected);
      // lr and validations have one line: `smoothed` returns it.
      QVERIFY(same(curves.points(run->key, "lr", true), lr));
    }
    QCOMPARE(curves.points("s#1", "loss").size(), 59);
    QVERIFY(curves.points("nope", "loss").isEmpty());
    QVERIFY(curves.points("s#1", "nope").isEmpty());

    // describe(): every line, smoothed ones flagged, last point as plotted.
    const QJsonArray described = curves.describe();
    QCOMPARE(described.size(), 2 * 7);
    const QJsonObject first = described.first().toObject();
    QCOMPARE(first.value("run").toString(), QString("xe-small"));
    QCOMPARE(first.value("key").toString(), QString("s#1"));
    QCOMPARE(first.value("metric").toString(), QString("loss"));
    QCOMPARE(first.value("smoothed").toBool(), false);
    QCOMPARE(first.value("points").toInt(), 59);
    QCOMPARE(first.value("last").toArray().at(0).toDouble(), 60.0);
    QCOMPARE(first.value("last").toArray().at(1).toDouble(), rowsOf(a).steps.back().loss);
    QCOMPARE(described.at(1).toObject().value("smoothed").toBool(), true);

    // Smoothing 0: the smoothed line is the raw one; the slider follows.
    curves.setSmoothing(0);
    QVERIFY(same(curves.points("s#2", "images_per_s", true), curves.points("s#2", "images_per_s")));
    QCOMPARE(curves.findChild<QSlider*>("curvesSmoothing")->value(), 0);
    curves.findChild<QSlider*>("curvesSmoothing")->setValue(90);
    QCOMPARE(curves.smoothing(), 0.9);
    QCOMPARE(curves.points("s#2", "loss", true).last().y(), smoothCurve(ys(curves.points("s#2", "loss")), 0.9).last());
    QVERIFY(same(curves.points("s#1", "cider_d"), curves.points("s#1", "cider_d", true)));  // not smoothed
  }

  void epochAxisAcrossStages() {
    RunSeriesInput run;
    run.key = "k";
    run.label = "two stages";
    int64_t step = 0;
    // Stage 0: two epochs of 4 steps; stage 1: one epoch of 2 steps and a live second one (1 step so far).
    for (int e = 0; e < 2; ++e)
      for (int i = 0; i < 4; ++i) rowsOf(run).steps.push_back(stepRow(0, e, ++step, 3.0 - 0.1 * double(step)));
    rowsOf(run).validations = {validationRow(0, 0, 4, 1.0), validationRow(0, 1, 8, 1.5)};
    for (int i = 0; i < 2; ++i) rowsOf(run).steps.push_back(stepRow(1, 0, ++step, 1.0));
    rowsOf(run).validations.push_back(validationRow(1, 0, 10, 2.0));
    rowsOf(run).steps.push_back(stepRow(1, 1, ++step, 0.9));
    RunCurves curves;
    curves.setRuns({run});
    curves.setXAxis(RunCurves::XAxis::Epoch);
    QCOMPARE(curves.xAxis(), RunCurves::XAxis::Epoch);
    // Steps at their position in the epoch; stage 1 continues after stage 0's two
    // epochs; the live epoch's single step sits at half of it (its stage's epochs have 2 steps).
    const QVector<double> expected{0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5};
    QCOMPARE(xs(curves.points("k", "loss")), expected);
    QCOMPARE(xs(curves.points("k", "lr")), expected);
    // A validation closes its epoch.
    QCOMPARE(xs(curves.points("k", "cider_d")), QVector<double>({1, 2, 3}));
    QCOMPARE(curves.points("k", "cider_d").last().y(), 2.0);
    QCOMPARE(curves.plot("loss")->xAxis->label(), QString("epoch (all stages)"));
    curves.showReadout("cider_d", 2.1);
    QCOMPARE(curves.readoutText(), QString("Validation CIDEr-D at epoch 2.10: two stages 1.5"));
    // Back to steps: the records' own step numbers.
    curves.setXAxis(RunCurves::XAxis::Step);
    QCOMPARE(xs(curves.points("k", "cider_d")), QVector<double>({4, 8, 10}));
  }

  void wallTimeAxisLeavesOutOlderRuns() {
    RunSeriesInput timed{"t", "timed", QColor()}, old{"o", "old", QColor()};
    for (int i = 1; i <= 4; ++i) {
      rowsOf(timed).steps.push_back(stepRow(0, 0, i, 2.0, 1.5 * i));
      rowsOf(old).steps.push_back(stepRow(0, 0, i, 2.0, 0));
    }
    rowsOf(timed).validations = {validationRow(0, 0, 3, 1.0), validationRow(0, 0, 4, 1.2)};
    rowsOf(old).validations = {validationRow(0, 0, 4, 1.1)};
    RunCurves curves;
    curves.setRuns({timed, old});
    QCOMPARE(curves.note(), QString());  // the step axis needs no wall time
    curves.setXAxis(RunCurves::XAxis::WallTime);
    QCOMPARE(curves.note(), QString("1 run has no wall time (older run store)"));
    auto* note = curves.findChild<QLabel*>("curvesNote");
    QCOMPARE(note->text(), curves.note());
    QVERIFY(!note->isHidden());
    QCOMPARE(note->toolTip(), QString("old"));
    QCOMPARE(xs(curves.points("t", "loss")), QVector<double>({1.5, 3.0, 4.5, 6.0}));
    // Validations take the wall time of the step they followed.
    QCOMPARE(xs(curves.points("t", "cider_d")), QVector<double>({4.5, 6.0}));
    QVERIFY(curves.points("o", "loss").isEmpty());
    QVERIFY(curves.points("o", "cider_d").isEmpty());
    curves.showReadout("loss", 4.4);
    QCOMPARE(curves.readoutText().left(32), QString("Training loss at 0:00:04: timed "));
    QVERIFY(curves.readoutText().endsWith(QString("old –")));
    RunSeriesInput older = old;
    older.key = "o2";
    older.label = "older";
    curves.updateRun(older);
    QCOMPARE(curves.note(), QString("2 runs have no wall time (older run store)"));
    curves.setXAxis(RunCurves::XAxis::Step);
    QCOMPARE(curves.note(), QString());
    QVERIFY(note->isHidden());
  }

  void logScaleToggle() {
    RunCurves curves;
    curves.setRuns({makeRun("a", "a", 3, {{2, 50}})});
    QVERIFY(!curves.logScale());
    curves.setLogScale(true);
    QVERIFY(curves.logScale());
    QVERIFY(curves.findChild<QCheckBox*>("curvesLogScale")->isChecked());
    for (const QString metric : RunCurves::metrics()) {
      const bool log = metric == "loss" || metric == "lr";
      QCOMPARE(curves.plot(metric)->yAxis->scaleType(), log ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
      QCOMPARE(bool(curves.plot(metric)->yAxis->ticker().dynamicCast<QCPAxisTickerLog>()), log);
    }
    QVERIFY(curves.plot("loss")->yAxis->range().lower > 0);
    curves.findChild<QCheckBox*>("curvesLogScale")->setChecked(false);
    QVERIFY(!curves.logScale());
    QCOMPARE(curves.plot("lr")->yAxis->scaleType(), QCPAxis::stLinear);
  }

  // A constant learning rate (a "fixed" schedule) is drawn around its value, not
  // on -2..2 as if it were 0.
  void aConstantSeriesIsDrawnAroundItsValue() {
    RunSeriesInput run = makeRun("c", "c", 4, {{2, 50}});
    for (auto& s : rowsOf(run).steps) s.lr = 1e-3;
    RunCurves curves;
    curves.setRuns({run});
    const QCPRange range = curves.plot("lr")->yAxis->range();
    QVERIFY2(range.lower > 0 && range.lower < 1e-3 && range.upper > 1e-3 && range.upper < 2e-3,
             qPrintable(QString("%1 .. %2").arg(range.lower).arg(range.upper)));
  }

  void readoutListsEveryRun() {
    RunSeriesInput a{"a", "run a", QColor()}, b{"b", "run b", QColor()}, c{"c", "run c", QColor()};
    for (int i = 1; i <= 100; ++i) {
      rowsOf(a).steps.push_back(stepRow(0, 0, i, 2.0 + i * 0.01));
      rowsOf(b).steps.push_back(stepRow(0, 0, i, 3.0));
      if (i <= 10) rowsOf(c).steps.push_back(stepRow(0, 0, i, 4.0));  // stopped early
    }
    RunCurves curves;
    curves.resize(1400, 900);
    curves.setRuns({a, b, c});
    curves.setSmoothing(0);
    // x 49.6: the nearest step is 50 for a and b; c ended at step 10.
    curves.showReadout("loss", 49.6);
    QCOMPARE(curves.readoutText(), QString("Training loss at step 50: run a 2.5 · run b 3 · run c –"));
    curves.showReadout("lr", 7.2);
    QCOMPARE(curves.readoutText(), QString("Learning rate at step 7: run a 0.0007 · run b 0.0007 · run c 0.0007"));
    curves.setSmoothing(0.5);
    curves.showReadout("loss", 2);
    QCOMPARE(curves.readoutText(), QString("Training loss at step 2: run a 2.017 (raw 2.02) · run b 3 (raw 3) · run c 4 (raw 4)"));
    // A live update refreshes what the read-out says.
    rowsOf(b).steps.back().loss = 9;
    rowsOf(b).steps[1].loss = 6;
    curves.updateRun(b);
    QVERIFY(curves.readoutText().contains("run b 5 (raw 6)"));
    curves.hideReadout();
    QVERIFY(!curves.readoutText().contains("run a"));
  }

  void liveUpdateTouchesOneRun() {
    RunCurves curves;
    RunSeriesInput live = makeRun("live", "live", 4, {{3, 100}}, true, 120, 150);
    const RunSeriesInput done = makeRun("done", "done", 5, {{3, 100}});
    curves.setRuns({live, done});
    QCOMPARE(curves.points("live", "lr").size(), 150);
    const QColor colour = curves.plot("loss")->graph(0)->pen().color();
    live = makeRun("live", "live", 4, {{3, 100}}, true, 120, 220);
    curves.updateRun(live);
    QCOMPARE(curves.points("live", "lr").size(), 220);
    QCOMPARE(curves.points("done", "lr").size(), 300);
    QCOMPARE(curves.runKeys(), QStringList({"live", "done"}));
    QCOMPARE(curves.plot("loss")->graph(0)->pen().color(), colour);  // keeps its colour
    curves.updateRun(makeRun("new", "new", 6, {{1, 10}}));
    QCOMPARE(curves.runKeys(), QStringList({"live", "done", "new"}));
  }

  void fiftyRunsOfTenThousandSteps() {
    QVector<RunSeriesInput> runs;
    for (int r = 0; r < 50; ++r)
      runs << makeRun(QString("big#%1").arg(r), QString("run %1").arg(r), unsigned(r), {{10, 1000}}, true, 100 + r);
    RunCurves curves;
    curves.resize(1400, 900);
    curves.show();
    QVERIFY(QTest::qWaitForWindowExposed(&curves));
    QElapsedTimer timer;
    timer.start();
    curves.setRuns(runs);
    const qint64 setMs = timer.elapsed();
    // setRuns queues the charts' redrawing, one chart per event-loop pass: the
    // longest pass is the longest the UI thread is held.
    const auto drain = [&] {
      qint64 longest = 0, total = 0;
      while (curves.replotPending()) {
        QElapsedTimer pass;
        pass.start();
        QCoreApplication::processEvents();
        longest = std::max(longest, pass.elapsed());
        total += pass.elapsed();
      }
      return QString("%1 ms (longest pass %2 ms)").arg(total).arg(longest);
    };
    const QString firstDraw = drain();
    timer.restart();
    curves.setSmoothing(0.8);
    const qint64 smoothMs = timer.elapsed();
    const QString smoothDraw = drain();
    const QSize chartSize = curves.plot("loss")->size();
    timer.restart();
    curves.showReadout("loss", 5000);
    const qint64 hoverMs = timer.elapsed();
    // The read-out's lines must not resize (and so redraw) the charts.
    QCoreApplication::processEvents();
    QCOMPARE(curves.plot("loss")->size(), chartSize);
    QVERIFY(!curves.replotPending());
    timer.restart();
    curves.updateRun(runs[7]);
    const qint64 updateMs = timer.elapsed();
    const QString updateDraw = drain();
    qDebug().noquote() << QString("50 runs x 10,000 steps: setRuns %1 ms, then drawing %2; smoothing change %3 ms, "
                                  "drawing %4; hover read-out %5 ms; updateRun %6 ms, drawing %7")
                              .arg(setMs).arg(firstDraw).arg(smoothMs).arg(smoothDraw).arg(hoverMs).arg(updateMs)
                              .arg(updateDraw);
    QCOMPARE(curves.points("big#49", "loss").size(), 10000);
    QCOMPARE(curves.describe().size(), 50 * 7);
    QVERIFY2(setMs < 2000, qPrintable(QString::number(setMs)));
    QVERIFY(curves.readoutText().contains("run 49 "));
  }

  void screenshots_data() {
    QTest::addColumn<bool>("dark");
    QTest::newRow("light") << false;
    QTest::newRow("dark") << true;
  }

  void screenshots() {
    QFETCH(bool, dark);
    setPalette(dark);
    const QString dir = expnet_test::makeTempDir(QString("runcurves_%1").arg(dark ? "dark" : "light"));
    QVector<RunSeriesInput> runs;
    const QStringList names{"xe-base", "xe-lr2e-4", "xe-bigger-batch", "xe+scst", "old-store run", "live run"};
    for (int r = 0; r < names.size(); ++r) {
      const QVector<StageShape> stages = r == 3 ? QVector<StageShape>{{6, 400}, {3, 400}} : QVector<StageShape>{{8, 400}};
      runs << makeRun(QString("shot#%1").arg(r), names[r], unsigned(10 + r), stages, r != 4, 90 + 12 * r,
                      r == 5 ? 1900 : -1);
    }
    RunCurves curves;
    curves.resize(1400, 900);
    curves.setRuns(runs);
    curves.show();
    QVERIFY(QTest::qWaitForWindowExposed(&curves));
    curves.showReadout("loss", 1500);
    QTest::qWait(50);
    QVERIFY(curves.grab().save(dir + "/curves_step.png"));
    curves.setXAxis(RunCurves::XAxis::WallTime);
    curves.setLogScale(true);
    curves.showReadout("cider_d", 300);
    QTest::qWait(50);
    QVERIFY(curves.grab().save(dir + "/curves_wall_log.png"));
    curves.setXAxis(RunCurves::XAxis::Epoch);
    curves.setLogScale(false);
    curves.hideReadout();
    QTest::qWait(50);
    QVERIFY(curves.grab().save(dir + "/curves_epoch.png"));
    qDebug().noquote() << "screenshots in" << dir;
    setPalette(false);
  }
};

QTEST_MAIN(TestRunCurves)
#include "test_run_curves.moc"

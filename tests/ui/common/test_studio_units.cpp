// The Training page's progress and ETA arithmetic on the rows a run store
// holds (no epoch yet, mid-epoch, validating, the trainer's live bar, a
// resumed run, a finished one), the durations it prints, the theme's colours
// against light and dark palettes, and the Caption page's progress line and
// recent list, and the CSV fields every export writes (quoting, formula injection).
#include <QDir>
#include <QJsonArray>
#include <QJsonObject>
#include <QtTest>

#include <cmath>

#include "caption/captiondetails.h"
#include "common/csvtext.h"
#include "common/recentpaths.h"
#include "common/theme.h"
#include "training/trainingprogress.h"

namespace {
QJsonObject stage(int epochs, int batch = 1, int accumulate = 1, int cap = 0) {
  QJsonObject s{{"epochs", epochs}, {"batch", batch}, {"accumulate", accumulate}};
  if (cap > 0) s.insert(QStringLiteral("max_batches_per_epoch"), cap);
  return s;
}

expnet::StepRecord step(int64_t stage, int64_t epoch, int64_t index, double imagesPerSecond = 10) {
  expnet::StepRecord r;
  r.stage = stage;
  r.epoch = epoch;
  r.step = index;
  r.images_per_s = imagesPerSecond;
  return r;
}

expnet::ValidationRecord validation(int64_t stage, int64_t epoch) {
  expnet::ValidationRecord v;
  v.stage = stage;
  v.epoch = epoch;
  return v;
}

// WCAG contrast ratio: 1 (same luminance) to 21 (black on white).
double contrast(const QColor& a, const QColor& b) {
  const auto luminance = [](const QColor& c) {
    const auto channel = [](double v) { return v <= 0.03928 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * channel(c.redF()) + 0.7152 * channel(c.greenF()) + 0.0722 * channel(c.blueF());
  };
  const double la = luminance(a), lb = luminance(b);
  return (std::max(la, lb) + 0.05) / (std::min(la, lb) + 0.05);
}

QPalette lightPalette() {
  QPalette p;
  p.setColor(QPalette::Window, QColor(0xef, 0xef, 0xef));
  p.setColor(QPalette::WindowText, Qt::black);
  p.setColor(QPalette::Base, Qt::white);
  p.setColor(QPalette::Text, Qt::black);
  p.setColor(QPalette::Highlight, QColor(0x30, 0x8c, 0xc6));
  return p;
}

CaptionItem item(CaptionItem::Status status) {
  CaptionItem i;
  i.status = status;
  return i;
}
}  // namespace

class TestStudioUnits : public QObject {
  Q_OBJECT
 private slots:
  // RFC 4180 quoting, and text a spreadsheet would compute (=, +, -, @, tab, CR
  // first: OWASP's CSV injection list) written with a leading apostrophe.
  void csvFieldsQuoteAndNeutraliseFormulas() {
    QCOMPARE(csvField("a red circle"), QString("a red circle"));
    QCOMPARE(csvField("a, b"), QString("\"a, b\""));
    QCOMPARE(csvField("say \"hi\""), QString("\"say \"\"hi\"\"\""));
    QCOMPARE(csvField("two\nlines"), QString("\"two\nlines\""));
    QCOMPARE(csvField("cr\rhere"), QString("\"cr\rhere\""));
    QCOMPARE(csvField("=HYPERLINK(\"http://x\",\"y\")"), QString("\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\""));
    for (const QString& risky : {"=1+1", "+1", "-2+3", "@SUM(A1)", "\tcmd", "\rcmd"}) {
      const QString field = csvField(risky);
      QVERIFY2(field.startsWith("'") || field.startsWith("\"'"), qPrintable(field));
    }
    QCOMPARE(csvField("=1+1"), QString("'=1+1"));
    QCOMPARE(csvField("a=b"), QString("a=b"));  // only the first character makes a formula
    QCOMPARE(csvField(QString()), QString());
  }

  void noStepYet() {
    const QJsonArray stages{stage(4), stage(2)};
    const RunProgress p = runProgress("running", stages, {"xe", "scst"}, {}, {}, nullptr);
    QCOMPARE(p.fraction, 0.0);
    QVERIFY(p.where.isEmpty());
    QCOMPARE(p.stageEtaSeconds, -1.0);
    QCOMPARE(progressSummary("running", p, -1, 0, 0), QString("Started: waiting for the first optimizer step"));
  }

  void midEpochFromTheStoreRows() {
    // 3 epochs of at most 6 micro-batches, 2 per optimizer step: 3 steps an epoch of 8 images each.
    const QJsonArray stages{stage(3, 4, 2, 6)};
    const std::vector<expnet::StepRecord> steps{step(0, 0, 1), step(0, 0, 2), step(0, 0, 3), step(0, 1, 4, 8.0)};
    const RunProgress p = runProgress("running", stages, {"xe"}, steps, {validation(0, 0)}, nullptr);
    QVERIFY(std::fabs(p.fraction - (1 + 1.0 / 3) / 3) < 1e-12);
    QCOMPARE(p.where, QString("stage xe (1/1) · epoch 2/3"));
    // 2 steps left of this epoch and 3 of the last, 8 images each at 8 images/s.
    QCOMPARE(p.stageEtaSeconds, 5.0);
    QCOMPARE(progressSummary("running", p, -1, steps.size(), 1), QString("stage xe (1/1) · epoch 2/3 · this stage ends in ~5s"));
    QCOMPARE(progressSummary("running", p, 125, steps.size(), 1), QString("stage xe (1/1) · epoch 2/3 · ETA 2m 05s"));
  }

  void aValidationRowCompletesItsEpoch() {
    // Without a cap, an epoch's length is the previous epoch's step count.
    const QJsonArray stages{stage(3), stage(1)};
    const std::vector<expnet::StepRecord> steps{step(0, 0, 1), step(0, 0, 2), step(0, 0, 3)};
    const RunProgress p = runProgress("running", stages, {"xe", "scst"}, steps, {validation(0, 0)}, nullptr);
    QCOMPARE(p.fraction, 1.0 / 4);
    QCOMPARE(p.where, QString("stage xe (1/2) · epoch 2/3"));
    QCOMPARE(p.stageEtaSeconds, -1.0);  // no step of this epoch yet: no images/s to go by
  }

  void lastStepOfAnEpochMeansValidating() {
    const QJsonArray stages{stage(2, 1, 1, 3)};
    const std::vector<expnet::StepRecord> steps{step(0, 0, 1), step(0, 0, 2), step(0, 0, 3)};
    const RunProgress p = runProgress("running", stages, {"xe"}, steps, {}, nullptr);
    QCOMPARE(p.fraction, 0.5);
    QCOMPARE(p.where, QString("stage xe (1/1) · epoch 1/2 · validating"));
    // A run nobody trains (interrupted) is not validating.
    QVERIFY(!runProgress("interrupted", stages, {"xe"}, steps, {}, nullptr).where.contains("validating"));
  }

  void theTrainersLiveBarCountsWithinTheEpoch() {
    const QJsonArray stages{stage(2), stage(2)};
    const std::vector<expnet::StepRecord> steps{step(0, 0, 1), step(0, 0, 2), step(0, 1, 3)};
    TrainProgressLine live;
    QVERIFY(TrainProgressLine::parse("[xe] epoch 2/2 [####....] 10/40 37.5 img/s ETA 0m21s loss 2.1 CIDEr-D 0.000", &live));
    const RunProgress p = runProgress("running", stages, {"xe", "scst"}, steps, {validation(0, 0)}, &live);
    QCOMPARE(p.fraction, (1 + 0.25) / 4);
    QCOMPARE(p.where, QString("stage xe (1/2) · epoch 2/2 · batch 10/40 · 37.5 img/s"));
    // A bar about another epoch (the trainer is ahead of the store) is not used.
    live.epoch = 1;
    const RunProgress stale = runProgress("running", stages, {"xe", "scst"}, steps, {validation(0, 0)}, &live);
    QVERIFY(!stale.where.contains("batch"));
    live.epoch = 2;
    live.stage = QStringLiteral("scst");
    QVERIFY(!runProgress("running", stages, {"xe", "scst"}, steps, {validation(0, 0)}, &live).where.contains("batch"));
  }

  void finishedAndInterruptedRuns() {
    const QJsonArray stages{stage(2), stage(1)};
    const std::vector<expnet::StepRecord> steps{step(0, 0, 1), step(0, 1, 2), step(1, 0, 3)};
    const std::vector<expnet::ValidationRecord> validations{validation(0, 0), validation(0, 1), validation(1, 0)};
    const RunProgress done = runProgress("finished", stages, {"xe", "scst"}, steps, validations, nullptr);
    QCOMPARE(done.fraction, 1.0);
    QCOMPARE(progressSummary("finished", done, -1, steps.size(), validations.size()),
             QString("Finished: 3 optimizer steps, 3 validations"));
    // Stopped in xe's second epoch, after as many steps as its first had: the epoch counts as done.
    const std::vector<expnet::StepRecord> before{step(0, 0, 1), step(0, 1, 2)};
    const RunProgress stopped = runProgress("interrupted", stages, {"xe", "scst"}, before, {validation(0, 0)}, nullptr);
    QCOMPARE(stopped.fraction, 2.0 / 3);
    QCOMPARE(progressSummary("interrupted", stopped, -1, 2, 1),
             QString("Interrupted at stage xe (1/2) · epoch 2/2: Resume continues from the last checkpoint"));
  }

  void rowsBeyondTheConfigStayInRange() {
    // The store names a stage the config does not have (an edited config): no stage line, no crash.
    const RunProgress p = runProgress("running", QJsonArray{stage(1)}, {}, {step(0, 0, 1), step(1, 0, 2)}, {}, nullptr);
    QVERIFY(p.fraction >= 0 && p.fraction <= 1);
    QVERIFY(p.where.isEmpty());
    QCOMPARE(runProgress("running", QJsonArray{}, {}, {step(0, 0, 1)}, {}, nullptr).fraction, 0.0);
  }

  void etaFromThePaceSinceFollowing() {
    EtaClock clock;
    QCOMPARE(clock.update(0.2, 1000), -1.0);   // first sample: no pace yet
    QCOMPARE(clock.update(0.2, 5000), -1.0);   // no progress since
    QCOMPARE(clock.update(0.3, 11000), 70.0);  // 0.1 in 10 s, 0.7 left
    // A resumed run whose rows were truncated goes back: the clock starts again.
    QCOMPARE(clock.update(0.1, 12000), -1.0);
    QCOMPARE(clock.update(0.55, 22000), 10.0);
    QCOMPARE(clock.update(1.0, 30000), 0.0);
    // A clock that went backwards gives no negative time.
    clock.reset();
    QCOMPARE(clock.update(0.1, 50000), -1.0);
    QCOMPARE(clock.update(0.2, 40000), 0.0);
  }

  void durations() {
    QCOMPARE(formatDuration(0), QString("0s"));
    QCOMPARE(formatDuration(-3), QString("0s"));
    QCOMPARE(formatDuration(44.4), QString("44s"));
    QCOMPARE(formatDuration(59.6), QString("1m 00s"));
    QCOMPARE(formatDuration(125), QString("2m 05s"));
    QCOMPARE(formatDuration(3599.5), QString("1h 00m"));
    QCOMPARE(formatDuration(7325), QString("2h 02m"));
  }

  void themeFollowsTheDesktopPalette() {
    const Theme light(lightPalette()), dark(Theme::darkPalette());
    QVERIFY(!light.isDark());
    QVERIFY(dark.isDark());
    for (const Theme* theme : {&light, &dark}) {
      const QColor window = theme == &light ? lightPalette().color(QPalette::Window)
                                            : Theme::darkPalette().color(QPalette::Window);
      QVERIFY(contrast(theme->text(), window) >= 7);
      QVERIFY(contrast(theme->errorText(), window) >= 4.5);
      // Hints are quieter than the text but still readable.
      QVERIFY(contrast(theme->mutedText(), window) >= 3);
      QVERIFY(contrast(theme->mutedText(), window) < contrast(theme->text(), window));
      QVERIFY(contrast(theme->plotForeground(), theme->plotBackground()) >= 7);
      using Series = Theme::Series;
      for (Series s : {Series::LossSmoothed, Series::LearningRate, Series::CiderD, Series::Bleu4, Series::Throughput})
        QVERIFY2(contrast(theme->series(s), theme->plotBackground()) >= 3, qPrintable(theme->series(s).name()));
      // The raw loss is drawn faint behind its smoothed line, but visible.
      QVERIFY(contrast(theme->series(Series::LossRaw), theme->plotBackground()) >= 1.5);
      QVERIFY(contrast(theme->accentText(), theme->accent()) >= 3);
      QVERIFY(contrast(theme->navigationText(), theme->navigationBackground()) >= 7);
    }
    QCOMPARE(light.plotBackground(), QColor(Qt::white));
    QVERIFY(dark.plotBackground().lightnessF() < 0.2);
    QCOMPARE(Theme::css(QColor(0x12, 0x34, 0x56)), QString("#123456"));
    QCOMPARE(Theme::css(QColor(1, 2, 3, 4)), QString("rgba(1, 2, 3, 4)"));
  }

  void captionProgressLine() {
    using S = CaptionItem::Status;
    QCOMPARE(captionProgressText({}, true), QString());
    const QVector<CaptionItem> items{item(S::Done), item(S::Done), item(S::Failed), item(S::Queued), item(S::Running),
                                     item(S::Cancelled)};
    QCOMPARE(captionProgressText(items, true), QString("2 captioned, 1 failed, 2 to go"));
    QCOMPARE(captionProgressText(items, false), QString("2 captioned, 1 failed, 2 waiting for a model"));
    QCOMPARE(captionProgressText({item(S::Cancelled)}, true), QString("0 captioned"));
  }

  void recentPathsNewestFirstWithoutRepeats() {
    RecentPaths recent;
    QVERIFY(recent.paths().isEmpty());
    recent.add({"/a.png", "/b"});
    QCOMPARE(recent.paths(), QStringList({"/b", "/a.png"}));
    recent.add({"/a.png"});
    QCOMPARE(recent.paths(), QStringList({"/a.png", "/b"}));
    recent.add({"relative.png"});
    QCOMPARE(recent.paths().first(), QDir::current().absoluteFilePath("relative.png"));
    for (int i = 0; i < 20; ++i) recent.add({QString("/img%1.png").arg(i)});
    QCOMPARE(recent.paths().size(), RecentPaths::kMax);
    QCOMPARE(recent.paths().first(), QString("/img19.png"));
    recent.setPaths({});
    QVERIFY(recent.paths().isEmpty());
  }
};

QTEST_GUILESS_MAIN(TestStudioUnits)
#include "test_studio_units.moc"

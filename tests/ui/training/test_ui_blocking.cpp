// The UI thread never blocks: a 10 ms timer watches the event loop while the
// Caption page captions a folder, while the Training page follows a real
// `expnet train` child, while the Compare page evaluates 200 images and while
// the Datasets page indexes 5,000 rows, scrolls through them and evaluates, and
// while the Runs page lists and overlays 50 runs of 10,000 steps. Work left on the UI thread shows up as gaps of
// seconds; the bound here is gross (500 ms). The finer figure comes from
// `bench_ui_gaps` (tests/ui/training/bench_ui_gaps.cpp), not from this test.
#include <QtTest>

#include "support/fixtures.h"
#include "support/tiny_reference.h"
#include "ui_scenarios.h"

namespace {
constexpr qint64 kGrossBoundMs = 500;
}  // namespace

class TestUiBlocking : public QObject {
  Q_OBJECT
 private slots:
  void captioningAFolder() {
    QString model, checkpoint, vocab, image;
    EXPNET_TINY_REFERENCE(model, checkpoint, vocab, image);
    const GapResult r = captionFolderGap(model, checkpoint, vocab, image, QStringLiteral(EXPNET_TEST_DATA_DIR "/image"),
                                         expnet_test::makeTempDir(QStringLiteral("blocking_caption")));
    QVERIFY2(r.ok, qPrintable(r.error));
    qInfo("longest event-loop gap while loading a model and captioning %d images: %lld ms", r.items, r.longestMs);
    QVERIFY2(r.longestMs < kGrossBoundMs, qPrintable(QString("event loop blocked for %1 ms").arg(r.longestMs)));
  }

  void trainingChildRuns() {
    const GapResult r = trainingGap(QStringLiteral(EXPNET_TRAINPAGE_TEST_DIR "/tiny_page.json"), expnet_test::cliPath(),
                                    expnet_test::makeTempDir(QStringLiteral("blocking_train")), 14);
    QVERIFY2(r.ok, qPrintable(r.error));
    qInfo("longest event-loop gap while a training child ran (%d steps): %lld ms", r.items, r.longestMs);
    QVERIFY2(r.longestMs < kGrossBoundMs, qPrintable(QString("event loop blocked for %1 ms").arg(r.longestMs)));
  }

  void compareEvaluation() {
    const GapResult r = compareEvaluationGap(expnet_test::cliPath(), expnet_test::makeTempDir(QStringLiteral("blocking_compare")), 200);
    QVERIFY2(r.ok, qPrintable(r.error));
    qInfo("longest event-loop gap while the Compare page evaluated %d images: %lld ms", r.items, r.longestMs);
    QVERIFY2(r.longestMs < kGrossBoundMs, qPrintable(QString("event loop blocked for %1 ms").arg(r.longestMs)));
  }

  void datasetsIndexScrollAndEvaluate() {
    qputenv("XDG_CACHE_HOME", (expnet_test::makeTempDir(QStringLiteral("blocking_datasets_cache"))).toUtf8());
    DatasetsGap figures;
    const GapResult r = datasetsGap(expnet_test::cliPath(), expnet_test::makeTempDir(QStringLiteral("blocking_datasets")),
                                    QString(), 5000, 60, &figures);
    QVERIFY2(r.ok, qPrintable(r.error));
    qInfo("longest event-loop gap while the Datasets page indexed, scrolled %d rows and evaluated: %lld ms "
          "(while scrolling: %lld ms; first screen of the indexed set in %lld ms)", r.items, r.longestMs,
          figures.scrollLongestMs, figures.firstScreenMs);
    QVERIFY2(r.longestMs < kGrossBoundMs, qPrintable(QString("event loop blocked for %1 ms").arg(r.longestMs)));
  }

  void runsPageOverlaysFiftyLongRuns() {
    RunsGap figures;
    const GapResult r = runsGap(expnet_test::makeTempDir(QStringLiteral("blocking_runs")), 50, 10000, &figures);
    QVERIFY2(r.ok, qPrintable(r.error));
    qInfo("longest event-loop gap while the Runs page listed and overlaid 50 runs of 10,000 steps: %lld ms "
          "(listed in %lld ms, curves drawn %lld ms after selecting all)", r.longestMs, figures.listMs, figures.overlayMs);
    QVERIFY2(r.longestMs < kGrossBoundMs, qPrintable(QString("event loop blocked for %1 ms").arg(r.longestMs)));
  }
};

QTEST_MAIN(TestUiBlocking)
#include "test_ui_blocking.moc"

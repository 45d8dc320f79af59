// The UI thread never blocks: a 10 ms timer watches the event loop while the
// Caption page captions a folder and while the Training page follows a real
// `expnet train` child. Work left on the UI thread shows up as gaps of
// seconds; the bound here is gross (500 ms). The finer figure comes from
// `bench_ui_gaps` (tests/trainpage/bench_ui_gaps.cpp), not from this test.
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTimer>
#include <QtTest>

#include "app/studiocontext.h"
#include "caption/captionmodel.h"
#include "caption/captionpage.h"
#include "support/fixtures.h"
#include "training/trainingcharts.h"
#include "training/trainingpage.h"

namespace {
constexpr int kWaitMs = 300000;
constexpr qint64 kGrossBoundMs = 500;

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

class TestUiBlocking : public QObject {
  Q_OBJECT
 private slots:
  void captioningAFolder() {
    EXPNET_FIXTURE(model, "reference/tiny/model_config.json");
    EXPNET_FIXTURE(checkpoint, "reference/tiny/checkpoint.pth");
    EXPNET_FIXTURE(vocab, "reference/tiny/vocab.pickle");
    EXPNET_FIXTURE(image, "reference/tiny/image0.png");
    const QString dir = expnet_test::makeTempDir(QStringLiteral("blocking_caption"));
    for (int i = 0; i < 12; ++i) QVERIFY(QFile::copy(image, dir + QString("/img%1.png").arg(i, 2, 10, QChar('0'))));
    // The repository's own test images too (they differ in size and format).
    for (const QString& name : QDir(QStringLiteral(EXPNET_TEST_DATA_DIR "/image")).entryList(QDir::Files))
      QVERIFY(QFile::copy(QStringLiteral(EXPNET_TEST_DATA_DIR "/image/") + name, dir + "/data_" + name));
    const int images = int(QDir(dir).entryList(QDir::Files).size());

    StudioContext context;
    CaptionPage page(&context);
    page.show();
    GapWatch watch;
    page.loadModel({model, checkpoint, vocab});  // loading is watched too
    page.addPaths({dir});
    QTRY_VERIFY_WITH_TIMEOUT(page.modelLoaded() && !page.isBusy(), kWaitMs);
    QCOMPARE(page.model()->rowCount(), images);
    qInfo("longest event-loop gap while loading a model and captioning %d images: %lld ms", images, watch.longestMs());
    QVERIFY2(watch.longestMs() < kGrossBoundMs, qPrintable(QString("event loop blocked for %1 ms").arg(watch.longestMs())));
  }

  void trainingChildRuns() {
    QFile config(QStringLiteral(EXPNET_TRAINPAGE_TEST_DIR "/tiny_page.json"));
    QVERIFY(config.open(QIODevice::ReadOnly));
    StudioContext context;
    TrainingPage page(&context);
    page.resize(1200, 800);
    page.show();  // charts repaint: their cost is part of what is measured
    page.process()->setProgram(expnet_test::cliPath());
    page.poller()->setIntervalMs(100);
    QVERIFY(page.setConfigJson(config.readAll()));
    page.setOutputDir(expnet_test::makeTempDir(QStringLiteral("blocking_train")) + "/run");
    page.findChild<QSpinBox*>(QStringLiteral("threads"))->setValue(1);
    QSignalSpy finished(&page, &TrainingPage::trainingFinished);
    GapWatch watch;
    page.start();
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 1, kWaitMs);
    QCOMPARE(finished.at(0).at(0).toInt(), 0);
    QTRY_COMPARE_WITH_TIMEOUT(page.charts()->points(QStringLiteral("loss")).size(), qsizetype(20), 10000);
    qInfo("longest event-loop gap while a training child ran (20 steps, 7 validations): %lld ms", watch.longestMs());
    QVERIFY2(watch.longestMs() < kGrossBoundMs, qPrintable(QString("event loop blocked for %1 ms").arg(watch.longestMs())));
  }
};

QTEST_MAIN(TestUiBlocking)
#include "test_ui_blocking.moc"

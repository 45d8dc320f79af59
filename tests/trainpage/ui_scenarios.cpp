#include "ui_scenarios.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QSpinBox>
#include <QTimer>
#include <QtTest>

#include "shell/studiocontext.h"
#include "caption/captionmodel.h"
#include "caption/captionpage.h"
#include "training/trainingcharts.h"
#include "training/trainingpage.h"

namespace {
constexpr int kWaitMs = 300000;

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

// Runs the event loop until `done` or the deadline; false on timeout.
template <typename Done>
bool waitFor(Done done) {
  QElapsedTimer clock;
  clock.start();
  while (!done()) {
    if (clock.elapsed() > kWaitMs) return false;
    QTest::qWait(10);
  }
  return true;
}
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
  if (!waitFor([&] { return page.modelLoaded() && !page.isBusy(); })) {
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
  if (!waitFor([&] { return exitCode != -2; })) {
    r.error = QStringLiteral("the training child did not finish");
    return r;
  }
  if (exitCode != 0) {
    r.error = QStringLiteral("the training child exited with %1").arg(exitCode);
    return r;
  }
  waitFor([&] { return page.charts()->points(QStringLiteral("loss")).size() >= steps; });
  r.longestMs = watch.longestMs();
  r.items = int(page.charts()->points(QStringLiteral("loss")).size());
  r.ok = r.items == steps;
  if (!r.ok) r.error = QStringLiteral("%1 loss points plotted, expected %2").arg(r.items).arg(steps);
  return r;
}

// bench_ui_gaps [--runs N] [--dataset FILE] [--only SCENARIO]: the longest event-loop gap (a 10 ms timer on the
// UI thread) while the Caption page loads the tiny fixture model and captions
// a folder, while the Training page follows a tiny `expnet train` child, and
// while the Compare page loads its demo models and evaluates 200 shapes images,
// and while the Datasets page indexes 5,000 rows, scrolls through them (goal:
// at most 50 ms) and evaluates the demo model on 60 images, and while the Runs
// page lists 50 runs of 10,000 steps and overlays all their curves.
// --only caption|training|compare|datasets|runs runs one scenario.
// Prints every run and the median per scenario (goal: under 100 ms).
#include <QApplication>
#include <QTemporaryDir>
#include <algorithm>
#include <cstdio>
#include <vector>

#include "support/fixtures.h"
#include "ui_scenarios.h"

namespace {
qint64 median(std::vector<qint64> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? -1 : v[v.size() / 2];
}
}  // namespace

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  int runs = 3;
  QString dataset;  // --dataset FILE: the Datasets scenario on it instead of 5,000 generated rows
  QString only;
  for (int i = 1; i + 1 < argc; ++i) {
    if (QByteArray(argv[i]) == "--only") only = QString::fromLocal8Bit(argv[i + 1]);
    if (QByteArray(argv[i]) == "--runs") runs = std::max(1, QByteArray(argv[i + 1]).toInt());
    if (QByteArray(argv[i]) == "--dataset") dataset = QString::fromLocal8Bit(argv[i + 1]);
  }
  const QString model = expnet_test::fixturePath(QStringLiteral("reference/tiny/model_config.json"));
  const QString checkpoint = expnet_test::fixturePath(QStringLiteral("reference/tiny/checkpoint.pth"));
  const QString vocab = expnet_test::fixturePath(QStringLiteral("reference/tiny/vocab.pickle"));
  const QString image = expnet_test::fixturePath(QStringLiteral("reference/tiny/image0.png"));
  const auto wanted = [&](const char* name) { return only.isEmpty() || only == QLatin1String(name); };
  if (wanted("caption") && (model.isEmpty() || checkpoint.isEmpty() || vocab.isEmpty() || image.isEmpty())) {
    std::fprintf(stderr, "error: the tiny reference fixtures are missing under %s: set EXPNET_FIXTURES\n",
                 qPrintable(expnet_test::fixturesDir()));
    return 1;
  }
  std::vector<qint64> caption, training, compare, datasets, scrolling, firstScreen, runsPage, overlay;
  // A scenario that did not complete ends the benchmark with its error.
  const auto completed = [](const GapResult& r, const char* scenario) {
    if (!r.ok) std::fprintf(stderr, "error: %s: %s\n", scenario, qPrintable(r.error));
    return r.ok;
  };
  for (int i = 0; i < runs; ++i) {
    if (wanted("runs")) {
      QTemporaryDir runsDir;
      RunsGap figures;
      const GapResult g = runsGap(runsDir.path(), 50, 10000, &figures);
      if (!completed(g, "runs")) return 1;
      std::printf("run %d runs_page runs=50 steps=10000 longest_gap_ms=%lld list_ms=%lld overlay_ms=%lld\n", i + 1,
                  g.longestMs, figures.listMs, figures.overlayMs);
      runsPage.push_back(g.longestMs);
      overlay.push_back(figures.overlayMs);
    }
    if (wanted("caption")) {
      QTemporaryDir dir;
      const GapResult c =
          captionFolderGap(model, checkpoint, vocab, image, QStringLiteral(EXPNET_TEST_DATA_DIR "/image"), dir.path());
      if (!completed(c, "captioning")) return 1;
      std::printf("run %d caption_folder images=%d longest_gap_ms=%lld\n", i + 1, c.items, c.longestMs);
      caption.push_back(c.longestMs);
    }
    if (wanted("training")) {
      QTemporaryDir trainDir;
      const GapResult t = trainingGap(QStringLiteral(EXPNET_TRAINPAGE_TEST_DIR "/tiny_page.json"),
                                      expnet_test::cliPath(), trainDir.path(), 14);
      if (!completed(t, "training")) return 1;
      std::printf("run %d training_child steps=%d longest_gap_ms=%lld\n", i + 1, t.items, t.longestMs);
      training.push_back(t.longestMs);
    }
    if (wanted("compare")) {
      QTemporaryDir compareDir;
      const GapResult e = compareEvaluationGap(expnet_test::cliPath(), compareDir.path(), 200);
      if (!completed(e, "compare")) return 1;
      std::printf("run %d compare_evaluation images=%d longest_gap_ms=%lld\n", i + 1, e.items, e.longestMs);
      compare.push_back(e.longestMs);
    }
    if (wanted("datasets")) {
      QTemporaryDir datasetsDir;
      qputenv("XDG_CACHE_HOME", (datasetsDir.path() + QStringLiteral("/cache")).toUtf8());
      DatasetsGap figures;
      const GapResult g = datasetsGap(expnet_test::cliPath(), datasetsDir.path(), dataset, 5000, 60, &figures);
      if (!completed(g, "datasets")) return 1;
      std::printf("run %d datasets rows=%d longest_gap_ms=%lld scroll_longest_gap_ms=%lld first_screen_ms=%lld\n",
                  i + 1, g.items, g.longestMs, figures.scrollLongestMs, figures.firstScreenMs);
      firstScreen.push_back(figures.firstScreenMs);
      datasets.push_back(g.longestMs);
      scrolling.push_back(figures.scrollLongestMs);
    }
    std::fflush(stdout);
  }
  std::printf(
      "median longest_gap_ms caption_folder=%lld training_child=%lld compare_evaluation=%lld "
      "datasets=%lld datasets_scrolling=%lld datasets_first_screen_ms=%lld runs_page=%lld "
      "runs_page_overlay_ms=%lld (runs=%d; -1: not run)\n",
      median(caption), median(training), median(compare), median(datasets), median(scrolling), median(firstScreen),
      median(runsPage), median(overlay), runs);
  return 0;
}

// What the UI-blocking test and the bench_ui_gaps benchmark both measure: the
// longest interval between two ticks of a 10 ms timer on the UI thread while
// (a) the Caption page loads a model and captions a folder, (b) the Training
// page starts and follows an `expnet train` child to its end, (c) the Compare
// page loads its demo models and evaluates them on a dataset, (d) the Datasets
// page indexes and scrolls, (e) the Runs page lists and overlays many long runs.
#pragma once

#include <QString>

struct GapResult {
  bool ok = false;
  QString error;        // why the scenario did not complete
  qint64 longestMs = -1;
  int items = 0;        // images captioned, or optimizer steps plotted
};

// Copies `image` 12 times and the files of `extraDir` into `workDir`, then captions the folder.
GapResult captionFolderGap(const QString& model, const QString& checkpoint, const QString& vocab, const QString& image,
                           const QString& extraDir, const QString& workDir);
// Trains `configFile` in `workDir`/run with the `expnet` at `cli` (1 thread); expects `steps` steps.
GapResult trainingGap(const QString& configFile, const QString& cli, const QString& workDir, int steps);
// Makes a `images`-image shapes set in `workDir` with the `expnet` at `cli`,
// then evaluates the Compare page's demo models on all of it.
GapResult compareEvaluationGap(const QString& cli, const QString& workDir, int images);
// The Datasets page on `dataset` (empty: a Karpathy file of `images` entries
// whose files cycle over a small shapes set made in `workDir`): it opens it
// (index built), a second page opens it again (index cached: `firstScreenMs`
// until the rows on screen and their thumbnails are shown), scrolls the grid
// through its first 5,000 rows (`items` = rows; `scrollLongestMs` the longest
// gap while scrolling) and, with `evaluate` > 0, evaluates the demo model on that many
// val images.
struct DatasetsGap {
  qint64 scrollLongestMs = -1, firstScreenMs = -1;
};
GapResult datasetsGap(const QString& cli, const QString& workDir, const QString& dataset, int images, int evaluate,
                      DatasetsGap* figures);

// The Runs page on one store of `runs` runs of `steps` steps each (written with
// the engine's RunStore, a validation every 1,000 steps): it lists them, all are
// selected (curves overlaid), then the x axis, smoothing, log scale and the
// filter change. `overlayMs`: from selecting all to every curve drawn.
struct RunsGap {
  qint64 listMs = -1, overlayMs = -1;
};
GapResult runsGap(const QString& workDir, int runs, int steps, RunsGap* figures);

// The Runs page's curve overlay: the selected training runs' curves, one
// QCustomPlot chart per metric (training loss, validation CIDEr-D and BLEU-4,
// learning rate, images/s), every run in its own colour, one legend above.
// X axis: optimizer step, epoch (cumulative over stages) or training time.
// Loss and images/s are smoothed (EMA, common/curvesmoothing.h) with the raw
// line faint behind; log y for loss and lr; hovering a chart reads every run's
// value at the nearest point under a cursor line. Drag pans, the wheel zooms,
// a double-click fits. Many long runs are filled in slices and one chart is
// redrawn per event-loop pass, so input is never held back long
// (docs/performance.md, "Figures behind choices in the code").
#pragma once

#include <QColor>
#include <QHash>
#include <QJsonArray>
#include <QPointF>
#include <QString>
#include <QStringList>
#include <QTimer>
#include <QVector>
#include <QWidget>

#include <vector>

#include "expnet/train/run_store.h"
#include "runs/runcurveaxes.h"
#include "runs/runslisting.h"

class QCheckBox;
class QComboBox;
class QCPGraph;
class QCPItemStraightLine;
class QCustomPlot;
class QLabel;
class QSlider;
class HintLabel;
class PlotFollowing;

struct RunSeriesInput {
  QString key;    // unique run id (RunRow::key)
  QString label;  // the legend's name
  QColor colour;  // invalid: Theme::runColour(position in the runs)
  SharedRunRows rows = std::make_shared<RunRows>();  // shared with the page's details, never null
};

class RunCurves : public QWidget {
  Q_OBJECT
 public:
  using XAxis = CurveXAxis;  // Step, Epoch, WallTime (runcurveaxes.h)

  explicit RunCurves(QWidget* parent = nullptr);

  // The metrics, one chart each: loss, cider_d, bleu4, lr, images_per_s.
  static QStringList metrics();

  // Replaces every run (a new selection) and fits the charts. Long runs
  // (over 100,000 steps in all) are drawn a few runs per event-loop pass, so
  // the UI thread is never held for all of them: replotPending() until done.
  void setRuns(QVector<RunSeriesInput> runs);
  // A live run's rows so far (all of them, as the store returns them): replaces
  // that run's data and label (it keeps its colour), or adds the run when its
  // key is new. Only that run's lines are recomputed; charts not panned or
  // zoomed by hand follow the new points.
  void updateRun(const RunSeriesInput& run);
  QStringList runKeys() const;

  XAxis xAxis() const { return xAxis_; }
  void setXAxis(XAxis axis);
  // EMA weight of loss and images/s, 0 (raw) .. 0.99; 0.6 at first.
  double smoothing() const { return smoothing_; }
  void setSmoothing(double weight);
  // Logarithmic y for the loss and learning-rate charts.
  bool logScale() const;
  void setLogScale(bool on);
  // Fit every chart to its data and follow new points again.
  void fitAll();

  // On the wall-time axis, "N runs have no wall time (older run store)" when
  // some runs are left out; "" otherwise.
  QString note() const;
  QCustomPlot* plot(const QString& metric) const { return plots_.value(metric); }
  // Charts still to be redrawn (one per event-loop pass).
  bool replotPending() const { return !replotQueue_.isEmpty() || fillPending(); }

  // A run's plotted points of a metric. `smoothed` picks the EMA line of loss
  // and images_per_s (the other metrics have one line, returned either way).
  QVector<QPointF> points(const QString& key, const QString& metric, bool smoothed = false) const;
  // Every plotted line: {"run": label, "key", "metric", "smoothed": bool,
  // "points": n, "last": [x, y]} ("last" absent when there are no points).
  QJsonArray describe() const;
  // The hover read-out as if the mouse were at `x` over the chart of `metric`:
  // cursor lines on every chart, and each run's value at its point nearest x.
  void showReadout(const QString& metric, double x);
  void hideReadout();
  // "Training loss at step 1200: run-a 2.346 (raw 2.5) · run-b –" (– : no
  // point near x); a hint when nothing is hovered.
  QString readoutText() const { return readoutText_; }

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;

 private:
  struct Run {
    RunSeriesInput input;
    QHash<QString, QCPGraph*> graphs;  // by metric; smoothed lines as "<metric>_smoothed"
    bool hasWallTime = false;
    QVector<qint64> lossStages, stepStages;  // each point's stage: smoothing starts afresh at a stage change
  };

  QCustomPlot* makePlot(const QString& metric, const QString& title, const QString& yLabel);
  // Appends a run with its lines (empty) and a colour when it has none.
  Run& addRun(RunSeriesInput input);
  // (Re)computes every run's lines: at once when they are short, else a few
  // runs per event-loop pass; then fits the charts.
  void queueFill();
  void fillSome();
  bool fillPending() const { return nextFill_ < runs_.size(); }
  void fillRun(Run& run);
  void fillSmoothed(Run& run);
  void dataChanged(bool fit);
  void refit(QCustomPlot* plot);
  void replotLater(QCustomPlot* plot);
  void updateXAxisLabels();
  void updateLegend();
  void updateNote();
  QStringList runsWithoutWallTime() const;  // labels of runs with steps but no wall time
  void reserveReadoutHeight();
  QString formatX(double x) const;

  QHash<QString, QCustomPlot*> plots_;  // by metric
  QHash<QCustomPlot*, QCPItemStraightLine*> cursors_;
  QVector<QCustomPlot*> replotQueue_;
  QTimer fillTimer_;
  size_t nextFill_ = 0;  // runs_[nextFill_..] still to fill
  QTimer replotTimer_;
  PlotFollowing* following_;
  std::vector<Run> runs_;
  XAxis xAxis_ = XAxis::Step;
  double smoothing_ = 0.6;
  QString readoutText_;
  QString readoutMetric_;  // the hovered chart ("" when none): refreshed as data arrives
  double readoutX_ = 0;

  QComboBox* xAxisBox_;
  QSlider* smoothingSlider_;
  QLabel* smoothingValue_;
  QCheckBox* logScale_;
  QLabel* legend_;
  HintLabel* note_;
  QLabel* readout_;
};

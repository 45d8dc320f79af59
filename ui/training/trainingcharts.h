// The Training page's live charts (QCustomPlot): training loss raw and
// smoothed, learning rate and images/s per optimizer step; validation CIDEr-D
// and BLEU-4 per epoch. Drag pans, the wheel zooms, a double-click fits.
#pragma once

#include <QJsonArray>
#include <QMap>
#include <QVector>
#include <QWidget>

#include <vector>

#include "expnet/train/run_store.h"

class QCheckBox;
class QCPGraph;
class QCustomPlot;
class PlotFollowing;

class TrainingCharts : public QWidget {
  Q_OBJECT
 public:
  explicit TrainingCharts(QWidget* parent = nullptr);

  // Replaces the plotted data of run `runKey` (any text naming the run: its store and id).
  // Cheap: redrawn only when the run or its row counts changed.
  void setData(const QString& runKey, const std::vector<expnet::StepRecord>& steps,
               const std::vector<expnet::ValidationRecord>& validations);
  void clear();
  bool logScale() const;
  void setLogScale(bool on);
  // Fit every chart to its data and follow new points again.
  void fitAll();

  // The plotted points of a series: loss, loss_smoothed, lr, images_per_s, cider_d, bleu4.
  QVector<QPointF> points(const QString& series) const;
  QStringList seriesNames() const { return graphs_.keys(); }
  // {name, chart, points, last_x, last_y} per series.
  QJsonArray describe() const;

 protected:
  void showEvent(QShowEvent* event) override;

 private:
  void redraw();  // refits (unless the user moved a chart) and replots
  QCustomPlot* makePlot(const QString& title, const QString& xLabel, const QString& yLabel);
  QCPGraph* addSeries(QCustomPlot* plot, const QString& name, const QString& label, const QColor& colour, bool dots);
  void refit(QCustomPlot* plot);

  QVector<QCustomPlot*> plots_;
  QCustomPlot* lossPlot_;
  QCustomPlot* lrPlot_;
  QCustomPlot* validationPlot_;
  QCustomPlot* speedPlot_;
  QMap<QString, QCPGraph*> graphs_;
  QCheckBox* logScale_;
  PlotFollowing* following_;
  size_t stepCount_ = size_t(-1), validationCount_ = size_t(-1);
  int64_t lastStep_ = -1;
  QString runKey_;
  bool stale_ = false;  // data set while hidden: drawn when shown
};

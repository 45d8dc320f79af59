// The charts' shared fitting rules (Training page, Runs page): axes fitted to
// the data with a margin, and a chart follows new points until the user pans
// or zooms it (drag, wheel); a double-click fits it and follows again.
#pragma once

#include <QHash>
#include <QObject>

#include <functional>

class QCustomPlot;

// Rescales both axes to the data: an empty range (one point, a flat series) is
// padded, y gets a 5% margin (a ratio on a log axis), x `xMargin` of its size.
// Does not replot.
void fitPlotAxes(QCustomPlot* plot, double xMargin = 0);

class PlotFollowing : public QObject {
  Q_OBJECT
 public:
  // `refit` fits one chart (and replots it); called on a double-click.
  PlotFollowing(std::function<void(QCustomPlot*)> refit, QObject* parent);
  void watch(QCustomPlot* plot);
  // Panned or zoomed by hand since the last fit: leave it where the user put it.
  bool userMoved(QCustomPlot* plot) const { return userMoved_.value(plot); }
  void follow(QCustomPlot* plot) { userMoved_[plot] = false; }
  void followAll();

 private:
  std::function<void(QCustomPlot*)> refit_;
  QHash<QCustomPlot*, bool> userMoved_;
};

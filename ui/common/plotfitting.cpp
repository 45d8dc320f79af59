#include "common/plotfitting.h"

#include <qcustomplot.h>

#include <cmath>

void fitPlotAxes(QCustomPlot* plot, double xMargin) {
  plot->rescaleAxes();
  for (auto* axis : {plot->xAxis, plot->yAxis}) {
    QCPRange range = axis->range();
    const bool log = axis->scaleType() == QCPAxis::stLogarithmic;
    const double margin = axis == plot->yAxis ? 0.05 : xMargin;
    if (range.size() <= 0 || !std::isfinite(range.size())) {
      const double centre = std::isfinite(range.center()) ? range.center() : 0;
      const double pad = log ? centre * 0.5 : std::max(std::abs(centre) * 0.1, 1.0);
      range = QCPRange(centre - pad, centre + pad);
    } else if (margin > 0) {
      // So that the extremes (and validation dots) are not cut by the frame.
      const double f = std::pow(range.upper / range.lower, margin);
      range = log ? QCPRange(range.lower / f, range.upper * f)
                  : QCPRange(range.lower - range.size() * margin, range.upper + range.size() * margin);
    }
    axis->setRange(range);
  }
}

PlotFollowing::PlotFollowing(std::function<void(QCustomPlot*)> refit, QObject* parent)
    : QObject(parent), refit_(std::move(refit)) {}

void PlotFollowing::watch(QCustomPlot* plot) {
  userMoved_[plot] = false;
  connect(plot, &QCustomPlot::mousePress, this, [this, plot] { userMoved_[plot] = true; });
  connect(plot, &QCustomPlot::mouseWheel, this, [this, plot] { userMoved_[plot] = true; });
  connect(plot, &QCustomPlot::mouseDoubleClick, this, [this, plot] {
    userMoved_[plot] = false;
    refit_(plot);
  });
}

void PlotFollowing::followAll() {
  for (auto it = userMoved_.begin(); it != userMoved_.end(); ++it) it.value() = false;
}

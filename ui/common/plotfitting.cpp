#include "common/plotfitting.h"

#include <qcustomplot.h>

#include <algorithm>
#include <cmath>

namespace {

// Whether every value on `axis` is the same. QCustomPlot widens such a flat
// range by the axis's previous size: a constant learning rate of 0.001 was drawn
// on -2..2, as if it were 0.
bool valuesAreFlat(QCustomPlot* plot, QCPAxis* axis) {
  bool any = false;
  QCPRange values;
  for (int i = 0; i < plot->plottableCount(); ++i) {
    QCPAbstractPlottable* plottable = plot->plottable(i);
    if (!plottable->visible() || (plottable->valueAxis() != axis && plottable->keyAxis() != axis)) continue;
    bool found = false;
    const QCPRange range = plottable->valueAxis() == axis ? plottable->getValueRange(found) : plottable->getKeyRange(found);
    if (!found) continue;
    values = any ? QCPRange(std::min(values.lower, range.lower), std::max(values.upper, range.upper)) : range;
    any = true;
  }
  return any && values.size() == 0;
}

}  // namespace

void fitPlotAxes(QCustomPlot* plot, double xMargin) {
  plot->rescaleAxes();
  for (auto* axis : {plot->xAxis, plot->yAxis}) {
    QCPRange range = axis->range();
    const bool log = axis->scaleType() == QCPAxis::stLogarithmic;
    const double margin = axis == plot->yAxis ? 0.05 : xMargin;
    if (valuesAreFlat(plot, axis)) {  // half the value either side (or 1 around 0)
      const double centre = range.center();
      const double pad = centre != 0 ? std::abs(centre) * 0.5 : 1.0;
      range = QCPRange(centre - pad, centre + pad);
    } else if (range.size() <= 0 || !std::isfinite(range.size())) {
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

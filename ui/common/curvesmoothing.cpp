#include "common/curvesmoothing.h"

#include <cmath>

QVector<double> smoothCurve(const QVector<double>& values, double weight) { return smoothCurve(values, weight, {}); }

QVector<double> smoothCurve(const QVector<double>& values, double weight, const QVector<qint64>& stages) {
  QVector<double> out;
  out.reserve(values.size());
  double ema = 0, norm = 0;  // norm = 1 - weight^k: TensorBoard's debiasing
  for (qsizetype i = 0; i < values.size(); ++i) {
    const double v = values[i];
    if (i > 0 && i < stages.size() && stages[i] != stages[i - 1]) ema = norm = 0;  // a new stage
    if (std::isfinite(v)) {
      ema = weight * ema + (1 - weight) * v;
      norm = weight * norm + (1 - weight);
    }
    out << (norm > 0 ? ema / norm : std::nan(""));
  }
  return out;
}

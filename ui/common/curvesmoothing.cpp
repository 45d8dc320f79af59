#include "common/curvesmoothing.h"

#include <cmath>

QVector<double> smoothCurve(const QVector<double>& values, double weight) {
  QVector<double> out;
  out.reserve(values.size());
  double ema = 0, norm = 0;  // norm = 1 - weight^k: TensorBoard's debiasing
  for (double v : values) {
    if (std::isfinite(v)) {
      ema = weight * ema + (1 - weight) * v;
      norm = weight * norm + (1 - weight);
    }
    out << (norm > 0 ? ema / norm : std::nan(""));
  }
  return out;
}

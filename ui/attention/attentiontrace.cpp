#include "attention/attentiontrace.h"

#include <stdexcept>

TraceMatrix TraceMatrix::rowBlock(int first, int count) const {
  if (first < 0 || count < 0 || first + count > rows) throw std::out_of_range("TraceMatrix::rowBlock outside the matrix");
  TraceMatrix out{count, cols, {}};
  out.values.assign(values.begin() + ptrdiff_t(first) * cols, values.begin() + ptrdiff_t(first + count) * cols);
  return out;
}

TraceMatrix TraceMatrix::colBlock(int first, int count) const {
  if (first < 0 || count < 0 || first + count > cols) throw std::out_of_range("TraceMatrix::colBlock outside the matrix");
  TraceMatrix out{rows, count, {}};
  out.values.reserve(size_t(rows) * size_t(count));
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < count; ++c) out.values.push_back(at(r, first + c));
  return out;
}

int AttentionTrace::wordCount() const {
  const int s = steps();
  return endsWithEos && s > 0 ? s - 1 : s;
}

std::vector<float> AttentionTrace::wordWeights(int k, int layer, int head) const {
  const int n = cells();
  std::vector<float> out(size_t(n), 0.0f);
  if (k < 0 || k >= steps()) return out;
  const int firstLayer = layer < 0 ? 0 : layer, lastLayer = layer < 0 ? layers : layer + 1;
  const int firstHead = head < 0 ? 0 : head, lastHead = head < 0 ? heads : head + 1;
  // Accumulated in double so the mean does not depend on the summation order's rounding.
  std::vector<double> sum(size_t(n), 0.0);
  for (int l = firstLayer; l < lastLayer; ++l)
    for (int h = firstHead; h < lastHead; ++h) {
      const float* row = cross.data() + ((size_t(k) * layers + l) * heads + h) * size_t(n);
      for (int i = 0; i < n; ++i) sum[size_t(i)] += row[i];
    }
  const double count = double(lastLayer - firstLayer) * double(lastHead - firstHead);
  for (int i = 0; i < n; ++i) out[size_t(i)] = float(sum[size_t(i)] / count);
  return out;
}

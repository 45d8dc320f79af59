// LibTorch before Qt: Qt's `slots` macro breaks LibTorch headers included after it.
#include <ATen/core/Tensor.h>

#include "attention/tracemaps.h"

#include <opencv2/imgproc.hpp>

#include "expnet/trace/trace.h"

namespace {
// OpenCV BGR (what the engine's overlays return) to a QImage that owns its pixels.
QImage fromBgr(const cv::Mat& bgr) {
  return QImage(bgr.data, bgr.cols, bgr.rows, int(bgr.step), QImage::Format_BGR888).copy();
}
}  // namespace

QImage attentionOverlay(const AttentionTrace& trace, const std::vector<float>& weights, double alpha) {
  if (trace.rgb.empty() || int(weights.size()) != trace.cells()) return {};
  const cv::Mat grid(trace.gridSide, trace.gridSide, CV_32F, const_cast<float*>(weights.data()));
  return fromBgr(expnet::attention_overlay(trace.rgb, grid, alpha));
}

QPixmap jetLegend(int width, int height) {
  cv::Mat ramp(1, 256, CV_8U);
  for (int i = 0; i < 256; ++i) ramp.at<uchar>(0, i) = uchar(i);
  cv::Mat bgr;
  cv::applyColorMap(ramp, bgr, cv::COLORMAP_JET);
  return QPixmap::fromImage(fromBgr(bgr).scaled(width, height));
}

const TraceMatrix& expansionMatrix(const TraceExpansion& e, int direction, int stream) {
  if (direction == Scores) return e.z;
  if (direction == Forward) return stream == StreamA ? e.forwardA : e.forwardB;
  return stream == StreamA ? e.backwardA : e.backwardB;
}

QString directionName(int direction, int stream) {
  if (direction == Scores) return QStringLiteral("scores z");
  return QStringLiteral("%1, stream %2").arg(direction == Forward ? QStringLiteral("forward") : QStringLiteral("backward"),
                                             stream == StreamA ? QStringLiteral("a") : QStringLiteral("b"));
}

int groupStart(const AttentionTrace& trace, int group) {
  int start = 0;
  for (int g = 0; g < group && g < int(trace.groups.size()); ++g) start += trace.groups[size_t(g)];
  return start;
}

#include "attention/expansionplot.h"

#include <algorithm>
#include <cmath>

#include "common/theme.h"

namespace {
// Evenly spaced stops of one of the Theme's colour maps.
QCPColorGradient gradient(const QVector<QColor>& stops) {
  QCPColorGradient g;
  g.clearColorStops();
  for (int i = 0; i < stops.size(); ++i) g.setColorStopAt(i / double(stops.size() - 1), stops[i]);
  g.setLevelCount(256);
  return g;
}
}  // namespace

ExpansionPlot::ExpansionPlot(QWidget* parent) : QCustomPlot(parent) {
  setMinimumSize(320, 240);
  plotLayout()->insertRow(0);
  titleElement_ = new QCPTextElement(this, QString(), QFont(font().family(), 10, QFont::Bold));
  plotLayout()->addElement(0, 0, titleElement_);
  map_ = new QCPColorMap(xAxis, yAxis);
  map_->setInterpolate(false);  // one flat cell per matrix entry
  scale_ = new QCPColorScale(this);
  plotLayout()->addElement(1, 1, scale_);
  scale_->setType(QCPAxis::atRight);
  scale_->setBarWidth(14);
  map_->setColorScale(scale_);
  auto* margins = new QCPMarginGroup(this);
  axisRect()->setMarginGroup(QCP::msBottom | QCP::msTop, margins);
  scale_->setMarginGroup(QCP::msBottom | QCP::msTop, margins);
  yAxis->setRangeReversed(true);  // row 0 at the top, as matrices are read
  xAxis->grid()->setVisible(false);
  yAxis->grid()->setVisible(false);
  const Theme theme = Theme::current();
  theme.applyTo(this);
  axisRect()->setBackground(theme.plotEmptyArea());
}

void ExpansionPlot::setTicks(QCPAxis* axis, const QVector<Tick>& ticks, int count) {
  if (ticks.isEmpty()) {
    // Whole indices only (rows and columns are numbered from 0), about 8 of them.
    double step = 1;
    while (count / step > 10) step *= (QString::number(step).startsWith(QLatin1Char('2')) ? 2.5 : 2);
    QSharedPointer<QCPAxisTickerFixed> numbers(new QCPAxisTickerFixed);
    numbers->setTickStep(std::max(1.0, std::round(step)));
    numbers->setScaleStrategy(QCPAxisTickerFixed::ssNone);
    axis->setTicker(numbers);
    axis->setSubTicks(false);
    return;
  }
  // Word labels stay legible: at most kMaxLabels per axis (every k-th word of
  // a long caption), since a plot is a few hundred pixels high.
  constexpr int kMaxLabels = 30;
  const int stride = (int(ticks.size()) + kMaxLabels - 1) / kMaxLabels;
  QSharedPointer<QCPAxisTickerText> text(new QCPAxisTickerText);
  for (int i = 0; i < ticks.size(); i += stride) text->addTick(ticks[i].position, ticks[i].label);
  axis->setTicker(text);
  axis->setSubTicks(false);
}

void ExpansionPlot::showMatrix(const TraceMatrix& matrix, const QString& title, const Axes& axes, bool signedValues) {
  title_ = title;
  rows_ = matrix.rows;
  cols_ = matrix.cols;
  fitTitle();
  map_->data()->setSize(cols_, rows_);
  // Cell centres at integer coordinates: cell (col, row) spans col +- 0.5.
  map_->data()->setRange(QCPRange(0, std::max(cols_ - 1, 0)), QCPRange(0, std::max(rows_ - 1, 0)));
  float low = 0, high = 0;
  for (int r = 0; r < rows_; ++r)
    for (int c = 0; c < cols_; ++c) {
      const float v = matrix.at(r, c);
      map_->data()->setCell(c, r, v);
      low = std::min(low, v);
      high = std::max(high, v);
    }
  if (signedValues) {
    const double bound = std::max({std::fabs(double(low)), std::fabs(double(high)), 1e-9});
    map_->setGradient(gradient(Theme::divergingMap()));
    map_->setDataRange(QCPRange(-bound, bound));
  } else {
    map_->setGradient(gradient(Theme::sequentialMap()));
    map_->setDataRange(QCPRange(0, std::max(double(high), 1e-9)));
  }
  xAxis->setLabel(axes.x);
  yAxis->setLabel(axes.y);
  setTicks(xAxis, axes.xTicks, cols_);
  setTicks(yAxis, axes.yTicks, rows_);
  xAxis->setTickLabelRotation(axes.xTicks.isEmpty() ? 0 : 60);
  xAxis->setRange(-0.5, cols_ - 0.5);
  yAxis->setRange(-0.5, rows_ - 0.5);
  map_->setVisible(rows_ > 0 && cols_ > 0);
  replot();
}

void ExpansionPlot::clearMatrix(const QString& message) {
  title_.clear();
  rows_ = cols_ = 0;
  map_->data()->clear();
  map_->setVisible(false);
  titleElement_->setText(message);
  replot();
}

void ExpansionPlot::fitTitle() {
  if (title_.isEmpty()) return;
  const qsizetype cut = title_.lastIndexOf(QStringLiteral(" · "));
  const bool fits = QFontMetrics(titleElement_->font()).horizontalAdvance(title_) <= width() - 16;
  titleElement_->setText(fits || cut < 0 ? title_ : title_.left(cut) + QLatin1Char('\n') + title_.mid(cut + 3));
}

void ExpansionPlot::resizeEvent(QResizeEvent* event) {
  fitTitle();
  QCustomPlot::resizeEvent(event);
}

void ExpansionPlot::mousePressEvent(QMouseEvent* event) {
  QCustomPlot::mousePressEvent(event);
  if (rows_ == 0 || !axisRect()->rect().contains(event->pos())) return;
  const int col = int(std::lround(xAxis->pixelToCoord(event->pos().x())));
  const int row = int(std::lround(yAxis->pixelToCoord(event->pos().y())));
  if (row >= 0 && row < rows_ && col >= 0 && col < cols_) emit cellClicked(row, col);
}

#include "training/trainingcharts.h"

#include <utility>

#include <QCheckBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QJsonObject>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>
#include <qcustomplot.h>

#include <cmath>

#include "common/curvesmoothing.h"
#include "common/hintlabel.h"
#include "common/plotfitting.h"
#include "common/theme.h"

TrainingCharts::TrainingCharts(QWidget* parent)
    : QWidget(parent), following_(new PlotFollowing([this](QCustomPlot* plot) { refit(plot); }, this)) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  auto* bar = new QHBoxLayout;
  logScale_ = new QCheckBox(QStringLiteral("Log scale"));
  logScale_->setObjectName(QStringLiteral("logScale"));
  logScale_->setToolTip(QStringLiteral("Logarithmic y axis for the loss and learning-rate charts (Ctrl+Shift+L). "
                                       "SCST losses below zero are not drawn on a log axis."));
  auto* fit = new QPushButton(QStringLiteral("Fit charts"));
  fit->setObjectName(QStringLiteral("fitCharts"));
  fit->setToolTip(QStringLiteral("Fit every chart to its data and follow new points (also: double-click a chart)"));
  auto* hint = new HintLabel(QStringLiteral("Drag to pan, wheel to zoom, double-click to fit"));
  hint->setWordWrap(true);  // on a narrow page it takes two lines rather than the charts' width
  bar->addWidget(logScale_);
  bar->addWidget(fit);
  bar->addStretch(1);
  bar->addWidget(hint);
  layout->addLayout(bar);

  auto* grid = new QGridLayout;
  grid->setSpacing(6);
  lossPlot_ = makePlot(QStringLiteral("Training loss"), QStringLiteral("optimizer step"), QStringLiteral("loss"));
  lrPlot_ = makePlot(QStringLiteral("Learning rate"), QStringLiteral("optimizer step"), QStringLiteral("lr"));
  validationPlot_ = makePlot(QStringLiteral("Validation"), QStringLiteral("epoch (all stages)"), QStringLiteral("score"));
  speedPlot_ = makePlot(QStringLiteral("Throughput"), QStringLiteral("optimizer step"), QStringLiteral("images/s"));
  grid->addWidget(lossPlot_, 0, 0);
  grid->addWidget(lrPlot_, 0, 1);
  grid->addWidget(validationPlot_, 1, 0);
  grid->addWidget(speedPlot_, 1, 1);
  layout->addLayout(grid, 1);

  const Theme theme = Theme::current();
  using Series = Theme::Series;
  addSeries(lossPlot_, QStringLiteral("loss"), QStringLiteral("raw"), theme.series(Series::LossRaw), false);
  addSeries(lossPlot_, QStringLiteral("loss_smoothed"), QStringLiteral("smoothed"), theme.series(Series::LossSmoothed), false)
      ->setPen(QPen(theme.series(Series::LossSmoothed), 2));
  addSeries(lrPlot_, QStringLiteral("lr"), QStringLiteral("lr"), theme.series(Series::LearningRate), false);
  addSeries(validationPlot_, QStringLiteral("cider_d"), QStringLiteral("CIDEr-D"), theme.series(Series::CiderD), true);
  addSeries(validationPlot_, QStringLiteral("bleu4"), QStringLiteral("BLEU-4"), theme.series(Series::Bleu4), true);
  addSeries(speedPlot_, QStringLiteral("images_per_s"), QStringLiteral("images/s"), theme.series(Series::Throughput), false);
  lrPlot_->legend->setVisible(false);
  speedPlot_->legend->setVisible(false);
  validationPlot_->legend->setVisible(true);
  // Scores rise over training: early scores are low, so the top left stays free for the legend.
  validationPlot_->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignLeft);
  // Epochs are whole numbers: no 0.5 ticks.
  auto epochTicker = QSharedPointer<QCPAxisTickerFixed>::create();
  epochTicker->setTickStep(1.0);
  epochTicker->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
  validationPlot_->xAxis->setTicker(epochTicker);
  lossPlot_->legend->setVisible(true);

  connect(logScale_, &QCheckBox::toggled, this, &TrainingCharts::setLogScale);
  connect(fit, &QPushButton::clicked, this, &TrainingCharts::fitAll);
}

QCustomPlot* TrainingCharts::makePlot(const QString& title, const QString& xLabel, const QString& yLabel) {
  auto* plot = new QCustomPlot;
  plot->setMinimumSize(180, 150);  // four side by side still fit a 1024-pixel screen
  plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  plot->plotLayout()->insertRow(0);
  auto* heading = new QCPTextElement(plot, title, QFont(font().family(), 10, QFont::Bold));
  plot->plotLayout()->addElement(0, 0, heading);
  plot->xAxis->setLabel(xLabel);
  plot->yAxis->setLabel(yLabel);
  plot->legend->setFont(QFont(font().family(), 8));
  Theme::current().applyTo(plot);
  plot->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignRight);
  plot->setToolTip(QStringLiteral("%1: drag to pan, wheel to zoom, double-click to fit").arg(title));
  following_->watch(plot);
  plots_ << plot;
  return plot;
}

QCPGraph* TrainingCharts::addSeries(QCustomPlot* plot, const QString& name, const QString& label, const QColor& colour,
                                    bool dots) {
  auto* graph = plot->addGraph();
  graph->setName(label);
  graph->setPen(QPen(colour, 1.0));  // wider pens take Qt's path stroker (docs/performance.md, "Thin pens")
  if (dots) graph->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, colour, colour, 6));
  graph->setAdaptiveSampling(true);
  graphs_[name] = graph;
  return graph;
}

void TrainingCharts::setData(const QString& runKey, const std::vector<expnet::StepRecord>& steps,
                             const std::vector<expnet::ValidationRecord>& validations) {
  const int64_t lastStep = steps.empty() ? -1 : steps.back().step;
  // Two runs of one recipe have as many rows: the same counts never mean the same run.
  if (runKey == runKey_ && steps.size() == stepCount_ && validations.size() == validationCount_ && lastStep == lastStep_) return;
  runKey_ = runKey;
  stepCount_ = steps.size();
  validationCount_ = validations.size();
  lastStep_ = lastStep;
  QVector<double> x, loss, lr, speed;
  QVector<qint64> stages;  // the smoothed loss starts afresh at each stage
  x.reserve(int(steps.size()));
  for (const auto& s : steps) {
    stages << s.stage;
    x << double(s.step);
    loss << (s.skipped ? std::nan("") : s.loss);
    lr << s.lr;
    speed << s.images_per_s;
  }
  graphs_[QStringLiteral("loss")]->setData(x, loss, true);
  graphs_[QStringLiteral("loss_smoothed")]->setData(x, smoothCurve(loss, 0.9, stages), true);
  graphs_[QStringLiteral("lr")]->setData(x, lr, true);
  graphs_[QStringLiteral("images_per_s")]->setData(x, speed, true);
  QVector<double> epoch, cider, bleu4;
  for (const auto& v : validations) {
    epoch << double(epoch.size() + 1);
    cider << v.cider_d;
    bleu4 << v.bleu4;
  }
  graphs_[QStringLiteral("cider_d")]->setData(epoch, cider, true);
  graphs_[QStringLiteral("bleu4")]->setData(epoch, bleu4, true);
  // A hidden page draws nothing: rendering thousands of points is most of what following a run costs.
  stale_ = !isVisible();
  if (!stale_) redraw();
}

void TrainingCharts::redraw() {
  for (auto* plot : plots_) {
    if (!following_->userMoved(plot)) refit(plot);
    plot->replot(QCustomPlot::rpQueuedReplot);
  }
}

void TrainingCharts::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  if (std::exchange(stale_, false)) redraw();
}

void TrainingCharts::clear() { setData(QString(), {}, {}); }

void TrainingCharts::refit(QCustomPlot* plot) {
  fitPlotAxes(plot);
  if (plot == validationPlot_) {  // epochs are whole numbers: half an epoch of margin
    plot->xAxis->setRange(plot->xAxis->range().lower - 0.5, plot->xAxis->range().upper + 0.5);
  }
  plot->replot(QCustomPlot::rpQueuedReplot);
}

void TrainingCharts::fitAll() {
  following_->followAll();
  for (auto* plot : plots_) refit(plot);
}

bool TrainingCharts::logScale() const { return logScale_->isChecked(); }

void TrainingCharts::setLogScale(bool on) {
  if (logScale_->isChecked() != on) logScale_->setChecked(on);  // re-enters through toggled()
  for (auto* plot : {lossPlot_, lrPlot_}) {
    plot->yAxis->setScaleType(on ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
    if (on)
      plot->yAxis->setTicker(QSharedPointer<QCPAxisTickerLog>::create());
    else
      plot->yAxis->setTicker(QSharedPointer<QCPAxisTicker>::create());
    plot->yAxis->setNumberFormat(on ? QStringLiteral("eb") : QStringLiteral("gb"));
    refit(plot);
  }
}

QVector<QPointF> TrainingCharts::points(const QString& series) const {
  QVector<QPointF> out;
  const QCPGraph* graph = graphs_.value(series);
  if (!graph) return out;
  for (auto it = graph->data()->constBegin(); it != graph->data()->constEnd(); ++it) out << QPointF(it->key, it->value);
  return out;
}

QJsonArray TrainingCharts::describe() const {
  QJsonArray out;
  static const QMap<QString, QString> chartOf{{"loss", "Training loss"},     {"loss_smoothed", "Training loss"},
                                              {"lr", "Learning rate"},       {"images_per_s", "Throughput"},
                                              {"cider_d", "Validation"},     {"bleu4", "Validation"}};
  for (auto it = graphs_.constBegin(); it != graphs_.constEnd(); ++it) {
    const auto data = it.value()->data();
    QJsonObject series{{"name", it.key()}, {"chart", chartOf.value(it.key())}, {"points", data->size()}};
    if (!data->isEmpty()) {
      const auto last = data->constEnd() - 1;
      series.insert(QStringLiteral("last_x"), last->key);
      series.insert(QStringLiteral("last_y"), std::isfinite(last->value) ? QJsonValue(last->value) : QJsonValue());
    }
    out << series;
  }
  return out;
}

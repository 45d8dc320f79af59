#include "runs/runcurves.h"

#include <QCheckBox>
#include <QComboBox>
#include <QEvent>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QJsonObject>
#include <QLabel>
#include <QMouseEvent>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSlider>
#include <QVBoxLayout>
#include <qcustomplot.h>

#include <algorithm>
#include <cmath>

#include "common/curvesmoothing.h"
#include "common/hintlabel.h"
#include "common/plotfitting.h"
#include "common/theme.h"
#include "common/wrappingrow.h"
#include "runs/runcurveaxes.h"

namespace {
struct MetricInfo {
  const char *id, *title, *yLabel;
  bool smoothed;    // an EMA line with the raw one faint behind
  bool validation;  // one point per validation, drawn with dots
};
const MetricInfo kMetrics[] = {
    {"loss", "Training loss", "loss", true, false},
    {"cider_d", "Validation CIDEr-D", "CIDEr-D", false, true},
    {"bleu4", "Validation BLEU-4", "BLEU-4", false, true},
    {"lr", "Learning rate", "lr", false, false},
    {"images_per_s", "Throughput", "images/s", true, false},
};
const MetricInfo* metricInfo(const QString& metric) {
  for (const auto& m : kMetrics)
    if (metric == QLatin1String(m.id)) return &m;
  return nullptr;
}
QString smoothedName(const QString& metric) { return metric + QStringLiteral("_smoothed"); }
void setSeries(QCPGraph* graph, const QVector<double>& keys, const QVector<double>& values) {
  graph->setData(keys, values, std::is_sorted(keys.begin(), keys.end()));
}

// The point of `graph` nearest x, when x lies within its points give or take `tolerance`.
const QCPGraphData* nearestPoint(const QCPGraph* graph, double x, double tolerance) {
  const auto data = graph->data();
  if (data->isEmpty()) return nullptr;
  const double first = data->constBegin()->key, last = (data->constEnd() - 1)->key;
  if (data->size() > 1) tolerance = std::max(tolerance, (last - first) / (data->size() - 1));
  if (x < first - tolerance || x > last + tolerance) return nullptr;
  auto it = std::lower_bound(data->constBegin(), data->constEnd(), x,
                             [](const QCPGraphData& p, double key) { return p.key < key; });
  if (it == data->constEnd() || (it != data->constBegin() && x - (it - 1)->key < it->key - x)) --it;
  return &*it;
}

// Escaped, with non-breaking spaces: lines wrap between runs, never inside one's entry.
QString htmlUnbroken(const QString& text) {
  return text.toHtmlEscaped().replace(QLatin1Char(' '), QStringLiteral("&nbsp;"));
}

QString formatValue(double v) { return std::isfinite(v) ? QString::number(v, 'g', 4) : QStringLiteral("–"); }
}  // namespace

RunCurves::RunCurves(QWidget* parent)
    : QWidget(parent), following_(new PlotFollowing([this](QCustomPlot* plot) { refit(plot); }, this)) {
  const auto named = [](auto* widget, const char* name, const QString& tip = QString()) {
    widget->setObjectName(QString::fromLatin1(name));
    widget->setToolTip(tip);
    return widget;
  };
  xAxisBox_ = named(new QComboBox, "curvesXAxis",
                    "X axis: optimizer step; epoch, counted on across stages; or training time");
  xAxisBox_->addItems({QStringLiteral("Optimizer step"), QStringLiteral("Epoch"), QStringLiteral("Wall time")});
  smoothingSlider_ = named(new QSlider(Qt::Horizontal), "curvesSmoothing",
                           "Smoothing of loss and images/s (exponential moving average, as TensorBoard's); "
                           "the raw curve stays faint behind");
  smoothingSlider_->setRange(0, 99);
  smoothingSlider_->setValue(qRound(smoothing_ * 100));
  smoothingSlider_->setFixedWidth(140);
  smoothingValue_ = new QLabel(QString::number(smoothing_, 'f', 2));
  logScale_ = named(new QCheckBox(QStringLiteral("Log scale")), "curvesLogScale",
                    "Logarithmic y axis for the loss and learning-rate charts "
                    "(SCST losses below zero are not drawn on a log axis)");
  auto* fit = named(new QPushButton(QStringLiteral("Fit charts")), "curvesFit",
                    "Fit every chart to its data and follow new points (also: double-click a chart)");
  auto* bar = new WrappingRow;  // the controls in two rows where the page is narrow
  bar->addWidget(widgetRow({new HintLabel(QStringLiteral("X axis:")), xAxisBox_, new HintLabel(QStringLiteral("  Smoothing:")),
                            smoothingSlider_, smoothingValue_}));
  auto* hint = new HintLabel(QStringLiteral("Drag to pan, wheel to zoom, double-click to fit"));
  hint->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
  bar->addWidget(widgetRow({logScale_, fit, hint}, 2), 1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(bar);
  legend_ = named(new QLabel, "curvesLegend");
  readout_ = named(new QLabel, "curvesReadout");
  for (QLabel* label : {legend_, readout_}) {
    label->setWordWrap(true);
    label->setTextFormat(Qt::RichText);
  }
  layout->addWidget(legend_);
  note_ = named(new HintLabel(QString(), HintLabel::Kind::Notice), "curvesNote");
  note_->hide();
  layout->addWidget(note_);

  // Loss wide on top beside CIDEr-D (what a comparison is mostly about), the rest below.
  auto* grid = new QGridLayout;
  grid->setSpacing(6);
  for (const auto& m : kMetrics) makePlot(m.id, m.title, m.yLabel);
  grid->addWidget(plots_.value("loss"), 0, 0, 1, 2);
  grid->addWidget(plots_.value("cider_d"), 0, 2);
  grid->addWidget(plots_.value("bleu4"), 1, 0);
  grid->addWidget(plots_.value("lr"), 1, 1);
  grid->addWidget(plots_.value("images_per_s"), 1, 2);
  grid->setRowStretch(0, 3);
  grid->setRowStretch(1, 2);
  for (int c = 0; c < 3; ++c) grid->setColumnStretch(c, 1);
  layout->addLayout(grid, 1);

  layout->addWidget(readout_);

  // One chart per event-loop pass: with many long runs, all five charts in one
  // go would hold input back (docs/performance.md, "Figures behind choices in the code").
  replotTimer_.setSingleShot(true);
  replotTimer_.setInterval(0);
  connect(&replotTimer_, &QTimer::timeout, this, [this] {
    if (!replotQueue_.isEmpty()) replotQueue_.takeFirst()->replot();
    if (!replotQueue_.isEmpty()) replotTimer_.start();
  });
  fillTimer_.setSingleShot(true);
  fillTimer_.setInterval(0);
  connect(&fillTimer_, &QTimer::timeout, this, &RunCurves::fillSome);
  connect(xAxisBox_, &QComboBox::currentIndexChanged, this, [this](int index) { setXAxis(XAxis(index)); });
  connect(smoothingSlider_, &QSlider::valueChanged, this, [this](int v) { setSmoothing(v / 100.0); });
  connect(logScale_, &QCheckBox::toggled, this, &RunCurves::setLogScale);
  connect(fit, &QPushButton::clicked, this, &RunCurves::fitAll);
  updateXAxisLabels();
  updateLegend();
  hideReadout();
}

QStringList RunCurves::metrics() {
  QStringList out;
  for (const auto& m : kMetrics) out << QString::fromLatin1(m.id);
  return out;
}

QCustomPlot* RunCurves::makePlot(const QString& metric, const QString& title, const QString& yLabel) {
  auto* plot = new QCustomPlot;
  plot->setObjectName(QStringLiteral("curves_") + metric);
  plot->setMinimumSize(180, 150);  // four side by side still fit a 1024-pixel screen
  plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  // Hundreds of lines: drawn without antialiasing while dragged, so panning stays fluid.
  plot->setNoAntialiasingOnDrag(true);
  // Lines as plain polylines (joins not smoothed: the pens are 1 px wide anyway),
  // which draw faster (docs/performance.md, "Figures behind choices in the code").
  plot->setPlottingHints(QCP::phFastPolylines | QCP::phCacheLabels);
  plot->setMouseTracking(true);
  plot->plotLayout()->insertRow(0);
  plot->plotLayout()->addElement(0, 0, new QCPTextElement(plot, title, QFont(font().family(), 10, QFont::Bold)));
  plot->yAxis->setLabel(yLabel);
  Theme::current().applyTo(plot);
  // Raw lines under every run's smoothed line; the cursor in its own buffer so
  // that hovering repaints only that layer, not the thousands of points.
  plot->addLayer(QStringLiteral("raw"), plot->layer(QStringLiteral("main")), QCustomPlot::limBelow);
  plot->addLayer(QStringLiteral("cursor"), plot->layer(QStringLiteral("main")), QCustomPlot::limAbove);
  plot->layer(QStringLiteral("cursor"))->setMode(QCPLayer::lmBuffered);
  auto* cursor = new QCPItemStraightLine(plot);
  cursor->setLayer(QStringLiteral("cursor"));
  cursor->setSelectable(false);
  cursor->setPen(QPen(Theme::current().mutedText(), 1, Qt::DashLine));
  for (auto* position : {cursor->point1, cursor->point2}) position->setTypeY(QCPItemPosition::ptAxisRectRatio);
  cursor->point1->setCoords(0, 0);
  cursor->point2->setCoords(0, 1);
  cursor->setVisible(false);
  cursors_[plot] = cursor;
  plot->installEventFilter(this);

  following_->watch(plot);
  connect(plot, &QCustomPlot::mouseMove, this, [this, plot, metric](QMouseEvent* event) {
    showReadout(metric, plot->xAxis->pixelToCoord(event->position().x()));
  });
  plots_[metric] = plot;
  return plot;
}

bool RunCurves::eventFilter(QObject* watched, QEvent* event) {
  auto* plot = qobject_cast<QCustomPlot*>(watched);
  if (event->type() == QEvent::Leave && cursors_.contains(plot)) hideReadout();
  if (event->type() == QEvent::Resize) replotQueue_.removeAll(plot);  // a resized chart redraws itself
  return QWidget::eventFilter(watched, event);
}

void RunCurves::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  reserveReadoutHeight();
}

// The read-out keeps one height while the mouse moves: a line more or less
// would resize, and so redraw, every chart. Its height fits the longest text.
void RunCurves::reserveReadoutHeight() {
  QString longest = QStringLiteral("<b>Validation CIDEr-D at epoch 000.00</b>:");
  for (const auto& run : runs_)
    longest += QStringLiteral(" &#9632;&nbsp;%1&nbsp;<b>0.0000&nbsp;(raw&nbsp;0.0000)</b> &nbsp;")
                   .arg(htmlUnbroken(run.input.label));
  QLabel probe(longest);
  probe.setWordWrap(true);
  probe.setFont(readout_->font());
  const int height = probe.heightForWidth(width());  // the read-out spans the widget
  if (height > 0 && height != readout_->height()) readout_->setFixedHeight(height);
}

RunCurves::Run& RunCurves::addRun(RunSeriesInput input) {
  Run& run = runs_.emplace_back();
  run.input = std::move(input);
  if (!run.input.colour.isValid()) run.input.colour = Theme::current().runColour(int(runs_.size()) - 1);
  const QColor colour = run.input.colour;
  QColor faint = colour;
  faint.setAlpha(60);
  for (const auto& m : kMetrics) {
    QCustomPlot* plot = plots_.value(m.id);
    auto* graph = plot->addGraph();
    graph->setName(run.input.label);
    graph->setAdaptiveSampling(true);
    run.graphs[m.id] = graph;
    if (m.smoothed) {
      graph->setLayer(QStringLiteral("raw"));
      graph->setPen(QPen(faint, 1));
      graph->setAntialiased(false);  // faint anyway, and a quarter of the drawing time
      auto* smoothed = plot->addGraph();
      smoothed->setName(run.input.label);
      smoothed->setAdaptiveSampling(true);
      // Width 1 throughout: wider or fractional pens take Qt's path stroker,
      // 100 times slower on 10,000 noisy points (seconds per chart for 50 runs).
      smoothed->setPen(QPen(colour, 1));
      run.graphs[smoothedName(m.id)] = smoothed;
    } else {
      graph->setPen(QPen(colour, m.validation ? 1.5 : 1));  // one point per epoch: wider is cheap
      if (m.validation) graph->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, colour, colour, 5));
    }
  }
  return run;
}

void RunCurves::fillRun(Run& run) {
  const auto& steps = run.input.rows->steps;
  const auto& validations = run.input.rows->validations;
  run.hasWallTime = std::any_of(steps.begin(), steps.end(), [](const expnet::StepRecord& s) { return s.wall_s > 0; });
  const CurvePositions at = curvePositions(steps, validations, xAxis_);
  const std::vector<double>& x = at.steps;
  QVector<double> lossX, loss, stepX, lr, speed;
  for (auto* v : {&lossX, &loss, &stepX, &lr, &speed}) v->reserve(int(steps.size()));
  run.lossStages.clear();
  run.stepStages.clear();
  for (size_t i = 0; i < steps.size(); ++i) {
    if (!std::isfinite(x[i])) continue;
    const auto& s = steps[i];
    // Skipped steps (non-finite loss, update not applied) leave a gap in the loss only.
    if (!s.skipped && std::isfinite(s.loss)) {
      lossX << x[i];
      loss << s.loss;
      run.lossStages << s.stage;
    }
    run.stepStages << s.stage;
    stepX << x[i];
    lr << s.lr;
    speed << s.images_per_s;
  }
  setSeries(run.graphs.value("loss"), lossX, loss);
  setSeries(run.graphs.value("lr"), stepX, lr);
  setSeries(run.graphs.value("images_per_s"), stepX, speed);
  QVector<double> vx, cider, bleu4;
  for (size_t i = 0; i < validations.size(); ++i) {
    if (!std::isfinite(at.validations[i])) continue;
    vx << at.validations[i];
    cider << validations[i].cider_d;
    bleu4 << validations[i].bleu4;
  }
  setSeries(run.graphs.value("cider_d"), vx, cider);
  setSeries(run.graphs.value("bleu4"), vx, bleu4);
  fillSmoothed(run);
}

void RunCurves::fillSmoothed(Run& run) {
  for (const auto& m : kMetrics) {
    if (!m.smoothed) continue;
    const auto data = run.graphs.value(m.id)->data();
    QVector<double> keys, values;
    for (auto it = data->constBegin(); it != data->constEnd(); ++it) {
      keys << it->key;
      values << it->value;
    }
    run.graphs.value(smoothedName(m.id))->setData(
        keys, smoothCurve(values, smoothing_, m.id == QLatin1String("loss") ? run.lossStages : run.stepStages), true);
  }
}

void RunCurves::setRuns(QVector<RunSeriesInput> runs) {
  for (auto* plot : plots_) plot->clearGraphs();
  runs_.clear();
  runs_.reserve(size_t(runs.size()));
  for (auto& input : runs) addRun(std::move(input));
  following_->followAll();
  updateLegend();
  reserveReadoutHeight();
  queueFill();
}

void RunCurves::queueFill() {
  nextFill_ = 0;
  size_t total = 0;
  for (const auto& run : runs_) total += run.input.rows->steps.size();
  if (total <= 100000) {
    for (auto& run : runs_) fillRun(run);
    nextFill_ = runs_.size();
    fillTimer_.stop();
    dataChanged(true);
    return;
  }
  fillTimer_.start();
}

void RunCurves::fillSome() {
  // 50,000 steps per pass: a few milliseconds (docs/performance.md, "Figures behind choices in the code").
  size_t filled = 0;
  while (fillPending() && filled < 50000) {
    fillRun(runs_[nextFill_]);
    filled += runs_[nextFill_].input.rows->steps.size() + 1;
    ++nextFill_;
  }
  if (fillPending())
    fillTimer_.start();
  else
    dataChanged(true);
}

void RunCurves::updateRun(const RunSeriesInput& input) {
  auto it = std::find_if(runs_.begin(), runs_.end(), [&](const Run& r) { return r.input.key == input.key; });
  if (it == runs_.end()) {
    addRun(input);
    it = runs_.end() - 1;
    reserveReadoutHeight();
  } else {
    const QColor colour = it->input.colour;  // its lines are drawn in it: the run keeps it
    it->input = input;
    it->input.colour = colour;
  }
  updateLegend();  // new, or its label may have changed (a rename)
  if (fillPending()) {
    // A fill in progress: a run it has not reached yet is drawn with the rest.
    if (size_t(it - runs_.begin()) < nextFill_) fillRun(*it);
    return;
  }
  nextFill_ = runs_.size();
  fillRun(*it);
  dataChanged(true);
}

QStringList RunCurves::runKeys() const {
  QStringList out;
  for (const auto& run : runs_) out << run.input.key;
  return out;
}

void RunCurves::dataChanged(bool fit) {
  updateNote();
  for (auto* plot : plots_) {
    if (fit && !following_->userMoved(plot)) refit(plot);
    replotLater(plot);
  }
  if (!readoutMetric_.isEmpty()) showReadout(readoutMetric_, readoutX_);
}

void RunCurves::refit(QCustomPlot* plot) {
  const bool dots = plot == plots_.value("cider_d") || plot == plots_.value("bleu4");
  fitPlotAxes(plot, dots ? 0.03 : 0);
  replotLater(plot);
}

void RunCurves::replotLater(QCustomPlot* plot) {
  if (!replotQueue_.contains(plot)) replotQueue_ << plot;
  if (!replotTimer_.isActive()) replotTimer_.start();
}

void RunCurves::fitAll() {
  following_->followAll();
  for (auto* plot : plots_) refit(plot);
}

void RunCurves::setXAxis(XAxis axis) {
  if (xAxisBox_->currentIndex() != int(axis)) {
    const QSignalBlocker block(xAxisBox_);
    xAxisBox_->setCurrentIndex(int(axis));
  }
  if (axis == xAxis_) return;
  xAxis_ = axis;
  readoutMetric_.clear();
  updateXAxisLabels();
  following_->followAll();  // the old ranges mean nothing on the new axis
  hideReadout();
  queueFill();
}

void RunCurves::updateXAxisLabels() {
  QSharedPointer<QCPAxisTicker> ticker = QSharedPointer<QCPAxisTicker>::create();
  if (xAxis_ == XAxis::WallTime) {
    auto time = QSharedPointer<QCPAxisTickerTime>::create();
    time->setTimeFormat(QStringLiteral("%h:%m:%s"));
    time->setFieldWidth(QCPAxisTickerTime::tuHours, 1);
    ticker = time;
  }
  const QString label = xAxis_ == XAxis::Step    ? QStringLiteral("optimizer step")
                        : xAxis_ == XAxis::Epoch ? QStringLiteral("epoch (all stages)")
                                                 : QStringLiteral("training time (h:mm:ss)");
  for (auto* plot : plots_) {
    plot->xAxis->setTicker(ticker);
    plot->xAxis->setLabel(label);
  }
}

void RunCurves::setSmoothing(double weight) {
  weight = std::clamp(weight, 0.0, 0.99);
  {
    const QSignalBlocker block(smoothingSlider_);
    smoothingSlider_->setValue(qRound(weight * 100));
  }
  smoothingValue_->setText(QString::number(weight, 'f', 2));
  if (weight == smoothing_) return;
  smoothing_ = weight;
  for (auto& run : runs_) fillSmoothed(run);
  dataChanged(false);  // smoothing never leaves the raw points' range: no refit
}

bool RunCurves::logScale() const { return logScale_->isChecked(); }

void RunCurves::setLogScale(bool on) {
  if (logScale_->isChecked() != on) logScale_->setChecked(on);  // re-enters through toggled()
  for (const char* metric : {"loss", "lr"}) {
    QCustomPlot* plot = plots_.value(metric);
    plot->yAxis->setScaleType(on ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
    plot->yAxis->setTicker(on ? QSharedPointer<QCPAxisTicker>(new QCPAxisTickerLog)
                              : QSharedPointer<QCPAxisTicker>::create());
    plot->yAxis->setNumberPrecision(on ? 3 : 6);  // log ticks: "2", "1·10⁻⁴", not "2.000000·10⁰"
    refit(plot);
  }
}

void RunCurves::updateLegend() {
  if (runs_.empty()) {
    legend_->setText(QStringLiteral("<span style=\"color:%1\">Select runs in the table to overlay their curves.</span>")
                         .arg(Theme::css(Theme::current().mutedText())));
    return;
  }
  QStringList entries;
  for (const auto& run : runs_) {
    entries << QStringLiteral("<span style=\"color:%1\">&#9632;</span>&nbsp;%2")
                   .arg(Theme::css(run.input.colour), htmlUnbroken(run.input.label));
  }
  legend_->setText(entries.join(QStringLiteral(" &nbsp;&nbsp; ")));
}

void RunCurves::updateNote() {
  note_->setText(note());
  note_->setToolTip(runsWithoutWallTime().join(QLatin1Char('\n')));
  note_->setVisible(!note_->text().isEmpty());
}

QStringList RunCurves::runsWithoutWallTime() const {
  QStringList out;
  for (const auto& run : runs_)
    if (!run.hasWallTime && !run.input.rows->steps.empty()) out << run.input.label;
  return out;
}

QString RunCurves::note() const {
  const auto n = xAxis_ == XAxis::WallTime ? runsWithoutWallTime().size() : 0;
  if (n == 0) return {};
  return n == 1 ? QStringLiteral("1 run has no wall time (older run store)")
                : QStringLiteral("%1 runs have no wall time (older run store)").arg(n);
}

QString RunCurves::formatX(double x) const {
  if (xAxis_ == XAxis::Step) return QStringLiteral("step %1").arg(qRound64(x));
  if (xAxis_ == XAxis::Epoch) return QStringLiteral("epoch %1").arg(x, 0, 'f', 2);
  const qint64 s = qRound64(std::max(x, 0.0));
  const QLatin1Char zero('0');
  return QStringLiteral("%1:%2:%3").arg(s / 3600).arg(s / 60 % 60, 2, 10, zero).arg(s % 60, 2, 10, zero);
}

void RunCurves::showReadout(const QString& metric, double x) {
  const MetricInfo* info = metricInfo(metric);
  QCustomPlot* hovered = plots_.value(metric);
  if (!info || !hovered || !std::isfinite(x)) return hideReadout();
  readoutMetric_ = metric;
  readoutX_ = x;
  for (auto it = cursors_.constBegin(); it != cursors_.constEnd(); ++it) {
    it.value()->point1->setCoords(x, 0);
    it.value()->point2->setCoords(x, 1);
    it.value()->setVisible(true);
    it.key()->layer(QStringLiteral("cursor"))->replot();
  }
  // Snap to a run's nearest point within 2% of the visible range (or its own spacing).
  const double tolerance = hovered->xAxis->range().size() * 0.02;
  QStringList plain, rich;
  for (const auto& run : runs_) {
    const QCPGraph* line = run.graphs.value(info->smoothed ? smoothedName(metric) : metric);
    const QCPGraphData* point = line ? nearestPoint(line, x, tolerance) : nullptr;
    QString value = point ? formatValue(point->value) : QStringLiteral("–");
    if (point && info->smoothed && smoothing_ > 0) {
      const QCPGraphData* raw = nearestPoint(run.graphs.value(metric), point->key, 0);
      if (raw) value += QStringLiteral(" (raw %1)").arg(formatValue(raw->value));
    }
    plain << QStringLiteral("%1 %2").arg(run.input.label, value);
    rich << QStringLiteral("<span style=\"color:%1\">&#9632;</span>&nbsp;%2&nbsp;<b>%3</b>")
                .arg(Theme::css(run.input.colour), htmlUnbroken(run.input.label), htmlUnbroken(value));
  }
  const QString head = QStringLiteral("%1 at %2").arg(QString::fromLatin1(info->title), formatX(x));
  readoutText_ = head + QStringLiteral(": ") + plain.join(QStringLiteral(" · "));
  readout_->setText(QStringLiteral("%1: %2").arg(head.toHtmlEscaped(), rich.join(QStringLiteral(" &nbsp; "))));
}

void RunCurves::hideReadout() {
  readoutMetric_.clear();
  for (auto it = cursors_.constBegin(); it != cursors_.constEnd(); ++it) {
    if (!it.value()->visible()) continue;
    it.value()->setVisible(false);
    it.key()->layer(QStringLiteral("cursor"))->replot();
  }
  readoutText_ = QStringLiteral("Hover a chart to read every run's value at that point");
  readout_->setText(QStringLiteral("<span style=\"color:%1\">%2</span>")
                        .arg(Theme::css(Theme::current().mutedText()), readoutText_.toHtmlEscaped()));
}

QVector<QPointF> RunCurves::points(const QString& key, const QString& metric, bool smoothed) const {
  QVector<QPointF> out;
  auto run = std::find_if(runs_.begin(), runs_.end(), [&](const Run& r) { return r.input.key == key; });
  if (run == runs_.end()) return out;
  const bool hasSmoothed = run->graphs.contains(smoothedName(metric));
  const QCPGraph* graph = run->graphs.value(smoothed && hasSmoothed ? smoothedName(metric) : metric);
  if (!graph) return out;
  const auto data = graph->data();
  for (auto it = data->constBegin(); it != data->constEnd(); ++it) out << QPointF(it->key, it->value);
  return out;
}

QJsonArray RunCurves::describe() const {
  QJsonArray out;
  for (const auto& run : runs_) {
    for (const auto& m : kMetrics) {
      for (bool smoothed : {false, true}) {
        if (smoothed && !m.smoothed) continue;
        const QCPGraph* graph = run.graphs.value(smoothed ? smoothedName(m.id) : QString::fromLatin1(m.id));
        const auto data = graph->data();
        QJsonObject series{{"run", run.input.label},  {"key", run.input.key}, {"metric", m.id},
                           {"smoothed", smoothed},     {"points", data->size()}};
        if (!data->isEmpty()) {
          const auto last = data->constEnd() - 1;
          series.insert(QStringLiteral("last"), QJsonArray{last->key, last->value});
        }
        out << series;
      }
    }
  }
  return out;
}

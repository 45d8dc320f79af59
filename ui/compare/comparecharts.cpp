#include "compare/comparecharts.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QTableWidget>
#include <QVBoxLayout>
#include <qcustomplot.h>

#include <algorithm>

#include "common/theme.h"

namespace {
const QStringList kColumns = {QStringLiteral("mode"),     QStringLiteral("K"),        QStringLiteral("beam"),
                              QStringLiteral("steps"),    QStringLiteral("ms/image"), QStringLiteral("speed-up"),
                              QStringLiteral("CIDEr-D"),  QStringLiteral("BLEU-4")};

double score(const QJsonObject& mode, const char* key) {
  return mode.value(QStringLiteral("scores")).toObject().value(QLatin1String(key)).toDouble();
}

// The cells of one mode's row, as shown and as exported.
QStringList figureCells(const QJsonObject& mode) {
  const bool scored = mode.contains(QStringLiteral("scores"));
  return {mode.value(QStringLiteral("name")).toString(),
          QString::number(mode.value(QStringLiteral("groups")).toInt()),
          QString::number(mode.value(QStringLiteral("beam")).toInt()),
          QString::number(mode.value(QStringLiteral("steps_mean")).toDouble(), 'f', 2),
          QString::number(mode.value(QStringLiteral("decode_ms_per_image")).toDouble(), 'f', 3),
          QString::number(mode.value(QStringLiteral("speedup")).toDouble(), 'f', 2),
          scored ? QString::number(score(mode, "CIDEr"), 'f', 4) : QString(),
          scored ? QString::number(score(mode, "Bleu_4"), 'f', 4) : QString()};
}

}  // namespace

CompareCharts::CompareCharts(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  auto* plots = new QHBoxLayout;
  scatter_ = makePlot(QStringLiteral("CIDEr-D against decode time"), QStringLiteral("decode ms per image (median)"),
                      QStringLiteral("CIDEr-D"));
  scatter_->setObjectName(QStringLiteral("compareScatter"));
  bars_ = makePlot(QStringLiteral("Mean decoding steps"), QString(), QStringLiteral("steps per image"));
  bars_->setObjectName(QStringLiteral("compareSteps"));
  plots->addWidget(scatter_, 3);
  plots->addWidget(bars_, 2);
  layout->addLayout(plots, 3);
  figures_ = new QTableWidget(0, int(kColumns.size()));
  figures_->setObjectName(QStringLiteral("compareFigures"));
  figures_->setHorizontalHeaderLabels(kColumns);
  figures_->verticalHeader()->setVisible(false);
  figures_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  figures_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  figures_->setToolTip(QStringLiteral("ms/image: median decode time of one image alone (batch 1), warm; speed-up: "
                                      "aic-greedy's ms/image over the mode's, measured side by side"));
  layout->addWidget(figures_, 2);
}

QCustomPlot* CompareCharts::makePlot(const QString& title, const QString& xLabel, const QString& yLabel) {
  auto* plot = new QCustomPlot;
  plot->setMinimumSize(200, 160);  // both side by side beside the controls on a 1024-pixel screen
  plot->plotLayout()->insertRow(0);
  plot->plotLayout()->addElement(0, 0, new QCPTextElement(plot, title, QFont(font().family(), 10, QFont::Bold)));
  plot->xAxis->setLabel(xLabel);
  plot->yAxis->setLabel(yLabel);
  Theme::current().applyTo(plot);
  return plot;
}

void CompareCharts::clear() {
  result_ = {};
  for (auto* plot : {scatter_, bars_}) {
    plot->clearPlottables();
    plot->clearItems();
    plot->replot();
  }
  figures_->setRowCount(0);
}

void CompareCharts::setResult(const QJsonObject& result) {
  clear();
  result_ = result;
  const Theme theme = Theme::current();
  const QJsonArray modes = result.value(QStringLiteral("modes")).toArray();
  double xMax = 0, yMin = 1e9, yMax = -1e9, stepsMax = 0;
  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  for (int i = 0; i < modes.size(); ++i) {
    const QJsonObject mode = modes[i].toObject();
    const QString name = mode.value(QStringLiteral("name")).toString();
    const QColor colour = theme.groupColour(i);  // the same hues as the PNAIC groups: distinct in both themes
    const double ms = mode.value(QStringLiteral("decode_ms_per_image")).toDouble();
    const double cider = score(mode, "CIDEr");
    QCPGraph* point = scatter_->addGraph();
    point->setLineStyle(QCPGraph::lsNone);
    point->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, colour, colour, 10));
    point->setData({ms}, {cider});
    auto* label = new QCPItemText(scatter_);
    label->position->setCoords(ms, cider);
    label->setPositionAlignment(Qt::AlignLeft | Qt::AlignBottom);
    label->setPadding(QMargins(6, 0, 0, 4));
    label->setText(name);
    label->setColor(theme.plotForeground());
    xMax = std::max(xMax, ms);
    yMin = std::min(yMin, cider);
    yMax = std::max(yMax, cider);

    const double steps = mode.value(QStringLiteral("steps_mean")).toDouble();
    auto* bar = new QCPBars(bars_->xAxis, bars_->yAxis);
    bar->setWidth(0.6);
    bar->setPen(QPen(colour));
    bar->setBrush(colour);
    bar->setData({double(i + 1)}, {steps});
    auto* value = new QCPItemText(bars_);
    value->position->setCoords(i + 1, steps);
    value->setPositionAlignment(Qt::AlignHCenter | Qt::AlignBottom);
    value->setText(QString::number(steps, 'f', 1));
    value->setColor(theme.plotForeground());
    ticker->addTick(i + 1, QString(name).replace(QLatin1Char('-'), QLatin1Char('\n')));  // "aic\ngreedy": fits under a bar
    stepsMax = std::max(stepsMax, steps);

    const QStringList cells = figureCells(mode);
    const int row = figures_->rowCount();
    figures_->insertRow(row);
    for (int c = 0; c < cells.size(); ++c) {
      auto* item = new QTableWidgetItem(cells[c]);
      if (c > 0) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
      figures_->setItem(row, c, item);
    }
  }
  if (!modes.isEmpty()) {
    const double pad = std::max(0.05, (yMax - yMin) * 0.25);
    scatter_->xAxis->setRange(0, xMax * 1.35);  // room for the labels right of the points
    scatter_->yAxis->setRange(std::max(0.0, yMin - pad), yMax + pad);
    bars_->xAxis->setTicker(ticker);
    bars_->xAxis->setRange(0.4, modes.size() + 0.6);
    bars_->yAxis->setRange(0, stepsMax * 1.2 + 0.5);
  }
  scatter_->replot();
  bars_->replot();
}

QJsonArray CompareCharts::points() const {
  QJsonArray out;
  for (const auto& m : result_.value(QStringLiteral("modes")).toArray()) {
    const QJsonObject mode = m.toObject();
    out.append(QJsonObject{{"mode", mode.value(QStringLiteral("name"))},
                           {"decode_ms_per_image", mode.value(QStringLiteral("decode_ms_per_image"))},
                           {"CIDEr", mode.value(QStringLiteral("scores")).toObject().value(QStringLiteral("CIDEr"))}});
  }
  return out;
}

QString CompareCharts::figuresCsv() const {
  QString out = kColumns.join(QLatin1Char(',')) + QLatin1Char('\n');
  for (const auto& m : result_.value(QStringLiteral("modes")).toArray())
    out += figureCells(m.toObject()).join(QLatin1Char(',')) + QLatin1Char('\n');
  return out;
}

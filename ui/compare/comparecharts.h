// The Compare page's dataset figures: CIDEr-D against decode ms per image (one
// labelled point per mode), mean decoding steps per mode as bars, and the
// table of figures (mode, K, beam, steps, ms/image, speed-up, CIDEr-D, BLEU-4),
// all from the `expnet compare --json` object of an evaluation.
#pragma once

#include <QJsonArray>
#include <QJsonObject>
#include <QWidget>

class QCustomPlot;
class QTableWidget;

class CompareCharts : public QWidget {
 public:
  explicit CompareCharts(QWidget* parent = nullptr);

  void setResult(const QJsonObject& result);
  void clear();
  // [{mode, decode_ms_per_image, CIDEr}] plotted (the screenshot's "points").
  QJsonArray points() const;
  // The table of figures as CSV (a header line, then one line per mode).
  QString figuresCsv() const;

 private:
  QCustomPlot* makePlot(const QString& title, const QString& xLabel, const QString& yLabel);

  QCustomPlot* scatter_;
  QCustomPlot* bars_;
  QTableWidget* figures_;
  QJsonObject result_;
};

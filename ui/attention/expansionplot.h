// A matrix of the expansion traces as a QCustomPlot colour map: row 0 at the
// top, one cell per entry, a colour scale on the right. Non-negative matrices
// (the normalised forward/backward weights) use a perceptually uniform
// viridis gradient from 0 to the maximum; signed ones (the scores z) a
// blue-white-red gradient symmetric around 0, so white always means 0.
#pragma once

#include <QString>
#include <QVector>

#include "attention/attentiontrace.h"
#include <qcustomplot.h>

class ExpansionPlot : public QCustomPlot {
  Q_OBJECT
 public:
  struct Tick {
    double position;
    QString label;
  };
  struct Axes {
    QString x, y;             // axis titles
    QVector<Tick> xTicks, yTicks;  // text ticks (words); empty = numbers
  };

  explicit ExpansionPlot(QWidget* parent = nullptr);

  void showMatrix(const TraceMatrix& matrix, const QString& title, const Axes& axes, bool signedValues);
  void clearMatrix(const QString& message);

  QCPColorMap* colorMap() const { return map_; }
  QString mapTitle() const { return title_; }
  int matrixRows() const { return rows_; }
  int matrixCols() const { return cols_; }

 signals:
  void cellClicked(int row, int col);

 protected:
  void mousePressEvent(QMouseEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;

 private:
  void setTicks(QCPAxis* axis, const QVector<Tick>& ticks, int count);
  void fitTitle();  // on two lines (at its last " · ") where one is wider than the plot

  QCPColorMap* map_;
  QCPColorScale* scale_;
  QCPTextElement* titleElement_;
  QString title_;
  int rows_ = 0, cols_ = 0;
};

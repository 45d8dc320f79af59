// The Datasets page's Statistics tab: images and captions per split, the
// caption length histogram, the most frequent training words, and the
// vocabulary size at a chosen min count, from AnalysisWorker's statistics.
#pragma once

#include <QJsonObject>

#include "expnet/data/dataset.h"
#include <QWidget>

class QCustomPlot;
class QLabel;
class QSpinBox;

class DatasetStats : public QWidget {
 public:
  DatasetStats();

  void setStats(const expnet::DatasetStats& stats);
  void showMessage(const QString& message);  // computing, or the error
  QJsonObject describe() const;

 private:
  QCustomPlot* makePlot(const QString& title);
  void showVocabulary();

  QJsonObject stats_;
  QLabel* summary_;
  QSpinBox* minCount_;
  QLabel* vocabulary_;
  QCustomPlot* splits_;
  QCustomPlot* lengths_;
  QCustomPlot* words_;
};

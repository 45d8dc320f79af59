// Two tabs of the Training page that show a run snapshot: the sample captions
// of the latest validation, and the runs of the followed store (a click asks
// the page to show that run).
#pragma once

#include <QJsonArray>
#include <QWidget>

#include "training/runsnapshot.h"

class QLabel;
class QTableView;
class RunListModel;
class SampleModel;

class SamplesPanel : public QWidget {
  Q_OBJECT
 public:
  explicit SamplesPanel(QWidget* parent = nullptr);
  void show(const RunSnapshot& snapshot);  // redraws only when the validation changed
  void clear();
  QJsonArray describe() const;

 private:
  SampleModel* samples_;
  QLabel* title_;
  QTableView* view_;
};

class StoreRunsPanel : public QWidget {
  Q_OBJECT
 public:
  explicit StoreRunsPanel(QWidget* parent = nullptr);
  void show(const RunSnapshot& snapshot);  // keeps the selection on the followed run
  QJsonArray describe() const;

 signals:
  void runClicked(const QString& name);

 private:
  RunListModel* runs_;
  QTableView* view_;
};

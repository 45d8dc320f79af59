// The Runs page's side-by-side views of the selected runs: the configuration
// keys on which they differ (expnet/train/config_diff.h) and the sample captions each logged
// at a validation (stage, epoch), one column per run.
#pragma once

#include <QJsonArray>
#include <QWidget>

#include "runs/runslisting.h"

class QComboBox;
class QLabel;
class QTableWidget;

struct RunColumn {
  QString key, label;
  const RunDetails* details = nullptr;
};

class ConfigDiffView : public QWidget {
  Q_OBJECT
 public:
  explicit ConfigDiffView(QWidget* parent = nullptr);
  // A column per run after the key; a row per key whose values differ.
  void setRuns(const QVector<RunColumn>& runs);
  // [{"key", "values": [...]}] as shown.
  QJsonArray describe() const;

 private:
  QLabel* summary_;
  QTableWidget* table_;
};

class SampleCaptionsView : public QWidget {
  Q_OBJECT
 public:
  explicit SampleCaptionsView(QWidget* parent = nullptr);
  // {"validation", "rows": [{"image", "reference", "captions": [...]}]} as shown.
  QJsonObject describe() const;
  // Keeps the validation shown when the new runs have it, else shows the newest.
  void setRuns(const QVector<RunColumn>& runs);
  // The validations offered, "stage S · epoch E", newest last.
  QStringList validations() const;
  void showValidation(int index);

 private:
  void fill();

  QComboBox* validation_;
  QLabel* summary_;
  QTableWidget* table_;
  QVector<RunColumn> runs_;
  QVector<QPair<qint64, qint64>> keys_;  // (stage, epoch) per combo entry
};

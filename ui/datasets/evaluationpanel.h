// The Datasets page's "Per-sample evaluation" box: the model (a built-in name,
// a preset with a checkpoint, or a checkpoint of ours) and its beam, the split
// and limit, Evaluate / Cancel with progress and ETA; then which stored
// evaluation the grid shows (its scores, sort by score), a second one to
// compare per image, and Export CSV of the sorted list.
#pragma once

#include <QElapsedTimer>
#include <QGroupBox>
#include <QJsonArray>

#include "datasets/analysisworker.h"

class HintLabel;
class QComboBox;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;

class EvaluationPanel : public QGroupBox {
  Q_OBJECT
 public:
  explicit EvaluationPanel(QWidget* parent = nullptr);

  // The job the fields describe (dataset and store filled by the page).
  EvaluationJob job() const;
  void setJob(const QString& model, const QString& split, int limit);
  // An authors'-format checkpoint: its config (a preset or JSON) and vocabulary.
  void setReferenceFiles(const QString& config, const QString& vocab);
  void setEvaluations(const QJsonArray& evaluations);  // newest first
  void selectEvaluation(qint64 id);
  qint64 evaluationId() const;
  qint64 comparedId() const;
  QJsonObject evaluation(qint64 id) const;

  void showRunning(int done, int total);
  void showEnded(const QString& message, bool error);
  bool running() const { return running_; }
  QJsonObject describe() const;

 signals:
  void evaluateRequested();
  void cancelRequested();
  void evaluationChosen(qint64 id);
  void comparedChosen(qint64 id);
  void exportRequested();

 private:
  QComboBox* model_;
  QComboBox* config_;  // an authors' checkpoint's preset or config JSON
  QLineEdit* vocab_;
  QSpinBox* beam_;
  QComboBox* split_;
  QSpinBox* limit_;
  QPushButton* evaluate_;
  QPushButton* cancel_;
  QProgressBar* progress_;
  HintLabel* state_;
  QComboBox* shown_;
  QComboBox* compared_;
  QPushButton* export_;
  QJsonArray evaluations_;
  QElapsedTimer clock_;
  bool running_ = false;
};

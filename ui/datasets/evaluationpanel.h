// The Datasets page's "Per-sample evaluation" box: the model (a built-in name,
// a preset with a checkpoint, or a checkpoint of ours) and its beam, the split
// and limit, Evaluate / Cancel with progress and ETA; then which stored
// evaluation the grid shows (its scores, sort by score), a second one to
// compare per image, and Export CSV of the sorted list. "Where" runs it here
// (the page's AnalysisWorker) or on a host (HostEvaluation), the host's copy of
// the dataset named, its result kept in this dataset's store.
#pragma once

#include <QElapsedTimer>
#include <QGroupBox>
#include <QJsonArray>

#include "datasets/analysisworker.h"

class BrowseButton;
class HintLabel;
class HostChoice;
class HostEvaluation;
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
  // Newest first; `listed`: the store's list as the worker read it (not a clearing).
  void setEvaluations(const std::vector<expnet::SampleEvaluation>& evaluations, bool listed = false);
  // Starts `job` on the chosen host and returns true; false for this computer.
  bool runOnHost(const EvaluationJob& job);
  void selectEvaluation(qint64 id);
  // The evaluation shown in the last session: chosen (evaluationChosen) when the store's
  // list comes; gone, "none" is chosen, so a sort by score falls back.
  void showOnceListed(qint64 id) { wanted_ = id; }
  qint64 evaluationId() const;
  qint64 comparedId() const;
  QJsonObject evaluation(qint64 id) const;

  void showRunning(int done, int total);
  void showEnded(const QString& message, bool error);
  bool running() const { return running_; }
  QJsonObject describe() const;

 signals:
  void evaluateRequested();
  void cancelRequested();  // of an evaluation here (one on a host the panel cancels)
  void hostEvaluated(qint64 id);  // now in this dataset's store
  void evaluationChosen(qint64 id);
  void comparedChosen(qint64 id);
  void exportRequested();

 private:
  void buildHost();
  void fitBeamToModel(const QString& model);
  HostChoice* where_;
  QWidget* there_;  // the host's dataset path and device, shown for a host
  QLineEdit* datasetThere_;
  QComboBox* deviceThere_;
  HostEvaluation* hostEvaluation_;
  BrowseButton* browse_;
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
  qint64 wanted_ = -1;  // showOnceListed's id until the next list (-1: none)
};

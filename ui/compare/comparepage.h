// The Compare page: AIC against PNAIC decoding on the user's images and on a
// dataset. Models sit in slots (ModelSlots), images in rows (CompareTable)
// with a step replay of the selected one (StepReplay), dataset figures in
// charts (CompareCharts). Every model load, caption and evaluation runs in a
// CompareWorker on its own thread, through expnet::compare_decoding, the
// function `expnet compare` calls.
#pragma once

#include <QElapsedTimer>
#include <QJsonObject>
#include <QMap>
#include <QStringList>
#include <QThread>

#include "compare/compareworker.h"
#include "shell/studiopage.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QLayout;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QStackedWidget;
class QTabWidget;
class CompareCharts;
class CompareTable;
class HintLabel;
class ImageIntake;
class ModelSlots;
class StepReplay;
class StudioContext;

class ComparePage : public StudioPage {
  Q_OBJECT
 public:
  explicit ComparePage(StudioContext* context, QWidget* parent = nullptr);
  QString pageId() const override { return QStringLiteral("compare"); }
  QString title() const override { return QStringLiteral("Compare"); }
  QJsonObject describe() const override;
  bool isBusy() const override;
  // Stops the evaluation and the image batches, then the worker's thread.
  ~ComparePage() override;
  void restoreSettings() override;
  void saveSettings() const override;

  ModelSlots* modelSlots() const { return slots_; }
  bool evaluating() const { return evaluationState_ == EvaluationState::Running; }
  // The last evaluation's JSON, as `expnet compare --json` prints it (empty before one).
  QByteArray evaluationJson() const { return evaluationJson_; }

 public slots:
  // Loads every slot not loaded yet (at the first show, or before work needs them).
  void loadModels();
  // Files and folders (walked recursively); captioned by every mode once the models are loaded.
  void addPaths(const QStringList& paths);
  void openImages();
  void pasteFromClipboard();
  void clearImages();
  // Runs the comparison on `dataset`'s `split` (at most `limit` images, 0 = all).
  void evaluateDataset(const QString& dataset, const QString& split, int limit);
  void cancelEvaluation();
  void exportFiguresCsv(const QString& file);
  void exportJson(const QString& file);

 signals:
  void rowsFinished();        // no image batch left
  void evaluationEnded();     // finished, failed or cancelled

 protected:
  void showEvent(QShowEvent* event) override;  // the models load when the page is first shown

 private:
  // The last evaluation: none yet, running, or how it ended (describe() names it).
  enum class EvaluationState { None, Running, Done, Failed, Cancelled };

  QWidget* buildControls();
  QWidget* buildModes();
  QWidget* buildEvaluation();
  QLayout* buildDatasetField();
  QWidget* buildImages();
  QWidget* buildDataset();
  bool modelsReady() const;
  void submitWaiting();
  void recaptionAll();
  void startEvaluation();
  void updateState();
  void wireModels();
  void wireImages();
  void wireEvaluation();

  StudioContext* context_;
  QThread thread_;
  CompareWorker* worker_;
  ImageIntake* intake_;  // Open, Paste and drops
  QStringList waiting_;               // images added, not yet sent (models loading)
  QMap<int, QStringList> batches_;    // sent to the worker, not finished
  int nextBatch_ = 0;
  bool modelsRequested_ = false;
  bool evaluationWanted_ = false;     // asked for while the models load
  EvaluationState evaluationState_ = EvaluationState::None;
  QString evaluationMessage_;
  int evaluationDone_ = 0, evaluationTotal_ = 0;
  QElapsedTimer evaluationClock_;
  QByteArray evaluationJson_;

  ModelSlots* slots_;
  QSpinBox* beam_;
  QCheckBox* showDeleted_;
  QLineEdit* dataset_;
  QComboBox* split_;
  QSpinBox* limit_;
  QPushButton* evaluate_;
  QPushButton* cancel_;
  QProgressBar* progress_;
  HintLabel* evaluationLabel_;
  QPushButton* exportCsv_;
  QPushButton* exportJson_;
  QTabWidget* tabs_;
  QStackedWidget* imagesCentre_;
  HintLabel* imagesHint_;
  QLabel* imagesStatus_;
  CompareTable* table_;
  StepReplay* replay_;
  CompareCharts* charts_;
  HintLabel* datasetHint_;
  QStackedWidget* datasetCentre_;
};

// The Caption page: drop images or folders (or open, or paste), pick a model,
// set the decoding options, watch captions stream in, export them. LibTorch
// runs in a CaptionWorker on its own thread; this widget wires the Model and
// Decoding boxes, the action bar and the table of CaptionModel rows.
#pragma once

#include <QJsonObject>
#include <QStringList>
#include <QThread>

#include "caption/captionmodel.h"
#include "caption/captionworker.h"
#include "caption/recentmodels.h"
#include "common/recentpaths.h"
#include "shell/studiopage.h"

class ActionButton;
class AltTextBar;
class QLabel;
class QProgressBar;
class QStackedWidget;
class QTableView;
class QTextBrowser;
class QToolButton;
class CaptionModel;
class DecodingForm;
class DemoNotice;
class HintLabel;
class ImageIntake;
class ModelForm;
class StudioContext;

class CaptionPage : public StudioPage {
  Q_OBJECT
 public:
  explicit CaptionPage(StudioContext* context, QWidget* parent = nullptr);
  ~CaptionPage() override;

  CaptionModel* model() const { return items_; }
  AltTextBar* altTextBar() const { return altTextBar_; }
  bool modelLoaded() const { return !modelName_.isEmpty(); }
  // Files and folders added lately, newest first (also the File > Recent menu).
  const RecentPaths& recent() const { return recent_; }
  // Models loaded lately, newest first (the Model box's Recent menu; saved at each load).
  const RecentModels& recentModels() const { return recentModels_; }

  QString pageId() const override { return QStringLiteral("caption"); }
  QString title() const override { return QStringLiteral("Caption"); }
  QJsonObject describe() const override;
  bool isBusy() const override;

 public slots:
  // Loads in the worker; the page shows a busy bar and stays responsive.
  void loadModel(const ModelRequest& request);
  // At start: the model loaded last (restoreSettings() reads the list), or the demo
  // model when there is none or its files are gone (the Model box says which).
  void loadLastModel();
  // Files and folders (walked recursively). Captioned as soon as a model is loaded.
  void addPaths(const QStringList& paths);
  void cancel();
  void openImages();
  void pasteFromClipboard();
  void copyCaption();
  void exportCaptions();
  void clearItems();  // or, on an empty list just cleared, brings the cleared rows back
  void restoreSettings() override;
  void saveSettings() const override;

 signals:
  void modelReady();
  void captioningFinished();  // nothing left queued or running

 private:
  void onModelLoaded(const LoadedModel& model);
  void onModelFailed(const QString& error);
  void submitQueued();
  void jobEnded();
  QWidget* buildActions();
  QWidget* buildCentre();
  void updateState();
  void showDetails();

  StudioContext* context_;
  CaptionModel* items_;
  QThread thread_;
  CaptionWorker* worker_;
  ImageIntake* intake_;  // Open, Paste and drops
  bool loading_ = false;
  int inFlight_ = 0;  // jobs sent to the worker and not yet reported back
  QString modelName_;
  LoadedModel modelDetails_;
  QString modelError_;
  QString loadNote_;        // said with the loaded model: why the last one was not reloaded
  ModelRequest requested_;  // the model being loaded
  ModelRequest loaded_;     // the model loaded (a precision change loads it again)
  RecentModels recentModels_;
  bool settingsRestored_ = false;  // the user's settings are in use (not a screenshot or a test)
  RecentPaths recent_;  // saved with the settings

  ModelForm* modelForm_;
  DecodingForm* decodingForm_;
  DemoNotice* demoNotice_;
  QWidget* cancelButton_;
  QWidget* copyButton_;
  QToolButton* exportButton_;
  ActionButton* clearButton_;
  QVector<CaptionItem> cleared_;  // what the last Clear removed, until rows are added again
  QLabel* progress_;
  QProgressBar* batchBar_;  // the images added together (a folder), while any is waiting
  AltTextBar* altTextBar_;  // Save as alt text: its button, progress and summary
  int batchStart_ = 0;      // the first row of that batch
  QStackedWidget* centre_;
  HintLabel* hint_;
  QTableView* table_;
  QTextBrowser* details_;
};

// The Caption page: drop images or folders (or open, or paste), pick a model,
// set the decoding options, watch captions stream in, export them. LibTorch
// runs in a CaptionWorker on its own thread; this widget only shows results.
#pragma once

#include <QJsonObject>
#include <QStringList>
#include <QTemporaryDir>
#include <QThread>

#include "shell/studiopage.h"
#include "caption/captionworker.h"

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QStackedWidget;
class QTableView;
class QTextBrowser;
class QToolButton;
class CaptionModel;
class StudioContext;

class CaptionPage : public StudioPage {
  Q_OBJECT
  Q_PROPERTY(bool acceptsImages READ acceptsImages CONSTANT)
 public:
  explicit CaptionPage(StudioContext* context, QWidget* parent = nullptr);
  ~CaptionPage() override;

  QString pageId() const override { return QStringLiteral("caption"); }
  QString title() const override { return QStringLiteral("Caption"); }
  QJsonObject describe() const override;
  bool isBusy() const override;
  bool acceptsImages() const { return true; }

  CaptionModel* model() const { return items_; }
  bool modelLoaded() const { return !modelName_.isEmpty(); }

 public slots:
  // Loads in the worker; the page shows a busy bar and stays responsive.
  void loadModel(const ModelRequest& request);
  // Files and folders (walked recursively). Captioned as soon as a model is loaded.
  void addPaths(const QStringList& paths);
  void cancel();
  void openImages();
  void pasteFromClipboard();
  void copyCaption();
  void exportCaptions();
  void clearItems();
  void restoreSettings() override;
  void saveSettings() const override;

 signals:
  void modelReady();
  void captioningFinished();  // nothing left queued or running

 protected:
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;

 private:
  QWidget* buildModelForm();
  QWidget* buildDecodingForm();
  QWidget* buildActions();
  expnet::DecodingOptions decodingOptions() const;
  QJsonObject decodingSettings() const;
  void submitQueued();
  void jobEnded();
  void onModelLoaded(const QString& name, const QJsonObject& details);
  void onModelFailed(const QString& error);
  void updateState();
  void showDetails();

  StudioContext* context_;
  CaptionModel* items_;
  QThread thread_;
  CaptionWorker* worker_;
  QTemporaryDir pasteDir_;
  int pasteCount_ = 0;
  bool loading_ = false;
  int inFlight_ = 0;  // jobs sent to the worker and not yet reported back
  QString modelName_;
  QJsonObject modelDetails_;
  QString modelError_;

  QComboBox* modelConfig_;
  QComboBox* device_;
  QSpinBox* threads_;
  QLineEdit* checkpoint_;
  QLineEdit* vocab_;
  QPushButton* loadButton_;
  QProgressBar* busy_;
  QLabel* modelStatus_;
  QComboBox* search_;
  QSpinBox* beam_;
  QSpinBox* nbest_;
  QSpinBox* maxLength_;
  QDoubleSpinBox* lengthPenalty_;
  QSpinBox* noRepeat_;
  QPushButton* openButton_;
  QPushButton* pasteButton_;
  QPushButton* cancelButton_;
  QPushButton* copyButton_;
  QToolButton* exportButton_;
  QToolButton* recentButton_;
  QStringList recent_;  // files and folders added lately, newest first; saved with the settings
  void rememberRecent(const QStringList& paths);
  QPushButton* clearButton_;
  QLabel* progress_;
  QStackedWidget* centre_;
  QLabel* hint_;
  QTableView* table_;
  QTextBrowser* details_;
};

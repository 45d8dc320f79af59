// The Attention page: what the model looked at while writing a caption. Pick
// an image (from the Caption page's list, or Open) and a word of its caption:
// the word's cross-attention over the image as a heat map (one decoder layer
// and head, or their means; adjustable opacity), the caption with the word
// highlighted (click a word, or step with Left/Right). Beside it the
// expansion matrices as colour maps: Static Expansion per encoder layer
// (group, forward/backward/scores, stream a/b; a slot's distribution over the
// image) and Dynamic Expansion per decoder layer over the caption's tokens.
// Captioning and tracing run in an AttentionWorker thread with the model the
// Caption page loaded (StudioContext::captioner()).
#pragma once

#include <QImage>
#include <QJsonObject>
#include <QThread>
#include <QTimer>

#include <memory>
#include <vector>

#include "shell/studiopage.h"
#include "attention/attentiontrace.h"
#include "common/carriedfields.h"

class QComboBox;
class QLabel;
class QLayout;
class QListView;
class QProgressBar;
class QSlider;
class QSpinBox;
class QSplitter;
class QStackedWidget;
class ActionButton;
class AttentionWorker;
class CaptionModel;
class ExpansionPlot;
class ExpansionTabs;
class HintLabel;
class ImageView;
class StudioContext;
class WordModel;

class AttentionPage : public StudioPage {
  Q_OBJECT
 public:
  // The views "Save PNG" can write.
  enum class View { HeatMap, StaticExpansion, DynamicExpansion, Page };

  explicit AttentionPage(StudioContext* context, QWidget* parent = nullptr);
  ~AttentionPage() override;
  // The Caption page's images, offered in the image picker.
  void setImageList(CaptionModel* images);

  QString title() const override { return QStringLiteral("Attention"); }
  QString pageId() const override { return QStringLiteral("attention"); }
  QJsonObject describe() const override;
  bool isBusy() const override;
  void restoreSettings() override;
  void saveSettings() const override;

  std::shared_ptr<const AttentionTrace> trace() const { return trace_; }
  int selectedWord() const { return word_; }
  int layerChoice() const;  // -1 = mean over decoder layers
  int headChoice() const;   // -1 = mean over heads
  // The weights the heat map shows (grid cells, row-major) and the overlay image.
  const std::vector<float>& heatWeights() const { return heatWeights_; }
  QImage heatImage() const { return heatImage_; }
  ExpansionPlot* staticPlot() const;
  ExpansionPlot* dynamicPlot() const;
  const std::vector<float>& slotWeights() const;

  // Writes the view as PNG (atomically); false with a reason in `error`.
  bool saveView(View view, const QString& file, QString* error = nullptr) const;

 public slots:
  // Captions and traces the image with the shared model (now, or once one is loaded).
  void openImage(const QString& path);
  void openImageDialog();
  // Beam width of the search that writes the traced caption (1 = greedy).
  void setBeam(int beam);
  void saveDialog();
  void selectWord(int k);
  void setLayerChoice(int layer);  // -1 = mean
  void setHeadChoice(int head);    // -1 = mean
  void setStaticSelection(int layer, int group, int direction, int stream);
  void setDynamicSelection(int layer, int direction, int stream);
  void setSlot(int slot);

 signals:
  void traceReady();
  void traceFailed(const QString& error);

 protected:
  void keyPressEvent(QKeyEvent* event) override;
  void showEvent(QShowEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;

 private:
  QWidget* buildTopBar();
  QWidget* buildHeatPanel();
  QWidget* buildHeatControls();
  void buildCaptionView();  // caption_
  void requestTrace();
  void onTraced(int request, std::shared_ptr<const AttentionTrace> trace);
  void onFailed(int request, const QString& error);
  void fillSelectors();
  void updateHeatMap();
  void updateStatus();
  void applyCheckpointOptions();
  void fitCaptionHeight();
  QImage viewImage(View view) const;

  StudioContext* context_;
  QThread thread_;
  AttentionWorker* worker_;
  WordModel* words_;
  CaptionModel* images_ = nullptr;
  std::shared_ptr<const AttentionTrace> trace_;
  const void* requestedWith_ = nullptr;  // the model of the latest request
  const void* tracedWith_ = nullptr;     // the model trace_ came from
  QString path_;        // the image asked for (traced, tracing or waiting for a model)
  int request_ = 0;     // id of the latest trace request
  bool tracing_ = false;
  bool waiting_ = false;  // path_ not sent yet: no model, or the page was hidden
  int layerPick_ = -1, headPick_ = -1;  // -1 = mean
  QString error_;
  int word_ = -1;
  std::vector<float> heatWeights_;
  QImage heatImage_;
  QTimer retraceTimer_;

  QComboBox* imageCombo_;
  ActionButton* openButton_;
  QSpinBox* beam_;
  HintLabel* decodingNote_;  // the decoding options the model's checkpoint carries
  CarriedFields carried_;    // beam_ under "beam_size"
  ActionButton* saveButton_;
  QProgressBar* busy_;
  QLabel* status_;
  QStackedWidget* centre_;
  HintLabel* hint_;
  QSplitter* splitter_;
  QComboBox* layer_;
  QComboBox* head_;
  QSlider* opacity_;
  QLabel* opacityValue_;
  ImageView* heatView_;
  QLabel* heatLegend_;
  QLabel* heatMaximum_;
  QListView* caption_;
  QLabel* wordInfo_;
  ExpansionTabs* tabs_;
};

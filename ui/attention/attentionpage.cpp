// LibTorch before Qt: Qt's `slots` macro breaks LibTorch headers included after it.
#include <ATen/core/Tensor.h>

#include "attention/attentionpage.h"

#include <QApplication>
#include <QBuffer>
#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QJsonArray>
#include <QJsonDocument>
#include <QKeyEvent>
#include <QLabel>
#include <QListView>
#include <QMessageBox>
#include <QProgressBar>
#include <QRegularExpression>
#include <QSettings>
#include <QSlider>
#include <QSpinBox>
#include <QSplitter>
#include <QStackedWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include "attention/attentionworker.h"
#include "attention/expansionplot.h"
#include "attention/expansiontabs.h"
#include "attention/imageview.h"
#include "attention/tracemaps.h"
#include "attention/wordmodel.h"
#include "caption/captionmodel.h"
#include "common/actionbutton.h"
#include "common/formfields.h"
#include "common/hintlabel.h"
#include "common/theme.h"
#include "common/wrappingrow.h"
#include "expnet/decode/captioner.h"
#include "expnet/system/atomic_file.h"
#include "shell/studiocontext.h"

namespace {
// How to begin: the first step is loading a model only while none is.
QString beginHint(const QString& model) {
  return QStringLiteral("<h3>What did the model look at?</h3><p>%1 pick one of the Caption page's images above or press "
                        "<b>Open…</b> (Ctrl+O). The image is captioned (beam search) and the caption traced: for each "
                        "word, the decoder's cross-attention over the image; for each layer, the Static and Dynamic "
                        "Expansion matrices.</p><p>From the command line: <code>expnet-studio --page attention "
                        "--checkpoint FILE.pth --vocab VOCAB --model PRESET --open IMAGE</code>.</p>")
      .arg(model.isEmpty() ? QStringLiteral("Load a model on the <b>Caption</b> page, then")
                           : QStringLiteral("<b>%1</b> is loaded:").arg(model.toHtmlEscaped()));
}
}  // namespace

AttentionPage::AttentionPage(StudioContext* context, QWidget* parent)
    : StudioPage(parent), context_(context), worker_(new AttentionWorker), words_(new WordModel(this)) {
  qRegisterMetaType<std::shared_ptr<const AttentionTrace>>();
  worker_->moveToThread(&thread_);
  connect(&thread_, &QThread::finished, worker_, &QObject::deleteLater);
  connect(worker_, &AttentionWorker::traced, this, &AttentionPage::onTraced);
  connect(worker_, &AttentionWorker::failed, this, &AttentionPage::onFailed);
  thread_.start();

  retraceTimer_.setSingleShot(true);
  retraceTimer_.setInterval(300);  // a spin box run of clicks traces once
  connect(&retraceTimer_, &QTimer::timeout, this, &AttentionPage::requestTrace);

  hint_ = new HintLabel(beginHint(QString()), HintLabel::Kind::Panel);
  hint_->setObjectName(QStringLiteral("beginHint"));
  tabs_ = new ExpansionTabs;
  splitter_ = new QSplitter;
  splitter_->addWidget(buildHeatPanel());
  splitter_->addWidget(tabs_);
  splitter_->setStretchFactor(0, 1);
  splitter_->setStretchFactor(1, 1);
  splitter_->setChildrenCollapsible(false);
  centre_ = new QStackedWidget;
  centre_->addWidget(hint_);
  centre_->addWidget(splitter_);

  setFocusPolicy(Qt::StrongFocus);  // arrow keys that no control takes reach keyPressEvent
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(12, 12, 12, 8);
  layout->addWidget(buildTopBar());
  layout->addWidget(centre_, 1);

  connect(context_, &StudioContext::modelChanged, this, [this] {
    applyCheckpointOptions();
    if (!path_.isEmpty()) requestTrace();  // a new model: the old trace no longer applies
    updateStatus();
  });
  connect(context_, &StudioContext::imageSelected, this, &AttentionPage::openImage);
  updateStatus();
}

AttentionPage::~AttentionPage() {
  worker_->supersede(-1);  // stop a running search at its next step
  thread_.quit();
  thread_.wait();
}

QWidget* AttentionPage::buildTopBar() {
  imageCombo_ = new QComboBox;
  imageCombo_->setObjectName(QStringLiteral("image"));
  imageCombo_->setMinimumWidth(220);
  imageCombo_->setIconSize(QSize(24, 24));
  imageCombo_->setPlaceholderText(QStringLiteral("(no image)"));
  imageCombo_->setToolTip(QStringLiteral("The Caption page's images: pick one to see what the model looked at"));
  connect(imageCombo_, &QComboBox::activated, this, [this](int row) {
    if (images_ && row >= 0 && row < images_->rowCount()) openImage(images_->item(row).path);
  });
  openButton_ = new ActionButton(QStringLiteral("Open…"), QKeySequence::Open,
                                 QStringLiteral("Open an image file to caption and trace"), this);
  connect(openButton_, &QPushButton::clicked, this, &AttentionPage::openImageDialog);
  beam_ = integerField(QStringLiteral("beam"), 1, 20, 5, {},
                       QStringLiteral("Beam width of the search that writes the traced caption (1 = greedy); "
                                      "5 is the Caption page's and `expnet explain`'s default"));
  connect(beam_, &QSpinBox::valueChanged, this, [this] {
    decodingNote_->setText(carried_.note());
    if (!path_.isEmpty()) retraceTimer_.start();
  });
  carried_.add(QStringLiteral("beam_size"), [this] { return QJsonValue(beam_->value()); },
               [this](const QJsonValue& v) { beam_->setValue(v.toInt()); });
  decodingNote_ = new HintLabel;
  decodingNote_->setObjectName(QStringLiteral("decodingNote"));
  decodingNote_->setWordWrap(true);  // in lines on a narrow page, not wider than it
  decodingNote_->setToolTip(QStringLiteral("The model's checkpoint carries these decoding options: the traced "
                                           "caption is decoded with them (the Beam field overrides the beam)"));
  saveButton_ = new ActionButton(QStringLiteral("Save PNG…"), QKeySequence::Save,
                                 QStringLiteral("Save the heat map, an expansion map or the whole page as PNG"), this);
  connect(saveButton_, &QPushButton::clicked, this, &AttentionPage::saveDialog);
  busy_ = new QProgressBar;
  busy_->setRange(0, 0);
  busy_->setMaximumWidth(100);
  busy_->setTextVisible(false);
  status_ = new QLabel;
  status_->setObjectName(QStringLiteral("status"));
  status_->setTextFormat(Qt::RichText);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  // A long file name or error must not widen the window: the label takes the room left.
  status_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);

  status_->setMinimumWidth(220);  // where less is left, it goes under the image choice (WrappingRow)
  auto* bar = new WrappingRow;
  bar->setContentsMargins(0, 0, 0, 6);
  bar->addWidget(widgetRow({new HintLabel(QStringLiteral("Image:")), imageCombo_, openButton_,
                            new HintLabel(QStringLiteral("  Beam:")), beam_, decodingNote_, saveButton_}, 5));
  bar->addWidget(widgetRow({busy_, status_}, 1), 1);
  return bar;
}

QWidget* AttentionPage::buildHeatPanel() {
  auto* box = new QGroupBox(QStringLiteral("Cross-attention of the selected word"));
  auto* controls = buildHeatControls();
  heatView_ = new ImageView;
  heatView_->setObjectName(QStringLiteral("heatMap"));
  heatView_->setFocusPolicy(Qt::ClickFocus);  // a click on the map, then Left/Right steps the words
  heatView_->setToolTip(QStringLiteral("Cross-attention of the selected word over the image grid: each cell's "
                                       "weight divided by the largest (red = most attended, blue = none)"));

  heatLegend_ = new QLabel;
  heatLegend_->setPixmap(jetLegend(160, 10));
  heatLegend_->setToolTip(QStringLiteral("Heat map colours: weight / largest weight of the map"));
  heatMaximum_ = new QLabel;
  auto* legend = new QHBoxLayout;
  legend->addWidget(new HintLabel(QStringLiteral("Weight:  0")));
  legend->addWidget(heatLegend_);
  legend->addWidget(heatMaximum_);
  legend->addStretch(1);

  buildCaptionView();
  wordInfo_ = new QLabel;
  wordInfo_->setObjectName(QStringLiteral("wordInfo"));
  wordInfo_->setWordWrap(true);
  wordInfo_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  wordInfo_->setTextInteractionFlags(Qt::TextSelectableByMouse);

  auto* layout = new QVBoxLayout(box);
  layout->addWidget(controls);
  layout->addWidget(heatView_, 1);
  layout->addLayout(legend);
  layout->addWidget(caption_);
  layout->addWidget(wordInfo_);
  return box;
}

// Which cross-attention the map shows (a layer and head, or their means) and its opacity.
QWidget* AttentionPage::buildHeatControls() {
  layer_ = choiceField(QStringLiteral("layer"), {QStringLiteral("Mean of layers")},
                       QStringLiteral("Decoder layer whose cross-attention is shown, or the mean over all layers"));
  head_ = choiceField(QStringLiteral("head"), {QStringLiteral("Mean of heads")},
                      QStringLiteral("Attention head shown, or the mean over all heads"));
  connect(layer_, &QComboBox::currentIndexChanged, this, [this](int index) { setLayerChoice(index - 1); });
  connect(head_, &QComboBox::currentIndexChanged, this, [this](int index) { setHeadChoice(index - 1); });
  opacity_ = new QSlider(Qt::Horizontal);
  opacity_->setObjectName(QStringLiteral("opacity"));
  opacity_->setRange(0, 100);
  opacity_->setValue(50);
  opacity_->setMinimumWidth(60);
  opacity_->setToolTip(QStringLiteral("Opacity of the heat map over the image"));
  opacityValue_ = new QLabel(QStringLiteral("50%"));
  opacityValue_->setMinimumWidth(34);
  connect(opacity_, &QSlider::valueChanged, this, [this](int value) {
    opacityValue_->setText(QStringLiteral("%1%").arg(value));
    updateHeatMap();
  });
  auto* controls = new WrappingRow;  // the opacity under the layer and head where the panel is narrow
  controls->addWidget(widgetRow({new HintLabel(QStringLiteral("Layer:")), layer_, new HintLabel(QStringLiteral("Head:")), head_}));
  controls->addWidget(widgetRow({new HintLabel(QStringLiteral("Opacity:")), opacity_, opacityValue_}, 1), 1);
  return controls;
}

// The caption as a row of words, one selected: a click picks the word the map shows.
void AttentionPage::buildCaptionView() {
  caption_ = new QListView;
  caption_->setObjectName(QStringLiteral("caption"));
  caption_->setModel(words_);
  caption_->setFlow(QListView::LeftToRight);
  caption_->setWrapping(true);
  caption_->setResizeMode(QListView::Adjust);
  caption_->setSpacing(3);
  caption_->setUniformItemSizes(false);
  caption_->setSelectionMode(QAbstractItemView::SingleSelection);
  caption_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  caption_->setFixedHeight(72);  // fitCaptionHeight() adapts it to the caption
  caption_->setToolTip(QStringLiteral("The caption: click a word, or step with Left/Right"));
  const Theme theme = Theme::current();
  caption_->setStyleSheet(
      QStringLiteral("QListView#caption { font-size: 13pt; background: %1; border: 1px solid %2; border-radius: 4px; }"
                     "QListView#caption::item { padding: 2px 4px; border-radius: 3px; color: %3; }"
                     "QListView#caption::item:selected { background: %4; color: %5; }")
          .arg(Theme::css(theme.panelBackground()), Theme::css(theme.panelBorder()), Theme::css(theme.text()),
               Theme::css(theme.accent()), Theme::css(theme.accentText())));
  connect(caption_->selectionModel(), &QItemSelectionModel::currentChanged, this,
          [this](const QModelIndex& current) { if (current.isValid()) selectWord(current.row()); });
}

void AttentionPage::setImageList(CaptionModel* images) {
  images_ = images;
  imageCombo_->setModel(images);
  imageCombo_->setModelColumn(CaptionModel::ImageColumn);
  imageCombo_->setCurrentIndex(-1);
}

// ---------------------------------------------------------------- tracing

void AttentionPage::openImage(const QString& path) {
  if (path.isEmpty()) return;
  path_ = path;
  error_.clear();
  int row = -1;
  for (int r = 0; images_ && r < images_->rowCount(); ++r)
    if (images_->item(r).path == path) row = r;
  imageCombo_->setCurrentIndex(row);
  imageCombo_->setPlaceholderText(QFileInfo(path).fileName());
  requestTrace();
}

void AttentionPage::requestTrace() {
  retraceTimer_.stop();
  if (path_.isEmpty()) return;
  const auto captioner = context_->captioner();
  // Wait for a model, and trace only what a user can see: following the
  // Caption page's selection costs nothing while this page is hidden.
  waiting_ = !captioner || !isVisible();
  if (!waiting_) {
    tracing_ = true;
    requestedWith_ = captioner.get();
    const int request = ++request_;
    worker_->supersede(request);
    QMetaObject::invokeMethod(
        worker_,
        [worker = worker_, captioner, path = path_, beam = beam_->value(), request] {
          worker->trace(captioner, path, beam, request);
        },
        Qt::QueuedConnection);
  }
  updateStatus();
}

void AttentionPage::showEvent(QShowEvent* event) {
  StudioPage::showEvent(event);
  if (waiting_) requestTrace();
}

void AttentionPage::resizeEvent(QResizeEvent* event) {
  StudioPage::resizeEvent(event);
  QTimer::singleShot(0, this, &AttentionPage::fitCaptionHeight);  // once the view has its new width
}

// As tall as the wrapped caption, at most four lines; longer captions scroll.
void AttentionPage::fitCaptionHeight() {
  const int count = words_->rowCount();
  if (count == 0) return;
  caption_->doItemsLayout();
  const QRect first = caption_->visualRect(words_->index(0)), last = caption_->visualRect(words_->index(count - 1));
  const int line = first.height() + 2 * caption_->spacing();
  const int lines = std::clamp((last.bottom() - first.top()) / std::max(1, line) + 1, 1, 4);
  caption_->setFixedHeight(lines * line + 2 * caption_->frameWidth() + 2 * caption_->spacing());
}

void AttentionPage::onTraced(int request, std::shared_ptr<const AttentionTrace> trace) {
  if (request != request_) return;  // an answer to a request since replaced
  tracing_ = false;
  error_.clear();
  trace_ = std::move(trace);
  tracedWith_ = requestedWith_;
  const int keep = word_;
  words_->setTrace(trace_);
  fillSelectors();
  tabs_->setTrace(trace_);
  word_ = -1;
  selectWord(std::clamp(keep, 0, std::max(0, trace_->wordCount() - 1)));
  updateStatus();
  fitCaptionHeight();
  // Ready for Left/Right at once, unless the user is working in another control of the page.
  if (isVisible() && !isAncestorOf(QApplication::focusWidget())) caption_->setFocus();
  emit traceReady();
}

void AttentionPage::onFailed(int request, const QString& error) {
  if (request != request_) return;
  tracing_ = false;
  error_ = error;
  if (requestedWith_ != tracedWith_) trace_.reset();  // another model's maps leave; a bad file keeps the last trace
  if (!trace_) words_->setTrace(nullptr);
  updateStatus();
  emit traceFailed(error);
}

bool AttentionPage::isBusy() const { return tracing_ || (waiting_ && context_->modelLoading()); }

void AttentionPage::fillSelectors() {
  QStringList layers{QStringLiteral("Mean of layers")}, heads{QStringLiteral("Mean of heads")};
  for (int l = 0; l < trace_->layers; ++l) layers << QStringLiteral("Layer %1").arg(l + 1);
  for (int h = 0; h < trace_->heads; ++h) heads << QStringLiteral("Head %1").arg(h + 1);
  layerPick_ = std::clamp(layerPick_, -1, trace_->layers - 1);
  headPick_ = std::clamp(headPick_, -1, trace_->heads - 1);
  const QSignalBlocker a(layer_), b(head_);
  layer_->clear();
  layer_->addItems(layers);
  layer_->setCurrentIndex(layerPick_ + 1);
  head_->clear();
  head_->addItems(heads);
  head_->setCurrentIndex(headPick_ + 1);
}

// ---------------------------------------------------------------- selection

void AttentionPage::selectWord(int k) {
  if (!trace_ || trace_->wordCount() == 0) return;
  k = std::clamp(k, 0, trace_->wordCount() - 1);
  const bool changed = k != word_;
  word_ = k;
  const QModelIndex index = words_->index(k);
  if (caption_->currentIndex() != index) caption_->setCurrentIndex(index);
  if (changed) updateHeatMap();
}

int AttentionPage::layerChoice() const { return layerPick_; }
int AttentionPage::headChoice() const { return headPick_; }

void AttentionPage::setLayerChoice(int layer) {
  layerPick_ = trace_ ? std::clamp(layer, -1, trace_->layers - 1) : layer;
  if (layer_->currentIndex() != layerPick_ + 1 && layerPick_ + 1 < layer_->count()) layer_->setCurrentIndex(layerPick_ + 1);
  updateHeatMap();
}

void AttentionPage::setHeadChoice(int head) {
  headPick_ = trace_ ? std::clamp(head, -1, trace_->heads - 1) : head;
  if (head_->currentIndex() != headPick_ + 1 && headPick_ + 1 < head_->count()) head_->setCurrentIndex(headPick_ + 1);
  updateHeatMap();
}

void AttentionPage::setStaticSelection(int layer, int group, int direction, int stream) {
  tabs_->setStaticSelection(layer, group, direction, stream);
}

void AttentionPage::setDynamicSelection(int layer, int direction, int stream) {
  tabs_->setDynamicSelection(layer, direction, stream);
}

void AttentionPage::setBeam(int beam) { beam_->setValue(beam); }

void AttentionPage::setSlot(int slot) { tabs_->setSlot(slot); }

void AttentionPage::keyPressEvent(QKeyEvent* event) {
  // Keys that no focused control took: step through the caption's words.
  switch (event->key()) {
    case Qt::Key_Left: selectWord(word_ - 1); return;
    case Qt::Key_Right: selectWord(word_ + 1); return;
    case Qt::Key_Home: selectWord(0); return;
    case Qt::Key_End: selectWord(trace_ ? trace_->wordCount() - 1 : 0); return;
    default: StudioPage::keyPressEvent(event);
  }
}

// ---------------------------------------------------------------- views

void AttentionPage::updateHeatMap() {
  if (!trace_ || word_ < 0) return;
  heatWeights_ = trace_->wordWeights(word_, layerPick_, headPick_);
  heatImage_ = attentionOverlay(*trace_, heatWeights_, opacity_->value() / 100.0);
  heatView_->setImage(heatImage_);
  const auto hottest = std::max_element(heatWeights_.begin(), heatWeights_.end());
  const int cell = int(hottest - heatWeights_.begin());
  heatMaximum_->setText(QStringLiteral("%1 (the map's largest)").arg(double(*hottest), 0, 'f', 3));
  const double logp = trace_->logprobs.value(word_);
  wordInfo_->setText(QStringLiteral("Word %1 of %2: <b>%3</b> &nbsp; p = %4 &nbsp; | &nbsp; %5, %6 &nbsp; | &nbsp; "
                                    "most attended cell: row %7, col %8 (weight %9)")
                         .arg(word_ + 1)
                         .arg(trace_->wordCount())
                         .arg(trace_->word(word_).toHtmlEscaped())
                         .arg(std::exp(logp), 0, 'f', 3)
                         .arg(layer_->currentText(), head_->currentText().toLower())
                         .arg(cell / trace_->gridSide + 1)
                         .arg(cell % trace_->gridSide + 1)
                         .arg(double(*hottest), 0, 'f', 3));
}

void AttentionPage::updateStatus() {
  const bool haveModel = bool(context_->captioner());
  busy_->setVisible(tracing_ || (waiting_ && context_->modelLoading()));
  saveButton_->setEnabled(bool(trace_));
  centre_->setCurrentIndex(trace_ ? 1 : 0);  // the error in full in the main area, else how to begin
  hint_->setText(error_.isEmpty() ? beginHint(haveModel ? context_->modelName() : QString())
                                  : QStringLiteral("<h3>Could not trace it</h3><p>%1</p>").arg(error_.toHtmlEscaped()));
  QString text;
  if (!error_.isEmpty())
    text = QStringLiteral("<span style='color:%1'>%2</span>")
               .arg(Theme::css(Theme::current().errorText()), error_.toHtmlEscaped());
  else if (tracing_)
    text = QStringLiteral("Captioning and tracing %1…").arg(QFileInfo(path_).fileName().toHtmlEscaped());
  else if (waiting_ && context_->modelLoading())
    text = QStringLiteral("Waiting for the model to load…");
  else if (!haveModel)
    text = QStringLiteral("No model loaded: load one on the Caption page");
  else if (trace_)
    // The caption itself is in the word view below; here only what fits one line.
    text = QStringLiteral("<b>%1</b> (%2×%3) · %4 words · captioned and traced in %5 ms")
               .arg(QFileInfo(trace_->path).fileName().toHtmlEscaped())
               .arg(trace_->imageWidth)
               .arg(trace_->imageHeight)
               .arg(trace_->wordCount())
               .arg(trace_->traceMs, 0, 'f', 0);
  else
    text = QStringLiteral("Pick an image");
  status_->setText(text);
  status_->setToolTip(trace_ && error_.isEmpty() ? trace_->caption : error_);
}

// ---------------------------------------------------------------- saving

QImage AttentionPage::viewImage(View view) const {
  switch (view) {
    case View::HeatMap: return heatImage_;
    case View::StaticExpansion: return tabs_->widget(0)->grab().toImage();
    case View::DynamicExpansion: return tabs_->widget(1)->grab().toImage();
    case View::Page: return const_cast<AttentionPage*>(this)->grab().toImage();
  }
  return {};
}

bool AttentionPage::saveView(View view, const QString& file, QString* error) const {
  const auto fail = [error](const QString& why) { if (error) *error = why; return false; };
  if (!trace_) return fail(QStringLiteral("nothing to save yet: pick an image first"));
  const QImage image = viewImage(view);
  if (image.isNull()) return fail(QStringLiteral("the view is empty"));
  QByteArray bytes;
  QBuffer buffer(&bytes);
  buffer.open(QIODevice::WriteOnly);
  if (!image.save(&buffer, "PNG")) return fail(QStringLiteral("could not encode the PNG"));
  try {
    expnet::write_file_atomic(file.toStdString(), bytes.toStdString());
  } catch (const std::exception& e) {
    return fail(QString::fromStdString(e.what()));
  }
  return true;
}

void AttentionPage::saveDialog() {
  if (!trace_) return;
  const QStringList filters{QStringLiteral("Heat map of the word (*.png)"),
                            QStringLiteral("Static expansion map (*.png)"),
                            QStringLiteral("Dynamic expansion map (*.png)"), QStringLiteral("Whole page (*.png)")};
  QString chosen = filters[0];
  QString safe = trace_->word(word_);
  safe.replace(QRegularExpression(QStringLiteral("[^A-Za-z0-9_-]")), QStringLiteral("_"));
  const QString suggested = QStringLiteral("%1_word%2_%3.png")
                                .arg(QFileInfo(trace_->path).completeBaseName())
                                .arg(word_ + 1, 2, 10, QLatin1Char('0'))
                                .arg(safe);
  QString file = QFileDialog::getSaveFileName(this, QStringLiteral("Save view as PNG"), suggested,
                                              filters.join(QStringLiteral(";;")), &chosen);
  if (file.isEmpty()) return;
  if (!file.endsWith(QStringLiteral(".png"), Qt::CaseInsensitive)) file += QStringLiteral(".png");
  const View view = View(std::max(0, int(filters.indexOf(chosen))));
  QString error;
  if (!saveView(view, file, &error)) QMessageBox::warning(this, QStringLiteral("Save failed"), error);
}

void AttentionPage::openImageDialog() {
  const QString file = QFileDialog::getOpenFileName(
      this, QStringLiteral("Open an image"), QFileInfo(path_).absolutePath(),
      QStringLiteral("Images (*.png *.jpg *.jpeg *.bmp *.gif *.webp *.tif *.tiff *.ppm *.pgm);;All files (*)"));
  if (!file.isEmpty()) openImage(file);
}

// ---------------------------------------------------------------- describe, settings

QJsonObject AttentionPage::describe() const {
  QJsonObject out{{"model_loaded", bool(context_->captioner())}};
  if (!path_.isEmpty()) out.insert(QStringLiteral("image"), path_);
  if (!error_.isEmpty()) out.insert(QStringLiteral("error"), error_);
  if (!trace_) {
    out.insert(QStringLiteral("message"), context_->captioner() ? QStringLiteral("No trace: pick an image")
                                                                : QStringLiteral("No trace: load a model on the Caption page and pick an image"));
    return out;
  }
  QJsonArray words;
  for (int k = 0; k < trace_->wordCount(); ++k) words.append(trace_->word(k));
  out.insert(QStringLiteral("image"), trace_->path);
  // A later request that failed (or is still running) leaves the last trace on screen.
  if (path_ != trace_->path) out.insert(QStringLiteral("requested_image"), path_);
  out.insert(QStringLiteral("image_size"), QJsonArray{trace_->imageWidth, trace_->imageHeight});
  out.insert(QStringLiteral("caption"), trace_->caption);
  out.insert(QStringLiteral("words"), words);
  out.insert(QStringLiteral("beam_size"), beam_->value());
  if (!carried_.carried().isEmpty()) out.insert(QStringLiteral("decoding_note"), carried_.note());
  out.insert(QStringLiteral("selected_word"),
             QJsonObject{{"index", word_}, {"text", trace_->word(word_)}, {"log_prob", trace_->logprobs.value(word_)}});
  out.insert(QStringLiteral("layer"), layerPick_ < 0 ? QJsonValue(QStringLiteral("mean")) : QJsonValue(layerPick_ + 1));
  out.insert(QStringLiteral("head"), headPick_ < 0 ? QJsonValue(QStringLiteral("mean")) : QJsonValue(headPick_ + 1));
  out.insert(QStringLiteral("opacity"), opacity_->value() / 100.0);
  const auto hottest = std::max_element(heatWeights_.begin(), heatWeights_.end());
  out.insert(QStringLiteral("heat_map"),
             QJsonObject{{"word", trace_->word(word_)},
                         {"grid", QJsonArray{trace_->gridSide, trace_->gridSide}},
                         {"max_weight", hottest == heatWeights_.end() ? 0.0 : double(*hottest)},
                         {"image_size", QJsonArray{heatImage_.width(), heatImage_.height()}}});
  QJsonArray maps;
  for (const ExpansionPlot* plot : {tabs_->staticPlot(), tabs_->dynamicPlot()})
    maps.append(QJsonObject{{"name", plot->mapTitle()},
                            {"rows", plot->matrixRows()},
                            {"cols", plot->matrixCols()},
                            {"shown", plot->isVisible()}});
  out.insert(QStringLiteral("maps"), maps);
  out.insert(QStringLiteral("expansion_tab"), tabs_->currentIndex() == 0 ? "static" : "dynamic");
  out.insert(QStringLiteral("slot"), QJsonObject{{"group", tabs_->staticGroup() + 1},
                                                 {"slot", tabs_->slot()},
                                                 {"cells", int(tabs_->slotWeights().size())}});
  return out;
}

void AttentionPage::restoreSettings() {
  QSettings s;
  s.beginGroup(QStringLiteral("attention"));
  beam_->setValue(s.value(QStringLiteral("beam"), beam_->value()).toInt());
  opacity_->setValue(s.value(QStringLiteral("opacity"), opacity_->value()).toInt());
  setLayerChoice(s.value(QStringLiteral("layer"), -1).toInt());
  setHeadChoice(s.value(QStringLiteral("head"), -1).toInt());
  tabs_->restore(s);
  splitter_->restoreState(s.value(QStringLiteral("splitter")).toByteArray());
}

void AttentionPage::saveSettings() const {
  QSettings s;
  s.beginGroup(QStringLiteral("attention"));
  s.setValue(QStringLiteral("beam"), carried_.userValue(QStringLiteral("beam_size")).toInt());
  s.setValue(QStringLiteral("opacity"), opacity_->value());
  s.setValue(QStringLiteral("layer"), layerPick_);
  s.setValue(QStringLiteral("head"), headPick_);
  tabs_->save(s);
  s.setValue(QStringLiteral("splitter"), splitter_->saveState());
}

void AttentionPage::applyCheckpointOptions() {
  const auto captioner = context_->captioner();
  const std::string carried = captioner ? captioner->carried_decoding().to_json() : "{}";
  carried_.apply(QJsonDocument::fromJson(QByteArray::fromStdString(carried)).object());
  decodingNote_->setText(carried_.note());
}

ExpansionPlot* AttentionPage::staticPlot() const { return tabs_->staticPlot(); }
ExpansionPlot* AttentionPage::dynamicPlot() const { return tabs_->dynamicPlot(); }
const std::vector<float>& AttentionPage::slotWeights() const { return tabs_->slotWeights(); }

#include "compare/comparepage.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QSettings>
#include <QSpinBox>
#include <QSplitter>
#include <QStackedWidget>
#include <QTabWidget>
#include <QToolButton>
#include <QVBoxLayout>

#include <numeric>

#include "common/actionbutton.h"
#include "common/browsebutton.h"
#include "common/formfields.h"
#include "common/hintlabel.h"
#include "common/imageintake.h"
#include "common/localpath.h"
#include "compare/comparecharts.h"
#include "compare/comparetable.h"
#include "compare/modelslots.h"
#include "compare/stepreplay.h"
#include "expnet/image/image_inputs.h"
#include "expnet/system/atomic_file.h"
#include "shell/studiocontext.h"

namespace {
const QString kMissingModels =
    QStringLiteral("load an AIC model and at least one PNAIC model first (see the Models box)");
// In ComparePage::EvaluationState's order: describe()'s names of the states.
const QStringList kEvaluationStates = {QStringLiteral("none"), QStringLiteral("running"), QStringLiteral("done"),
                                       QStringLiteral("failed"), QStringLiteral("cancelled")};
}  // namespace

ComparePage::ComparePage(StudioContext* context, QWidget* parent)
    : StudioPage(parent), context_(context), worker_(new CompareWorker) {
  intake_ = new ImageIntake(this, [this](const QStringList& paths) { addPaths(paths); });
  qRegisterMetaType<ComparedImage>();  // the worker's results cross threads
  qRegisterMetaType<expnet::ComparisonResult>();
  worker_->moveToThread(&thread_);
  connect(&thread_, &QThread::finished, worker_, &QObject::deleteLater);

  auto* layout = new QHBoxLayout(this);
  auto* controls = new QScrollArea;
  controls->setWidget(buildControls());
  controls->setWidgetResizable(true);
  controls->setFrameShape(QFrame::NoFrame);
  controls->setFixedWidth(380);
  controls->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  layout->addWidget(controls);
  tabs_ = new QTabWidget;
  tabs_->setObjectName(QStringLiteral("compareTabs"));
  tabs_->addTab(buildImages(), QStringLiteral("Images"));
  tabs_->addTab(buildDataset(), QStringLiteral("Dataset"));
  layout->addWidget(tabs_, 1);

  wireModels();
  wireImages();
  wireEvaluation();
  thread_.start();
  updateState();
}

ComparePage::~ComparePage() {
  worker_->cancelEvaluation();
  worker_->dropBatchesBefore(nextBatch_);
  thread_.quit();
  thread_.wait();
}

// A slot loads (or forgets) its model in the worker; every row is captioned again after.
void ComparePage::wireModels() {
  connect(slots_, &ModelSlots::loadRequested, this, [this](const SlotRequest& request) {
    QMetaObject::invokeMethod(worker_, [worker = worker_, request] { worker->loadSlot(request); }, Qt::QueuedConnection);
    updateState();
  });
  connect(slots_, &ModelSlots::slotRemoved, this, [this](int slot) {
    QMetaObject::invokeMethod(worker_, [worker = worker_, slot] { worker->removeSlot(slot); }, Qt::QueuedConnection);
    recaptionAll();
  });
  connect(worker_, &CompareWorker::slotLoaded, this, [this](int slot, const QString& file, int groups, double ms) {
    slots_->showLoaded(slot, file, groups, ms);
    recaptionAll();
  });
  connect(worker_, &CompareWorker::slotFailed, this, [this](int slot, const QString& error) {
    slots_->showFailed(slot, error);
    recaptionAll();
  });
}

// The rows of a batch arrive one by one; the replay follows the selected row.
void ComparePage::wireImages() {
  connect(worker_, &CompareWorker::thumbnailReady, table_, &CompareTable::setThumbnail);
  connect(worker_, &CompareWorker::rowReady, this, [this](int batch, const ComparedImage& row) {
    if (batches_.contains(batch)) table_->setEntry(row);
  });
  const auto batchEnded = [this](int batch) {
    batches_.remove(batch);
    updateState();
    if (batches_.isEmpty()) emit rowsFinished();
  };
  connect(worker_, &CompareWorker::batchFinished, this, [batchEnded](int batch, const QStringList&) { batchEnded(batch); });
  connect(worker_, &CompareWorker::batchFailed, this, [this, batchEnded](int batch, const QString& error) {
    if (batches_.contains(batch)) table_->failImages(batches_.value(batch), error);
    batchEnded(batch);
  });
  connect(table_, &CompareTable::selectionChangedTo, this,
          [this](const ModeCaptions& captions) { replay_->setCaptions(captions, table_->modes()); });
}

void ComparePage::wireEvaluation() {
  connect(worker_, &CompareWorker::evaluationProgress, this, [this](int done, int total) {
    evaluationDone_ = done;
    evaluationTotal_ = total;
    updateState();
  });
  const auto evaluationEnd = [this](EvaluationState state, const QString& message) {
    evaluationState_ = state;
    evaluationMessage_ = message;
    updateState();
    emit evaluationEnded();
  };
  connect(worker_, &CompareWorker::evaluated, this, [this, evaluationEnd](const expnet::ComparisonResult& result) {
    evaluationJson_ = QByteArray::fromStdString(expnet::comparison_json(result));  // the export: as `expnet compare --json`
    charts_->setResult(QJsonDocument::fromJson(evaluationJson_).object());
    datasetCentre_->setCurrentIndex(1);
    tabs_->setCurrentIndex(1);
    evaluationEnd(EvaluationState::Done,
                  QStringLiteral("%1 images in %2 s").arg(evaluationTotal_).arg(evaluationClock_.elapsed() / 1000.0, 0, 'f', 1));
  });
  connect(worker_, &CompareWorker::evaluationFailed, this,
          [evaluationEnd](const QString& error) { evaluationEnd(EvaluationState::Failed, error); });
  connect(worker_, &CompareWorker::evaluationCancelled, this, [this, evaluationEnd] {
    evaluationEnd(EvaluationState::Cancelled,
                  QStringLiteral("Cancelled after %1 of %2 images").arg(evaluationDone_).arg(evaluationTotal_));
  });
}

QWidget* ComparePage::buildControls() {
  auto* panel = new QWidget;
  auto* layout = new QVBoxLayout(panel);
  layout->setContentsMargins(0, 0, 6, 0);
  slots_ = new ModelSlots(context_->device());
  slots_->setRuntime(context_->device(), context_->precision());
  // One device and precision for the studio: the Caption page's choice moves the compared models too.
  connect(context_, &StudioContext::runtimeChanged, slots_,
          [this] { slots_->setRuntime(context_->device(), context_->precision()); });
  slots_->addPnaicSlot(QStringLiteral("pnaic-demo-k2"));
  slots_->addPnaicSlot(QStringLiteral("pnaic-demo-k5"));
  layout->addWidget(slots_);
  layout->addWidget(buildModes());
  layout->addWidget(buildEvaluation());
  layout->addStretch(1);
  return panel;
}

QWidget* ComparePage::buildModes() {
  auto* decoding = new QGroupBox(QStringLiteral("Modes"));
  auto* form = new QFormLayout(decoding);
  beam_ = integerField(QStringLiteral("compareBeam"), 1, 64, 3, QStringLiteral("no beam mode"),
                       QStringLiteral("Beam width of the aic-beam<B> mode; AIC greedy and every PNAIC model are always "
                                      "shown. Changing it captions the images again."));
  showDeleted_ = new QCheckBox(QStringLiteral("Show DEL groups, struck through"));
  showDeleted_->setObjectName(QStringLiteral("showDeleted"));
  showDeleted_->setToolTip(QStringLiteral("PNAIC groups that ended in DEL are not part of the caption; show their words "
                                          "struck through"));
  form->addRow(QStringLiteral("AIC beam:"), beam_);
  form->addRow(showDeleted_);
  connect(beam_, &QSpinBox::editingFinished, this, &ComparePage::recaptionAll);
  connect(showDeleted_, &QCheckBox::toggled, this, [this](bool show) {
    table_->setShowDeleted(show);
    replay_->setShowDeleted(show);
  });
  return decoding;
}

QLayout* ComparePage::buildDatasetField() {
  dataset_ = new QLineEdit;
  dataset_->setObjectName(QStringLiteral("compareDataset"));
  dataset_->setPlaceholderText(QStringLiteral("dataset file or folder"));
  dataset_->setToolTip(QStringLiteral("Any dataset expnet reads: Karpathy COCO JSON, CSV, JSON Lines, a shapes folder"));
  auto* file = new BrowseButton(dataset_, QStringLiteral("Choose a dataset file"),
                                QStringLiteral("Datasets (*.json *.jsonl *.csv);;All files (*)"));
  // One field, two dialogs: a dataset is a file (COCO JSON, CSV) or a folder (shapes).
  auto* folder = new QToolButton;
  folder->setText(QStringLiteral("Folder…"));
  folder->setToolTip(QStringLiteral("Choose a dataset folder"));
  connect(folder, &QToolButton::clicked, this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(this, QStringLiteral("Choose a dataset folder"), dataset_->text());
    if (!dir.isEmpty()) dataset_->setText(dir);
  });
  auto* row = new QHBoxLayout;
  row->setContentsMargins(0, 0, 0, 0);
  row->addWidget(file->row(), 1);
  row->addWidget(folder);
  return row;
}

QWidget* ComparePage::buildEvaluation() {
  auto* datasetField = buildDatasetField();
  split_ = splitField(QStringLiteral("compareSplit"), QStringLiteral("test"),
                      QStringLiteral("Split of the dataset to caption (all: every image)"));
  limit_ = integerField(QStringLiteral("compareLimit"), 0, 1000000, 200, QStringLiteral("all"),
                        QStringLiteral("At most this many images of the split"));
  evaluate_ = new ActionButton(QStringLiteral("Evaluate"), QKeySequence(Qt::CTRL | Qt::Key_R),
                               QStringLiteral("Caption the split with every mode and score it"), this);
  evaluate_->setObjectName(QStringLiteral("compareEvaluate"));
  cancel_ = new ActionButton(QStringLiteral("Cancel"), QKeySequence(Qt::Key_Escape),
                             QStringLiteral("Stop the evaluation"), this);
  cancel_->setObjectName(QStringLiteral("compareCancel"));
  progress_ = new QProgressBar;
  progress_->setObjectName(QStringLiteral("compareProgress"));
  evaluationLabel_ = new HintLabel;
  evaluationLabel_->setObjectName(QStringLiteral("evaluationState"));
  evaluationLabel_->setWordWrap(true);
  evaluationLabel_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  exportCsv_ = new QPushButton(QStringLiteral("Export CSV…"));
  exportCsv_->setToolTip(QStringLiteral("Save the table of figures as CSV"));
  exportJson_ = new QPushButton(QStringLiteral("Export JSON…"));
  exportJson_->setToolTip(QStringLiteral("Save the whole result, as `expnet compare --json` prints it"));
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(evaluate_);
  buttons->addWidget(cancel_);
  auto* exports = new QHBoxLayout;
  exports->addWidget(exportCsv_);
  exports->addWidget(exportJson_);
  auto* evaluation = new QGroupBox(QStringLiteral("Evaluate on a dataset"));
  auto* eform = new QFormLayout(evaluation);
  eform->addRow(QStringLiteral("Dataset:"), datasetField);
  eform->addRow(QStringLiteral("Split:"), split_);
  eform->addRow(QStringLiteral("Limit:"), limit_);
  eform->addRow(buttons);
  eform->addRow(progress_);
  eform->addRow(evaluationLabel_);
  eform->addRow(exports);
  connect(evaluate_, &QPushButton::clicked, this,
          [this] { evaluateDataset(dataset_->text().trimmed(), split_->currentText(), limit_->value()); });
  connect(cancel_, &QPushButton::clicked, this, &ComparePage::cancelEvaluation);
  connect(exportCsv_, &QPushButton::clicked, this, [this] {
    const QString file = QFileDialog::getSaveFileName(this, QStringLiteral("Export figures"),
                                                      QStringLiteral("compare.csv"), QStringLiteral("CSV (*.csv)"));
    if (!file.isEmpty()) exportFiguresCsv(file);
  });
  connect(exportJson_, &QPushButton::clicked, this, [this] {
    const QString file = QFileDialog::getSaveFileName(this, QStringLiteral("Export result"),
                                                      QStringLiteral("compare.json"), QStringLiteral("JSON (*.json)"));
    if (!file.isEmpty()) exportJson(file);
  });
  return evaluation;
}

QWidget* ComparePage::buildImages() {
  auto* page = new QWidget;
  auto* layout = new QVBoxLayout(page);
  auto* bar = new QHBoxLayout;
  auto* open = new ActionButton(QStringLiteral("Open…"), QKeySequence::Open,
                                QStringLiteral("Add images or a folder to compare on"), this);
  // Ctrl+V too, as on the Caption page: text fields keep their own Ctrl+V (a shortcut override).
  auto* paste = new ActionButton(QStringLiteral("Paste"),
                                 {QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_V), QKeySequence(QKeySequence::Paste)},
                                 QStringLiteral("Add the images (or paths) on the clipboard (also Ctrl+V)"), this);
  auto* clear = new QPushButton(QStringLiteral("Clear"));
  clear->setToolTip(QStringLiteral("Remove every image row"));
  imagesStatus_ = new QLabel;
  imagesStatus_->setObjectName(QStringLiteral("imagesStatus"));
  imagesStatus_->setWordWrap(true);  // two lines rather than a page wider than the window
  bar->addWidget(open);
  bar->addWidget(paste);
  bar->addWidget(clear);
  bar->addSpacing(12);
  bar->addWidget(imagesStatus_, 1);
  layout->addLayout(bar);
  connect(open, &QPushButton::clicked, this, &ComparePage::openImages);
  connect(paste, &QPushButton::clicked, this, &ComparePage::pasteFromClipboard);
  connect(clear, &QPushButton::clicked, this, &ComparePage::clearImages);

  imagesCentre_ = new QStackedWidget;
  imagesHint_ = new HintLabel(
      QStringLiteral("Drop images or folders here (or Open…, Ctrl+O; Paste, Ctrl+V). Each image is captioned by every "
                     "mode: AIC greedy, AIC beam and each PNAIC model, with its steps and decode time. PNAIC captions "
                     "show their groups, one colour each; the step replay below shows how each caption grows."),
      HintLabel::Kind::Panel);
  imagesCentre_->addWidget(imagesHint_);
  auto* split = new QSplitter(Qt::Vertical);
  table_ = new CompareTable;
  replay_ = new StepReplay;
  replay_->setObjectName(QStringLiteral("stepReplay"));
  split->addWidget(table_);
  split->addWidget(replay_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 1);
  imagesCentre_->addWidget(split);
  layout->addWidget(imagesCentre_, 1);
  return page;
}

QWidget* ComparePage::buildDataset() {
  datasetCentre_ = new QStackedWidget;
  datasetHint_ = new HintLabel(
      QStringLiteral("Pick a dataset, a split and a limit on the left, then Evaluate (Ctrl+R): every image is decoded "
                     "alone by every mode in turn, timed, and scored against its references. The chart plots CIDEr-D "
                     "against decode time, one point per mode. The same figures as expnet compare --dataset D "
                     "--split S --json."),
      HintLabel::Kind::Panel);
  charts_ = new CompareCharts;
  datasetCentre_->addWidget(datasetHint_);
  datasetCentre_->addWidget(charts_);
  return datasetCentre_;
}

void ComparePage::showEvent(QShowEvent* event) {
  StudioPage::showEvent(event);
  loadModels();
}

void ComparePage::loadModels() {
  if (modelsRequested_) return;
  modelsRequested_ = true;
  for (const auto& request : slots_->requests()) slots_->setSlot(request.slot, request.spec, request.vocab);
}

bool ComparePage::modelsReady() const {
  return modelsRequested_ && !slots_->loading() && slots_->aicLoaded() && slots_->loadedPnaicSlots() > 0;
}

void ComparePage::addPaths(const QStringList& paths) {
  std::vector<std::string> arguments;
  // localPath*: a name that is not UTF-8 keeps its bytes (QString::toStdString would not).
  for (const auto& path : paths) arguments.push_back(localPathBytes(path));
  QStringList images;
  for (const auto& input : expnet::expand_image_inputs(arguments)) {
    const QString path = input.error.empty() ? localPathFromBytes(QByteArray::fromStdString(input.path))
                                             : QString::fromStdString(input.display);
    if (table_->hasImage(path)) continue;
    table_->addImages({path});
    if (!input.error.empty())
      table_->failImages({path}, QString::fromStdString(input.error), true);
    else
      images << path;
  }
  if (table_->currentRow() < 0 && table_->rows() > 0) table_->selectRow(0);
  waiting_ << images;
  loadModels();
  submitWaiting();
  updateState();
}

void ComparePage::submitWaiting() {
  if (waiting_.isEmpty() || !modelsReady()) return;
  const int batch = nextBatch_++;
  const QStringList images = waiting_;
  waiting_.clear();
  batches_.insert(batch, images);
  QMetaObject::invokeMethod(
      worker_, [worker = worker_, batch, images, beam = beam_->value()] { worker->compareImages(batch, images, beam); },
      Qt::QueuedConnection);
  updateState();
}

// The models or the beam changed: every row is captioned again by the modes of now.
void ComparePage::recaptionAll() {
  if (slots_->loading()) return updateState();  // once the last slot has loaded
  worker_->dropBatchesBefore(nextBatch_);
  batches_.clear();
  waiting_ = table_->resetCaptions();
  submitWaiting();
  if (evaluationWanted_ && modelsReady()) {
    startEvaluation();
  } else if (evaluationWanted_) {  // every slot has answered and some are missing
    evaluationWanted_ = false;
    evaluationState_ = EvaluationState::Failed;
    evaluationMessage_ = kMissingModels;
    emit evaluationEnded();
  }
  updateState();
  replay_->setCaptions(table_->selectedCaptions(), table_->modes());
}

void ComparePage::openImages() { intake_->open(); }

void ComparePage::pasteFromClipboard() { intake_->paste(); }

void ComparePage::clearImages() {
  worker_->dropBatchesBefore(nextBatch_);
  batches_.clear();
  waiting_.clear();
  table_->clearRows();
  replay_->setCaptions({}, {});
  updateState();
  emit rowsFinished();
}

void ComparePage::evaluateDataset(const QString& dataset, const QString& split, int limit) {
  if (evaluating()) return;
  dataset_->setText(dataset);
  split_->setCurrentText(split);
  limit_->setValue(limit);
  if (dataset.isEmpty()) {
    evaluationState_ = EvaluationState::Failed;
    evaluationMessage_ = QStringLiteral("Choose a dataset file or folder first");
    return updateState();
  }
  evaluationWanted_ = true;
  loadModels();
  if (modelsReady()) {
    startEvaluation();
  } else if (!slots_->loading()) {  // every slot has answered and some are missing
    evaluationWanted_ = false;
    evaluationState_ = EvaluationState::Failed;
    evaluationMessage_ = kMissingModels;
    emit evaluationEnded();
  }
  updateState();
}

void ComparePage::startEvaluation() {
  evaluationWanted_ = false;
  evaluationState_ = EvaluationState::Running;
  evaluationMessage_.clear();
  evaluationDone_ = evaluationTotal_ = 0;
  evaluationClock_.start();
  EvaluationRequest request;
  request.dataset = dataset_->text().trimmed();
  request.split = split_->currentText();
  request.limit = limit_->value();
  request.beam = beam_->value();
  worker_->armEvaluation();
  QMetaObject::invokeMethod(worker_, [worker = worker_, request] { worker->evaluate(request); }, Qt::QueuedConnection);
}

void ComparePage::cancelEvaluation() {
  if (evaluationWanted_) {  // not started yet: the models are still loading
    evaluationWanted_ = false;
    evaluationState_ = EvaluationState::Cancelled;
    evaluationMessage_ = QStringLiteral("Cancelled before it started");
    updateState();
    emit evaluationEnded();
    return;
  }
  if (!evaluating()) return;
  worker_->cancelEvaluation();
  evaluationMessage_ = QStringLiteral("Cancelling…");
  updateState();
}

void ComparePage::exportFiguresCsv(const QString& file) {
  try {
    expnet::write_file_atomic(file.toStdString(), charts_->figuresCsv().toStdString());
  } catch (const std::exception& e) {
    QMessageBox::warning(this, QStringLiteral("Export figures"), QString::fromStdString(e.what()));
  }
}

void ComparePage::exportJson(const QString& file) {
  try {
    expnet::write_file_atomic(file.toStdString(), evaluationJson_.toStdString() + "\n");
  } catch (const std::exception& e) {
    QMessageBox::warning(this, QStringLiteral("Export result"), QString::fromStdString(e.what()));
  }
}

void ComparePage::updateState() {
  const bool hasResult = !evaluationJson_.isEmpty();
  imagesCentre_->setCurrentIndex(table_->rows() > 0 ? 1 : 0);
  const bool waitingForModels = !waiting_.isEmpty() || evaluationWanted_;
  QString status;
  if (slots_->loading())
    status = QStringLiteral("Loading models…");
  else if (waitingForModels && !modelsReady())
    status = QStringLiteral("Load an AIC model and at least one PNAIC model to compare");
  else if (!batches_.isEmpty())
    status = QStringLiteral("Captioning %1 images with every mode…").arg(
        std::accumulate(batches_.begin(), batches_.end(), 0, [](int n, const QStringList& b) { return n + int(b.size()); }));
  else if (table_->rows() > 0)
    status = (table_->rows() == 1 ? QStringLiteral("1 image") : QStringLiteral("%1 images").arg(table_->rows())) +
             QStringLiteral("; select one to replay its decoding");
  imagesStatus_->setText(status);

  evaluate_->setEnabled(!evaluating() && !evaluationWanted_);
  cancel_->setEnabled(evaluating() || evaluationWanted_);
  exportCsv_->setEnabled(hasResult && !evaluating());
  exportJson_->setEnabled(hasResult && !evaluating());
  progress_->setVisible(evaluating());
  progress_->setRange(0, std::max(1, evaluationTotal_));
  progress_->setValue(evaluationDone_);
  QString text;
  if (evaluationWanted_) {
    text = QStringLiteral("Waiting for the models to load…");
  } else if (evaluating()) {
    text = QStringLiteral("%1 / %2 images").arg(evaluationDone_).arg(evaluationTotal_);
    if (evaluationDone_ > 0 && evaluationTotal_ > evaluationDone_) {
      const double left = evaluationClock_.elapsed() / 1000.0 / evaluationDone_ * (evaluationTotal_ - evaluationDone_);
      text += QStringLiteral(" · about %1 s left").arg(left, 0, 'f', 0);
    }
    if (!evaluationMessage_.isEmpty()) text += QStringLiteral(" · ") + evaluationMessage_;
  } else if (evaluationState_ == EvaluationState::Failed) {
    text = QStringLiteral("Failed: ") + evaluationMessage_;
  } else {
    text = evaluationMessage_;
  }
  evaluationLabel_->setText(text);
  evaluationLabel_->setKind(evaluationState_ == EvaluationState::Failed ? HintLabel::Kind::Error : HintLabel::Kind::Status);
}

void ComparePage::restoreSettings() {
  QSettings s;
  s.beginGroup(QStringLiteral("compare"));
  beam_->setValue(s.value(QStringLiteral("beam"), beam_->value()).toInt());
  showDeleted_->setChecked(s.value(QStringLiteral("show_deleted"), false).toBool());
  dataset_->setText(s.value(QStringLiteral("dataset")).toString());
  split_->setCurrentText(s.value(QStringLiteral("split"), split_->currentText()).toString());
  limit_->setValue(s.value(QStringLiteral("limit"), limit_->value()).toInt());
  slots_->fromSettings(s.value(QStringLiteral("slots")).toStringList());
  // Shown already (the page the window opened on): load what the slots say now.
  if (modelsRequested_)
    for (const auto& request : slots_->requests()) slots_->setSlot(request.slot, request.spec, request.vocab);
}

void ComparePage::saveSettings() const {
  QSettings s;
  s.beginGroup(QStringLiteral("compare"));
  s.setValue(QStringLiteral("beam"), beam_->value());
  s.setValue(QStringLiteral("show_deleted"), showDeleted_->isChecked());
  s.setValue(QStringLiteral("dataset"), dataset_->text());
  s.setValue(QStringLiteral("split"), split_->currentText());
  s.setValue(QStringLiteral("limit"), limit_->value());
  s.setValue(QStringLiteral("slots"), slots_->toSettings());
}

bool ComparePage::isBusy() const {
  return slots_->loading() || !batches_.isEmpty() || evaluating() ||
         ((!waiting_.isEmpty() || evaluationWanted_) && modelsReady());
}

QJsonObject ComparePage::describe() const {
  QJsonObject out{{"slots", slots_->describe()},
                  {"beam", beam_->value()},
                  {"show_deleted", showDeleted_->isChecked()},
                  {"modes", QJsonArray::fromStringList(table_->modes())},
                  {"rows", table_->describeRows()},
                  {"replay", replay_->describe()},
                  {"evaluation", QJsonObject{{"state", kEvaluationStates.value(static_cast<int>(evaluationState_))},
                                             {"message", evaluationMessage_},
                                             {"done", evaluationDone_},
                                             {"total", evaluationTotal_}}}};
  if (!evaluationJson_.isEmpty()) {
    out.insert(QStringLiteral("points"), charts_->points());
    out.insert(QStringLiteral("figures"), QJsonDocument::fromJson(evaluationJson_).object().value(QStringLiteral("modes")));
  }
  return out;
}

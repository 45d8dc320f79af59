#include "caption/captionpage.h"

#include <algorithm>

#include <QApplication>
#include <QClipboard>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLabel>
#include <QMenu>
#include <QMessageBox>
#include <QMimeData>
#include <QProgressBar>
#include <QSettings>
#include <QSplitter>
#include <QStackedWidget>
#include <QTableView>
#include <QTextBrowser>
#include <QToolButton>
#include <QUrl>
#include <QVBoxLayout>

#include "caption/alttextbar.h"
#include "caption/captiondetails.h"
#include "caption/captionmodel.h"
#include "caption/decodingform.h"
#include "caption/demonotice.h"
#include "caption/modelform.h"
#include "common/actionbutton.h"
#include "common/formfields.h"
#include "common/hintlabel.h"
#include "common/imageintake.h"
#include "common/localpath.h"
#include "common/theme.h"
#include "common/wrappingrow.h"
#include "expnet/image/image_inputs.h"
#include "expnet/model/demo_model.h"
#include "shell/studiocontext.h"

namespace {
const char* kNoModelHint =
    "<h3>No model loaded</h3>"
    "<p>To caption images, load a model in the <b>Model</b> box above: the checkpoint (<code>.pth</code>: the "
    "authors' reference file or one of ours), its vocabulary (<code>.pickle</code> or <code>.json</code>) and, "
    "for a reference checkpoint, the model preset (<i>official</i>, <i>small</i>, <i>tiny</i>) or a config JSON. "
    "Then press <b>Load model</b> (Ctrl+L).</p>"
    "<p>From the command line: <code>expnet-studio --checkpoint FILE.pth --vocab VOCAB --model PRESET</code>.</p>"
    "<p>Or press <b>Demo model</b> for the built-in model trained on the shapes set (coloured circles, squares, "
    "triangles, stars and diamonds): <code>expnet-studio --model demo</code>. Images dropped now wait and are "
    "captioned once a model is loaded.</p>";
const char* kDropHint =
    "<h3>Drop images or folders here</h3>"
    "<p>Or press <b>Open…</b> (Ctrl+O), or paste an image (Ctrl+V). Captions stream in word by word; "
    "select a row for its n-best list, timings and settings. Double-click a caption (or F2) to edit it, then "
    "<b>Save as alt text</b> writes it into the photo's own metadata.</p>";
}  // namespace

CaptionPage::CaptionPage(StudioContext* context, QWidget* parent)
    : StudioPage(parent), context_(context), items_(new CaptionModel(this)), worker_(new CaptionWorker) {
  intake_ = new ImageIntake(this, [this](const QStringList& paths) { addPaths(paths); });
  worker_->moveToThread(&thread_);
  connect(&thread_, &QThread::finished, worker_, &QObject::deleteLater);
  connect(worker_, &CaptionWorker::modelLoaded, this, &CaptionPage::onModelLoaded);
  connect(worker_, &CaptionWorker::modelFailed, this, &CaptionPage::onModelFailed);
  connect(worker_, &CaptionWorker::itemStarted, items_, &CaptionModel::setRunning);
  connect(worker_, &CaptionWorker::itemWords, items_, &CaptionModel::setPartial);
  connect(worker_, &CaptionWorker::itemDone, this, [this](int row, const expnet::CaptionedImage& result) {
    items_->setDone(row, result);
    jobEnded();
  });
  connect(worker_, &CaptionWorker::itemFailed, this, [this](int row, const QString& error) {
    items_->setFailed(row, error);
    jobEnded();
  });
  connect(worker_, &CaptionWorker::itemCancelled, this, [this](int row) {
    items_->setCancelled(row);
    jobEnded();
  });
  thread_.start();

  modelForm_ = new ModelForm(context_->device(), context_->threads(), this);
  modelForm_->setRecentModels(&recentModels_);
  connect(modelForm_, &ModelForm::loadRequested, this, &CaptionPage::loadModel);
  connect(modelForm_, &ModelForm::precisionChosen, this, [this](const QString& precision) {
    if (!modelLoaded() || loading_ || precision == loaded_.precision) return;
    ModelRequest again = loaded_;
    again.precision = precision;
    loadModel(again);
  });
  decodingForm_ = new DecodingForm;
  auto* top = new WrappingRow;
  top->setObjectName(QStringLiteral("modelAndDecoding"));
  top->addWidget(modelForm_, 3);
  top->addWidget(decodingForm_, 2);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(12, 12, 12, 8);
  layout->addWidget(top);
  layout->addWidget(buildActions());
  demoNotice_ = new DemoNotice;
  demoNotice_->hide();
  layout->addWidget(demoNotice_);
  layout->addWidget(buildCentre(), 1);

  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, &CaptionPage::showDetails);
  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this](const QModelIndex& current) {
    if (current.isValid()) context_->setSelectedImage(items_->item(current.row()).path);
  });
  connect(items_, &CaptionModel::itemChanged, this, [this](int row) {
    if (table_->currentIndex().row() == row) showDetails();
  });
  connect(items_, &QAbstractItemModel::rowsInserted, this, &CaptionPage::updateState);
  connect(items_, &QAbstractItemModel::modelReset, this, &CaptionPage::updateState);
  connect(items_, &CaptionModel::itemChanged, this, &CaptionPage::updateState);
  connect(altTextBar_, &AltTextBar::savingStarted, this, &CaptionPage::updateState);
  connect(altTextBar_, &AltTextBar::savingFinished, this, &CaptionPage::updateState);
  updateState();
}

CaptionPage::~CaptionPage() {
  worker_->cancelAll();
  thread_.quit();
  thread_.wait();
}

QWidget* CaptionPage::buildCentre() {
  hint_ = new HintLabel(QString(), HintLabel::Kind::Panel);
  table_ = new QTableView;
  table_->setObjectName(QStringLiteral("captionTable"));
  table_->setModel(items_);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  table_->setIconSize(QSize(72, 72));
  table_->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::EditKeyPressed);
  table_->setWordWrap(true);
  table_->verticalHeader()->setVisible(false);
  table_->verticalHeader()->setDefaultSectionSize(80);
  table_->horizontalHeader()->setSectionResizeMode(CaptionModel::ImageColumn, QHeaderView::Interactive);
  table_->horizontalHeader()->setSectionResizeMode(CaptionModel::CaptionColumn, QHeaderView::Stretch);
  table_->horizontalHeader()->setSectionResizeMode(CaptionModel::StatusColumn, QHeaderView::ResizeToContents);
  table_->setColumnWidth(CaptionModel::ImageColumn, 250);
  table_->setAlternatingRowColors(true);
  details_ = new QTextBrowser;
  details_->setPlaceholderText(QStringLiteral("Select an image to see its n-best list, timings and settings."));
  auto* splitter = new QSplitter;
  splitter->addWidget(table_);
  splitter->addWidget(details_);
  splitter->setStretchFactor(0, 3);
  splitter->setStretchFactor(1, 1);
  splitter->setSizes({700, 300});
  centre_ = new QStackedWidget;
  centre_->addWidget(hint_);
  centre_->addWidget(splitter);
  return centre_;
}

QWidget* CaptionPage::buildActions() {
  auto* open = new ActionButton(QStringLiteral("Open…"), QKeySequence::Open, QStringLiteral("Add images or a folder"), this);
  // Ctrl+V too: text fields keep their own Ctrl+V (they take it as a shortcut override).
  auto* paste = new ActionButton(QStringLiteral("Paste"),
                                 {QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_V), QKeySequence(QKeySequence::Paste)},
                                 QStringLiteral("Caption the image or files on the clipboard (also Ctrl+V)"), this);
  auto* cancel = new ActionButton(QStringLiteral("Cancel"), QKeySequence(Qt::Key_Escape),
                                  QStringLiteral("Stop captioning: the current and queued images"), this);
  // Ctrl+C too: text fields keep their own Ctrl+C (they take it as a shortcut override).
  auto* copy = new ActionButton(QStringLiteral("Copy caption"),
                                {QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_C), QKeySequence(QKeySequence::Copy)},
                                QStringLiteral("Copy the selected images' captions (also Ctrl+C)"), this);
  auto* clear = new ActionButton(QStringLiteral("Clear"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Delete),
                                 QStringLiteral("Remove every image from the list"), this);
  connect(open, &QPushButton::clicked, this, &CaptionPage::openImages);
  connect(paste, &QPushButton::clicked, this, &CaptionPage::pasteFromClipboard);
  connect(cancel, &QPushButton::clicked, this, &CaptionPage::cancel);
  connect(copy, &QPushButton::clicked, this, &CaptionPage::copyCaption);
  clear->setObjectName(QStringLiteral("clearImages"));
  connect(clear, &QPushButton::clicked, this, &CaptionPage::clearItems);
  cancelButton_ = cancel;
  copyButton_ = copy;
  clearButton_ = clear;

  auto* recentButton = menuButton(QStringLiteral("recent"), QStringLiteral("Recent"),
                                  QStringLiteral("Add again an image or folder added lately"), open->sizeHint().height(),
                                  [this](QMenu* menu) { recent_.fillMenu(menu, [this](const QString& path) { addPaths({path}); }); });
  exportButton_ = new QToolButton;
  exportButton_->setText(QStringLiteral("Export…"));
  exportButton_->setToolTip(QStringLiteral("Save the captions as CSV, JSON Lines or COCO results JSON (Ctrl+E)"));
  exportButton_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
  exportButton_->setToolButtonStyle(Qt::ToolButtonTextOnly);
  exportButton_->setMinimumHeight(open->sizeHint().height());
  connect(exportButton_, &QToolButton::clicked, this, &CaptionPage::exportCaptions);

  altTextBar_ = new AltTextBar(items_, [this] {
    QList<int> rows;
    for (const QModelIndex& index : table_->selectionModel()->selectedRows()) rows << index.row();
    return rows;
  });
  progress_ = new QLabel;
  batchBar_ = new QProgressBar;
  batchBar_->setObjectName(QStringLiteral("batchProgress"));
  batchBar_->setMaximumWidth(160);
  batchBar_->setFormat(QStringLiteral("%v of %m"));
  batchBar_->hide();
  auto* bar = new QWidget;
  auto* row = new QHBoxLayout(bar);
  row->setContentsMargins(0, 4, 0, 4);
  for (QWidget* w : std::initializer_list<QWidget*>{open, recentButton, paste, cancel, copy, exportButton_, clear})
    row->addWidget(w);
  row->addSpacing(12);
  row->addWidget(batchBar_);
  row->addWidget(progress_, 1);
  // Save as alt text on a row of its own: with its progress and summary it does not fit beside the buttons.
  auto* both = new QWidget;
  auto* rows = new QVBoxLayout(both);
  rows->setContentsMargins(0, 0, 0, 0);
  rows->setSpacing(0);
  rows->addWidget(bar);
  rows->addWidget(altTextBar_);
  return both;
}

void CaptionPage::loadModel(const ModelRequest& request) {
  if (loading_) return;
  requested_ = request;
  loadNote_.clear();
  modelForm_->showRequest(request);
  const ModelRequest runtime = modelForm_->request();
  // A preset of the authors' model alone has no words to caption with: say which files it needs.
  const QStringList presets{QStringLiteral("official"), QStringLiteral("small"), QStringLiteral("tiny")};
  if (request.checkpoint.isEmpty() && request.vocab.isEmpty() && presets.contains(request.model)) {
    modelError_ = QStringLiteral("Config '%1' is the authors' model: choose its checkpoint (rf_model.pth) and "
                                 "vocabulary (demo_coco_tokens.pickle) above (README: captioning photos), or press "
                                 "Demo model.").arg(request.model);
    return updateState();
  }
  ModelRequest withDevice = request;
  withDevice.device = runtime.device;
  withDevice.threads = runtime.threads;
  loading_ = true;
  context_->setModelLoading(true);
  modelError_.clear();
  updateState();
  // A functor queued to the worker's thread: the load runs there, not here.
  QMetaObject::invokeMethod(worker_, [worker = worker_, withDevice] { worker->loadModel(withDevice); },
                            Qt::QueuedConnection);
}

void CaptionPage::onModelLoaded(const LoadedModel& model) {
  loading_ = false;
  modelName_ = model.precision == QStringLiteral("bf16") ? model.name + QStringLiteral(" (bf16)") : model.name;
  if (!model.precisionNote.isEmpty())
    loadNote_ = loadNote_.isEmpty() ? model.precisionNote : loadNote_ + QStringLiteral("; ") + model.precisionNote;
  modelDetails_ = model;
  decodingForm_->setModelMaxLength(model.maxSeqLen);
  decodingForm_->applyCheckpoint(QJsonDocument::fromJson(QByteArray::fromStdString(model.carriedDecoding)).object());
  decodingForm_->setGreedyOnly(model.pnaic);
  demoNotice_->setVisible(model.demo);
  loaded_ = requested_;
  recentModels_.add(requested_);
  // Saved at once (a crash must not forget it), unless the page runs without the user's
  // settings (--screenshot, tests): then saveSettings() alone writes them.
  if (settingsRestored_) QSettings().setValue(QStringLiteral("caption/recent_models"), recentModels_.toSettings());
  context_->setModelLoading(false);
  context_->setCaptioner(worker_->captioner());
  context_->setModelName(modelName_);
  context_->setRuntime(model.device, model.threads, model.precision);
  updateState();
  emit modelReady();
  submitQueued();
}

void CaptionPage::loadLastModel() {
  QString note;
  if (!recentModels_.models().isEmpty()) {
    const ModelRequest last = recentModels_.models().first();
    const QString missing = RecentModels::missingFile(last);
    if (missing.isEmpty()) return loadModel(last);
    note = QStringLiteral("The last model, %1, was not reloaded: %2 is gone").arg(modelDisplayName(last), missing);
  }
  if (!expnet::demo_model_available()) {
    modelError_ = note;
    return updateState();
  }
  ModelRequest demo;
  demo.model = QStringLiteral("demo");
  loadModel(demo);
  if (!note.isEmpty()) loadNote_ = note + QStringLiteral("; the demo model is loaded instead");
}

void CaptionPage::onModelFailed(const QString& error) {
  loading_ = false;
  context_->setModelLoading(false);
  modelError_ = error;
  updateState();
  emit modelReady();
}

void CaptionPage::addPaths(const QStringList& paths) {
  std::vector<std::string> arguments;
  // localPath*: a name that is not UTF-8 keeps its bytes (QString::toStdString would not).
  for (const auto& path : paths) arguments.push_back(localPathBytes(path));
  QVector<CaptionItem> added;
  for (const auto& input : expnet::expand_image_inputs(arguments)) {
    CaptionItem item;
    item.display = QString::fromStdString(input.display);
    item.path = localPathFromBytes(QByteArray::fromStdString(input.path));
    if (!input.error.empty()) {
      item.status = CaptionItem::Status::Failed;
      item.error = QString::fromStdString(input.error);
    }
    added.push_back(item);
  }
  // Recent remembers what can be opened again: no pasted image's temporary file, no missing path, no non-image file.
  QStringList remembered;
  for (const QString& path : paths) {
    const QFileInfo info(path);
    const std::string suffix = "." + info.suffix().toLower().toStdString();
    const auto& images = expnet::image_extensions();
    if (!intake_->isPasted(path) && (info.isDir() || (info.isFile() && std::find(images.begin(), images.end(), suffix) != images.end())))
      remembered << path;
  }
  recent_.add(remembered);
  cleared_.clear();  // a Clear is undone on the list it emptied only
  if (items_->pendingCount() == 0) batchStart_ = items_->rowCount();  // a new batch; else it joins the one going on
  const int first = items_->append(added);
  if (!added.isEmpty()) table_->scrollTo(items_->index(first, 0), QAbstractItemView::PositionAtTop);  // the first added, not the last
  if (table_->currentIndex().row() < 0 && !added.isEmpty()) table_->selectRow(first);
  submitQueued();
}

// Sends every queued row to the worker, with the settings of this moment.
void CaptionPage::submitQueued() {
  if (!modelLoaded() || loading_) return;
  QVector<CaptionJob> jobs;
  QJsonObject settings = decodingForm_->settings(modelDetails_.maxSeqLen);
  // Which model made each caption: rows of two models stay told apart, in the table and the exports.
  settings.insert(QStringLiteral("model"), modelName_);
  settings.insert(QStringLiteral("precision"), modelDetails_.precision);
  settings.insert(QStringLiteral("device"), modelDetails_.device);
  for (int row = 0; row < items_->rowCount(); ++row) {
    const auto& item = items_->item(row);
    if (item.status != CaptionItem::Status::Queued || item.submitted) continue;
    // The row keeps the settings and the model it was captioned with (its alt text names that model).
    items_->setSubmitted(row, settings, loaded_.checkpoint.isEmpty() ? loaded_.model : QString(), loaded_.checkpoint);
    jobs.push_back({row, item.path});
  }
  if (jobs.isEmpty()) return;
  inFlight_ += int(jobs.size());
  QMetaObject::invokeMethod(
      worker_,
      [worker = worker_, jobs, options = decodingForm_->options(), epoch = worker_->cancelEpoch()] {
        worker->caption(jobs, options, epoch);
      },
      Qt::QueuedConnection);
  updateState();
}

void CaptionPage::jobEnded() {
  inFlight_ = std::max(0, inFlight_ - 1);
  updateState();
  if (inFlight_ == 0) emit captioningFinished();
}

void CaptionPage::cancel() {
  worker_->cancelAll();
  altTextBar_->cancel();
  // Rows still waiting for a model are cancelled here; the worker reports the others.
  for (int row = 0; row < items_->rowCount(); ++row) {
    const auto& item = items_->item(row);
    if (item.status == CaptionItem::Status::Queued && !item.submitted)
      items_->setCancelled(row);
  }
}

void CaptionPage::openImages() {
  intake_->open();
}

void CaptionPage::pasteFromClipboard() {
  intake_->paste();
}

void CaptionPage::copyCaption() {
  QStringList lines;
  for (const QModelIndex& index : table_->selectionModel()->selectedRows()) {
    const auto& item = items_->item(index.row());
    if (item.status == CaptionItem::Status::Done) lines << item.caption();
  }
  if (lines.isEmpty() && table_->currentIndex().isValid()) lines << items_->item(table_->currentIndex().row()).caption();
  if (!lines.isEmpty()) QApplication::clipboard()->setText(lines.join(QLatin1Char('\n')));
}

void CaptionPage::exportCaptions() {
  QString filter;
  const QString file = QFileDialog::getSaveFileName(
      this, QStringLiteral("Export captions"), QStringLiteral("captions.csv"),
      QStringLiteral("CSV (*.csv);;JSON Lines (*.jsonl);;COCO results JSON (*.json)"), &filter);
  if (file.isEmpty()) return;
  try {
    if (file.endsWith(QStringLiteral(".jsonl")) || filter.startsWith(QStringLiteral("JSON Lines")))
      items_->exportJsonLines(file);
    else if (file.endsWith(QStringLiteral(".json")) || filter.startsWith(QStringLiteral("COCO")))
      items_->exportCocoResults(file);
    else
      items_->exportCsv(file);
    progress_->setText(QStringLiteral("Exported to %1").arg(file));
  } catch (const std::exception& e) {
    QMessageBox::warning(this, QStringLiteral("Export failed"), QString::fromStdString(e.what()));
  }
}

void CaptionPage::clearItems() {
  if (items_->rowCount() == 0 && !cleared_.isEmpty()) {  // Undo clear
    items_->append(cleared_);
    cleared_.clear();
    table_->selectRow(0);
    return updateState();
  }
  if (inFlight_ > 0 || altTextBar_->isSaving()) cancel();
  if (inFlight_ > 0 || altTextBar_->isSaving())
    return;  // rows are still referenced by running jobs; cleared once they report back
  cleared_ = items_->items();
  batchStart_ = 0;
  items_->clear();
  details_->clear();
  updateState();
}

void CaptionPage::restoreSettings() {
  QSettings s;
  s.beginGroup(QStringLiteral("caption"));
  decodingForm_->restore(s);
  recent_.setPaths(s.value(QStringLiteral("recent")).toStringList());
  recentModels_.fromSettings(s.value(QStringLiteral("recent_models")).toStringList());
  settingsRestored_ = true;
  if (!modelLoaded() && !loading_) modelForm_->restoreFields(s);
}

void CaptionPage::saveSettings() const {
  QSettings s;
  s.beginGroup(QStringLiteral("caption"));
  decodingForm_->save(s);
  modelForm_->saveFields(s);
  s.setValue(QStringLiteral("recent"), recent_.paths());
  s.setValue(QStringLiteral("recent_models"), recentModels_.toSettings());
}

bool CaptionPage::isBusy() const { return loading_ || inFlight_ > 0 || altTextBar_->isSaving(); }

void CaptionPage::updateState() {
  if (loading_)
    modelForm_->showLoading();
  else if (!modelError_.isEmpty())
    modelForm_->showFailed(modelError_);
  else if (modelLoaded())
    modelForm_->showLoaded(modelName_, modelDetails_.loadMs, loadNote_);
  else
    modelForm_->showNoModel();

  hint_->setText(QString::fromUtf8(modelLoaded() ? kDropHint : kNoModelHint));
  const bool any = items_->rowCount() > 0;
  centre_->setCurrentIndex(any ? 1 : 0);
  cancelButton_->setEnabled(items_->pendingCount() > 0 || altTextBar_->isSaving());
  altTextBar_->updateState();
  copyButton_->setEnabled(any);
  exportButton_->setEnabled(any);
  const bool undo = !any && !cleared_.isEmpty();
  clearButton_->setEnabled(any || undo);
  clearButton_->setText(undo ? QStringLiteral("Undo clear") : QStringLiteral("Clear"));
  clearButton_->setTip(undo ? QStringLiteral("Bring back the images Clear removed") : QStringLiteral("Remove every image from the list"));
  int finished = 0;
  for (int row = batchStart_; row < items_->rowCount(); ++row) {
    const auto status = items_->item(row).status;
    finished += status != CaptionItem::Status::Queued && status != CaptionItem::Status::Running;
  }
  const int batch = std::max(0, int(items_->rowCount()) - batchStart_);
  batchBar_->setRange(0, std::max(batch, 1));
  batchBar_->setValue(finished);
  batchBar_->setVisible(items_->pendingCount() > 0 && batch > 1);
  progress_->setText(undo ? QStringLiteral("Removed %1 images: Undo clear brings them back.").arg(cleared_.size())
                          : captionProgressText(items_->items(), modelLoaded()));
}

void CaptionPage::showDetails() {
  const int row = table_->currentIndex().row();
  if (row < 0 || row >= items_->rowCount()) return details_->clear();
  details_->setHtml(captionDetailsHtml(items_->item(row), Theme::current()));
}

QJsonObject CaptionPage::describe() const {
  QJsonArray list;
  for (const auto& item : items_->items()) list.append(item.toJson());
  QJsonObject out{{"model_loaded", modelLoaded()}, {"items", list}};
  if (modelLoaded()) out.insert(QStringLiteral("model"), modelName_);
  else out.insert(QStringLiteral("message"), QStringLiteral("No model loaded: load a checkpoint, vocabulary and config"));
  if (!modelError_.isEmpty()) out.insert(QStringLiteral("model_error"), modelError_);
  if (!loadNote_.isEmpty()) out.insert(QStringLiteral("model_note"), loadNote_);
  if (!demoNotice_->isHidden()) out.insert(QStringLiteral("demo_notice"), demoNotice_->text());
  if (!decodingForm_->checkpointNote().isEmpty()) out.insert(QStringLiteral("decoding_note"), decodingForm_->checkpointNote());
  return out;
}

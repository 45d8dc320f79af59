#include "caption/captionpage.h"

#include <algorithm>

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QImage>
#include <QJsonArray>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMessageBox>
#include <QMimeData>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QSplitter>
#include <QStackedWidget>
#include <QTableView>
#include <QTextBrowser>
#include <QToolButton>
#include <QUrl>
#include <QVBoxLayout>

#include "shell/studiocontext.h"
#include "caption/captionmodel.h"
#include "expnet/model/demo_model.h"
#include "expnet/image/image_inputs.h"
#include "expnet/system/system.h"
#include "expnet/model/model_config.h"

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
    "<p>Or press <b>Open…</b> (Ctrl+O), or paste an image (Ctrl+Shift+V). Captions stream in word by word; "
    "select a row for its n-best list, timings and settings.</p>";

QPushButton* actionButton(const QString& text, const QKeySequence& keys, const QString& tip, QWidget* owner,
                          const QList<QKeySequence>& moreKeys = {}) {
  auto* button = new QPushButton(text);
  auto* action = new QAction(text, owner);
  action->setShortcuts(QList<QKeySequence>{keys} + moreKeys);
  action->setShortcutContext(Qt::WidgetWithChildrenShortcut);
  owner->addAction(action);
  QObject::connect(action, &QAction::triggered, button, &QPushButton::click);
  button->setToolTip(QStringLiteral("%1 (%2)").arg(tip, keys.toString(QKeySequence::NativeText)));
  return button;
}

QString htmlEscape(const QString& s) { return s.toHtmlEscaped(); }
}  // namespace

CaptionPage::CaptionPage(StudioContext* context, QWidget* parent)
    : StudioPage(parent), context_(context), items_(new CaptionModel(this)), worker_(new CaptionWorker) {
  setAcceptDrops(true);
  worker_->moveToThread(&thread_);
  connect(&thread_, &QThread::finished, worker_, &QObject::deleteLater);
  connect(worker_, &CaptionWorker::modelLoaded, this, &CaptionPage::onModelLoaded);
  connect(worker_, &CaptionWorker::modelFailed, this, &CaptionPage::onModelFailed);
  connect(worker_, &CaptionWorker::itemStarted, items_, &CaptionModel::setRunning);
  connect(worker_, &CaptionWorker::itemWords, items_, &CaptionModel::setPartial);
  connect(worker_, &CaptionWorker::itemDone, this, [this](int row, const QJsonObject& result) {
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

  auto* top = new QHBoxLayout;
  top->addWidget(buildModelForm(), 3);
  top->addWidget(buildDecodingForm(), 2);

  hint_ = new QLabel;
  hint_->setWordWrap(true);
  hint_->setAlignment(Qt::AlignCenter);
  hint_->setTextFormat(Qt::RichText);
  hint_->setMargin(40);
  hint_->setStyleSheet(QStringLiteral("QLabel { color: #34404c; border: 2px dashed #a8b4c0; border-radius: 8px; "
                                      "background: #f6f8fa; font-size: 11pt; }"));
  table_ = new QTableView;
  table_->setObjectName(QStringLiteral("captionTable"));
  table_->setModel(items_);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  table_->setIconSize(QSize(72, 72));
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

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(12, 12, 12, 8);
  layout->addLayout(top);
  layout->addWidget(buildActions());
  layout->addWidget(centre_, 1);

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
  updateState();
}

CaptionPage::~CaptionPage() {
  worker_->cancelAll();
  thread_.quit();
  thread_.wait();
}

QWidget* CaptionPage::buildModelForm() {
  auto* box = new QGroupBox(QStringLiteral("Model"));
  auto* form = new QFormLayout(box);
  modelConfig_ = new QComboBox;
  modelConfig_->setEditable(true);
  modelConfig_->addItem(QString());
  for (const auto& name : expnet::model_preset_names()) modelConfig_->addItem(QString::fromStdString(name));
  modelConfig_->lineEdit()->setPlaceholderText(QStringLiteral("preset (official, small, tiny, demo) or config .json"));
  modelConfig_->setToolTip(QStringLiteral("Preset name or model config JSON; empty = read from one of our checkpoints"));
  checkpoint_ = new QLineEdit;
  checkpoint_->setPlaceholderText(QStringLiteral("checkpoint .pth"));
  vocab_ = new QLineEdit;
  vocab_->setPlaceholderText(QStringLiteral("vocabulary .pickle or .json (empty = from our checkpoint)"));
  const auto withBrowse = [this](QWidget* field, const QString& title, const QString& filter) {
    auto* row = new QHBoxLayout;
    row->setContentsMargins(0, 0, 0, 0);
    row->addWidget(field, 1);
    auto* browse = new QToolButton;
    browse->setText(QStringLiteral("…"));
    browse->setToolTip(title);
    row->addWidget(browse);
    connect(browse, &QToolButton::clicked, this, [this, field, title, filter] {
      const QString file = QFileDialog::getOpenFileName(this, title, QString(), filter);
      if (file.isEmpty()) return;
      if (auto* line = qobject_cast<QLineEdit*>(field)) line->setText(file);
      if (auto* combo = qobject_cast<QComboBox*>(field)) combo->setCurrentText(file);
    });
    auto* holder = new QWidget;
    holder->setLayout(row);
    return holder;
  };
  form->addRow(QStringLiteral("Config:"), withBrowse(modelConfig_, QStringLiteral("Choose a model config JSON"),
                                                     QStringLiteral("Model config (*.json)")));
  form->addRow(QStringLiteral("Checkpoint:"), withBrowse(checkpoint_, QStringLiteral("Choose a checkpoint"),
                                                         QStringLiteral("Checkpoints (*.pth *.pt);;All files (*)")));
  form->addRow(QStringLiteral("Vocabulary:"), withBrowse(vocab_, QStringLiteral("Choose a vocabulary"),
                                                         QStringLiteral("Vocabulary (*.pickle *.pkl *.json)")));
  // Runtime: starts as the command line set it (--device, --threads); used by the next load.
  device_ = new QComboBox;
  device_->setObjectName(QStringLiteral("device"));
  device_->setEditable(true);
  device_->addItems({QStringLiteral("cpu"), QStringLiteral("cuda"), QStringLiteral("cuda:0")});
  device_->setCurrentText(context_->device());
  device_->setToolTip(QStringLiteral("Device for the next Load model: cpu, cuda or cuda:N"));
  threads_ = new QSpinBox;
  threads_->setObjectName(QStringLiteral("threads"));
  threads_->setRange(0, std::max(1, expnet::hardware_threads()));
  threads_->setSpecialValueText(QStringLiteral("all cores"));
  threads_->setValue(context_->threads());
  threads_->setToolTip(QStringLiteral("CPU threads for the model (all pages), applied at the next Load model"));
  auto* runtimeRow = new QHBoxLayout;
  runtimeRow->addWidget(device_, 1);
  runtimeRow->addWidget(new QLabel(QStringLiteral("Threads:")));
  runtimeRow->addWidget(threads_);
  form->addRow(QStringLiteral("Device:"), runtimeRow);
  loadButton_ = actionButton(QStringLiteral("Load model"), QKeySequence(Qt::CTRL | Qt::Key_L),
                             QStringLiteral("Load the checkpoint, vocabulary and config above"), this);
  busy_ = new QProgressBar;
  busy_->setRange(0, 0);  // indeterminate: loading has no measurable steps
  busy_->setMaximumWidth(140);
  busy_->setTextVisible(false);
  busy_->hide();
  modelStatus_ = new QLabel;
  modelStatus_->setWordWrap(true);
  modelStatus_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* demo = actionButton(QStringLiteral("Demo model"), QKeySequence(Qt::CTRL | Qt::Key_D),
                            QStringLiteral("Load the built-in demo model (trained on the shapes set by the shapes-demo "
                                           "recipe; README: how it was made)"),
                            this);
  demo->setObjectName(QStringLiteral("demoModel"));
  if (!expnet::demo_model_available()) {
    demo->setEnabled(false);
    demo->setToolTip(QStringLiteral("The demo model file was not found: reinstall, or set EXPNET_RESOURCES"));
  }
  connect(demo, &QPushButton::clicked, this, [this] {
    ModelRequest request;
    request.model = QStringLiteral("demo");
    modelConfig_->setCurrentText(request.model);
    checkpoint_->clear();
    vocab_->clear();
    loadModel(request);
  });
  auto* row = new QHBoxLayout;
  row->addWidget(loadButton_);
  row->addWidget(demo);
  row->addWidget(busy_);
  row->addWidget(modelStatus_, 1);
  form->addRow(row);
  connect(loadButton_, &QPushButton::clicked, this, [this] {
    ModelRequest request;
    request.model = modelConfig_->currentText().trimmed();
    request.checkpoint = checkpoint_->text().trimmed();
    request.vocab = vocab_->text().trimmed();
    loadModel(request);
  });
  return box;
}

QWidget* CaptionPage::buildDecodingForm() {
  auto* box = new QGroupBox(QStringLiteral("Decoding"));
  auto* form = new QFormLayout(box);
  search_ = new QComboBox;
  search_->setObjectName(QStringLiteral("search"));
  search_->addItems({QStringLiteral("Beam search"), QStringLiteral("Greedy"), QStringLiteral("Sampling")});
  search_->setToolTip(QStringLiteral("Beam search keeps the best partial captions at each step; greedy takes the "
                                     "most likely word; sampling draws each word from the model's distribution "
                                     "(temperature 1, seed 0: the same captions on every run)"));
  beam_ = new QSpinBox;
  beam_->setObjectName(QStringLiteral("beam"));
  beam_->setRange(1, 20);
  beam_->setValue(5);
  beam_->setToolTip(QStringLiteral("Beam width: partial captions kept at each step"));
  nbest_ = new QSpinBox;
  nbest_->setObjectName(QStringLiteral("nbest"));
  nbest_->setRange(1, 20);
  nbest_->setValue(3);
  nbest_->setToolTip(QStringLiteral("Captions returned per image (at most the beam width)"));
  maxLength_ = new QSpinBox;
  maxLength_->setObjectName(QStringLiteral("maxLength"));
  maxLength_->setRange(0, 1000);
  maxLength_->setSpecialValueText(QStringLiteral("model's"));
  maxLength_->setToolTip(QStringLiteral("Longest caption in tokens, counting the start token; 0 = the model's "
                                        "max_seq_len"));
  lengthPenalty_ = new QDoubleSpinBox;
  lengthPenalty_->setObjectName(QStringLiteral("lengthPenalty"));
  lengthPenalty_->setRange(0, 5);
  lengthPenalty_->setSingleStep(0.1);
  lengthPenalty_->setValue(1.0);
  lengthPenalty_->setToolTip(QStringLiteral("Ranking score = sum log p / length^alpha; 1 = the reference's ranking"));
  noRepeat_ = new QSpinBox;
  noRepeat_->setObjectName(QStringLiteral("noRepeat"));
  noRepeat_->setRange(0, 10);
  noRepeat_->setSpecialValueText(QStringLiteral("off"));
  noRepeat_->setToolTip(QStringLiteral("Forbid repeating any n-gram of this size; 0 = off"));
  connect(search_, &QComboBox::currentIndexChanged, this, [this](int index) {
    beam_->setEnabled(index == 0);
    nbest_->setEnabled(index != 1);  // beam: n-best; sampling: samples per image
  });
  auto* grid = new QHBoxLayout;
  auto* left = new QFormLayout;
  auto* right = new QFormLayout;
  left->addRow(QStringLiteral("Search:"), search_);
  left->addRow(QStringLiteral("Beam:"), beam_);
  left->addRow(QStringLiteral("N-best:"), nbest_);
  right->addRow(QStringLiteral("Max length:"), maxLength_);
  right->addRow(QStringLiteral("Length penalty:"), lengthPenalty_);
  right->addRow(QStringLiteral("No-repeat n-gram:"), noRepeat_);
  grid->addLayout(left);
  grid->addLayout(right);
  form->addRow(grid);
  return box;
}

QWidget* CaptionPage::buildActions() {
  openButton_ = actionButton(QStringLiteral("Open…"), QKeySequence::Open, QStringLiteral("Add images or a folder"), this);
  pasteButton_ = actionButton(QStringLiteral("Paste"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_V),
                              QStringLiteral("Caption the image or files on the clipboard"), this);
  cancelButton_ = actionButton(QStringLiteral("Cancel"), QKeySequence(Qt::Key_Escape),
                               QStringLiteral("Stop captioning: the current and queued images"), this);
  // Ctrl+C too: text fields keep their own Ctrl+C (they take it as a shortcut override).
  copyButton_ = actionButton(QStringLiteral("Copy caption"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_C),
                             QStringLiteral("Copy the selected images' captions (also Ctrl+C)"), this,
                             {QKeySequence(QKeySequence::Copy)});
  clearButton_ = actionButton(QStringLiteral("Clear"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Delete),
                              QStringLiteral("Remove every image from the list"), this);
  recentButton_ = new QToolButton;
  recentButton_->setObjectName(QStringLiteral("recent"));
  recentButton_->setText(QStringLiteral("Recent"));
  recentButton_->setToolTip(QStringLiteral("Add again an image or folder added lately"));
  recentButton_->setPopupMode(QToolButton::InstantPopup);
  recentButton_->setMinimumHeight(openButton_->sizeHint().height());
  auto* recentMenu = new QMenu(recentButton_);
  recentButton_->setMenu(recentMenu);
  connect(recentMenu, &QMenu::aboutToShow, this, [this, recentMenu] {
    recentMenu->clear();
    for (const QString& path : recent_)
      recentMenu->addAction(path, this, [this, path] { addPaths({path}); });
    if (recent_.isEmpty()) recentMenu->addAction(QStringLiteral("(nothing added yet)"))->setEnabled(false);
  });
  exportButton_ = new QToolButton;
  exportButton_->setText(QStringLiteral("Export…"));
  exportButton_->setToolTip(QStringLiteral("Save the captions as CSV, JSON Lines or COCO results JSON (Ctrl+E)"));
  exportButton_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
  exportButton_->setToolButtonStyle(Qt::ToolButtonTextOnly);
  exportButton_->setMinimumHeight(openButton_->sizeHint().height());
  connect(openButton_, &QPushButton::clicked, this, &CaptionPage::openImages);
  connect(pasteButton_, &QPushButton::clicked, this, &CaptionPage::pasteFromClipboard);
  connect(cancelButton_, &QPushButton::clicked, this, &CaptionPage::cancel);
  connect(copyButton_, &QPushButton::clicked, this, &CaptionPage::copyCaption);
  connect(clearButton_, &QPushButton::clicked, this, &CaptionPage::clearItems);
  connect(exportButton_, &QToolButton::clicked, this, &CaptionPage::exportCaptions);
  progress_ = new QLabel;
  auto* bar = new QWidget;
  auto* row = new QHBoxLayout(bar);
  row->setContentsMargins(0, 4, 0, 4);
  for (QWidget* w : std::initializer_list<QWidget*>{openButton_, recentButton_, pasteButton_, cancelButton_, copyButton_, exportButton_,
                                                     clearButton_})
    row->addWidget(w);
  row->addSpacing(12);
  row->addWidget(progress_, 1);
  return bar;
}

void CaptionPage::loadModel(const ModelRequest& request) {
  if (loading_) return;
  checkpoint_->setText(request.checkpoint);
  vocab_->setText(request.vocab);
  modelConfig_->setCurrentText(request.model);
  ModelRequest withDevice = request;
  withDevice.device = device_->currentText().trimmed();
  withDevice.threads = threads_->value();
  loading_ = true;
  context_->setModelLoading(true);
  modelError_.clear();
  updateState();
  // A functor queued to the worker's thread: the load runs there, not here.
  QMetaObject::invokeMethod(worker_, [worker = worker_, withDevice] { worker->loadModel(withDevice); },
                            Qt::QueuedConnection);
}

void CaptionPage::onModelLoaded(const QString& name, const QJsonObject& details) {
  loading_ = false;
  modelName_ = name;
  modelDetails_ = details;
  maxLength_->setMaximum(details.value(QStringLiteral("max_seq_len")).toInt());
  context_->setModelLoading(false);
  context_->setCaptioner(worker_->captioner());
  context_->setModelName(name);
  context_->setRuntime(details.value(QStringLiteral("device")).toString(), details.value(QStringLiteral("threads")).toInt());
  updateState();
  emit modelReady();
  submitQueued();
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
  for (const auto& path : paths) arguments.push_back(path.toStdString());
  QVector<CaptionItem> added;
  for (const auto& input : expnet::expand_image_inputs(arguments)) {
    CaptionItem item;
    item.display = QString::fromStdString(input.display);
    item.path = QString::fromStdString(input.path);
    if (!input.error.empty()) {
      item.status = CaptionItem::Status::Failed;
      item.error = QString::fromStdString(input.error);
    }
    added.push_back(item);
  }
  rememberRecent(paths);
  const int first = items_->append(added);
  table_->scrollToBottom();
  if (table_->currentIndex().row() < 0 && !added.isEmpty()) table_->selectRow(first);
  submitQueued();
}

void CaptionPage::rememberRecent(const QStringList& paths) {
  constexpr int kMaxRecent = 10;
  for (const QString& path : paths) {
    const QString absolute = QFileInfo(path).absoluteFilePath();
    recent_.removeAll(absolute);
    recent_.prepend(absolute);
  }
  while (recent_.size() > kMaxRecent) recent_.removeLast();
}

// Sends every queued row to the worker, with the settings of this moment.
void CaptionPage::submitQueued() {
  if (!modelLoaded() || loading_) return;
  QVector<CaptionJob> jobs;
  const QJsonObject settings = decodingSettings();
  for (int row = 0; row < items_->rowCount(); ++row) {
    const auto& item = items_->item(row);
    if (item.status != CaptionItem::Status::Queued || item.submitted) continue;
    items_->setSubmitted(row, settings);  // the row keeps the settings it was captioned with
    jobs.push_back({row, item.path});
  }
  if (jobs.isEmpty()) return;
  inFlight_ += int(jobs.size());
  QMetaObject::invokeMethod(
      worker_,
      [worker = worker_, jobs, options = decodingOptions(), epoch = worker_->cancelEpoch()] {
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
  // Rows still waiting for a model are cancelled here; the worker reports the others.
  for (int row = 0; row < items_->rowCount(); ++row) {
    const auto& item = items_->item(row);
    if (item.status == CaptionItem::Status::Queued && !item.submitted)
      items_->setCancelled(row);
  }
}

expnet::DecodingOptions CaptionPage::decodingOptions() const {
  expnet::DecodingOptions options;
  const int index = search_->currentIndex();
  const bool beam = index == 0;
  options.search = beam ? expnet::SearchKind::Beam : index == 2 ? expnet::SearchKind::Sampling : expnet::SearchKind::Greedy;
  options.beam_size = beam ? beam_->value() : 1;
  options.num_hypotheses = beam ? std::min(nbest_->value(), beam_->value()) : index == 2 ? nbest_->value() : 1;
  options.seed = 0;  // sampling: reproducible captions (the engine's default seed)
  options.max_length = maxLength_->value();
  options.length_penalty = lengthPenalty_->value();
  options.no_repeat_ngram_size = noRepeat_->value();
  return options;
}

QJsonObject CaptionPage::decodingSettings() const {
  const auto options = decodingOptions();
  const int modelMax = modelDetails_.value(QStringLiteral("max_seq_len")).toInt();
  const char* search = options.search == expnet::SearchKind::Beam       ? "beam"
                       : options.search == expnet::SearchKind::Sampling ? "sampling"
                                                                         : "greedy";
  return QJsonObject{{"search", search},
                     {"beam_size", options.beam_size},
                     {"n_best", options.num_hypotheses},
                     {"max_length", options.max_length > 0 ? options.max_length : modelMax},
                     {"length_penalty", options.length_penalty},
                     {"no_repeat_ngram_size", options.no_repeat_ngram_size}};
}

void CaptionPage::openImages() {
  const QStringList files = QFileDialog::getOpenFileNames(
      this, QStringLiteral("Open images"), QString(),
      QStringLiteral("Images (*.png *.jpg *.jpeg *.bmp *.gif *.webp *.tif *.tiff *.ppm *.pgm);;All files (*)"));
  if (!files.isEmpty()) addPaths(files);
}

void CaptionPage::pasteFromClipboard() {
  const QMimeData* mime = QApplication::clipboard()->mimeData();
  if (!mime) return;
  if (mime->hasUrls()) {
    QStringList paths;
    for (const QUrl& url : mime->urls())
      if (url.isLocalFile()) paths << url.toLocalFile();
    if (!paths.isEmpty()) return addPaths(paths);
  }
  if (mime->hasText()) {
    // Paths or file:// URLs copied as text (a terminal, a file manager's "copy path"),
    // one per line; lines that name no existing file are ignored.
    QStringList paths;
    for (const QString& line : mime->text().split(QLatin1Char('\n'), Qt::SkipEmptyParts)) {
      const QString text = line.trimmed();
      const QUrl url(text);
      const QString path = url.isLocalFile() ? url.toLocalFile() : text;
      if (!path.isEmpty() && QFileInfo::exists(path)) paths << path;
    }
    if (!paths.isEmpty()) return addPaths(paths);
  }
  if (mime->hasImage() && pasteDir_.isValid()) {
    // The engine reads files: a pasted image is saved once as PNG, which is lossless.
    const QImage image = qvariant_cast<QImage>(mime->imageData());
    const QString file = pasteDir_.filePath(QStringLiteral("pasted-%1.png").arg(++pasteCount_));
    if (!image.isNull() && image.save(file, "PNG")) addPaths({file});
  }
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
  if (inFlight_ > 0) cancel();
  if (inFlight_ > 0) return;  // rows are still referenced by running jobs; cleared once they report back
  items_->clear();
  details_->clear();
}

void CaptionPage::restoreSettings() {
  QSettings s;
  s.beginGroup(QStringLiteral("caption"));
  search_->setCurrentIndex(std::clamp(s.value(QStringLiteral("search"), 0).toInt(), 0, search_->count() - 1));
  beam_->setValue(s.value(QStringLiteral("beam"), beam_->value()).toInt());
  nbest_->setValue(s.value(QStringLiteral("nbest"), nbest_->value()).toInt());
  maxLength_->setValue(s.value(QStringLiteral("max_length"), 0).toInt());
  lengthPenalty_->setValue(s.value(QStringLiteral("length_penalty"), 1.0).toDouble());
  noRepeat_->setValue(s.value(QStringLiteral("no_repeat_ngram"), 0).toInt());
  recent_ = s.value(QStringLiteral("recent")).toStringList();
  if (!modelLoaded() && !loading_) {
    modelConfig_->setCurrentText(s.value(QStringLiteral("model")).toString());
    checkpoint_->setText(s.value(QStringLiteral("checkpoint")).toString());
    vocab_->setText(s.value(QStringLiteral("vocab")).toString());
  }
}

void CaptionPage::saveSettings() const {
  QSettings s;
  s.beginGroup(QStringLiteral("caption"));
  s.setValue(QStringLiteral("search"), search_->currentIndex());
  s.setValue(QStringLiteral("beam"), beam_->value());
  s.setValue(QStringLiteral("nbest"), nbest_->value());
  s.setValue(QStringLiteral("max_length"), maxLength_->value());
  s.setValue(QStringLiteral("length_penalty"), lengthPenalty_->value());
  s.setValue(QStringLiteral("no_repeat_ngram"), noRepeat_->value());
  s.setValue(QStringLiteral("model"), modelConfig_->currentText());
  s.setValue(QStringLiteral("checkpoint"), checkpoint_->text());
  s.setValue(QStringLiteral("vocab"), vocab_->text());
  s.setValue(QStringLiteral("recent"), recent_);
}

void CaptionPage::dragEnterEvent(QDragEnterEvent* event) {
  if (event->mimeData()->hasUrls() || event->mimeData()->hasImage()) event->acceptProposedAction();
}

void CaptionPage::dropEvent(QDropEvent* event) {
  QStringList paths;
  for (const QUrl& url : event->mimeData()->urls())
    if (url.isLocalFile()) paths << url.toLocalFile();
  if (paths.isEmpty()) return;
  addPaths(paths);
  event->acceptProposedAction();
}

bool CaptionPage::isBusy() const { return loading_ || inFlight_ > 0; }

void CaptionPage::updateState() {
  busy_->setVisible(loading_);
  loadButton_->setEnabled(!loading_);
  if (loading_)
    modelStatus_->setText(QStringLiteral("Loading…"));
  else if (!modelError_.isEmpty())
    modelStatus_->setText(QStringLiteral("<span style='color:#b02020'>%1</span>").arg(htmlEscape(modelError_)));
  else if (modelLoaded())
    modelStatus_->setText(QStringLiteral("Loaded <b>%1</b> in %2 ms")
                              .arg(htmlEscape(modelName_))
                              .arg(modelDetails_.value(QStringLiteral("load_ms")).toDouble(), 0, 'f', 0));
  else
    modelStatus_->setText(QStringLiteral("No model loaded"));

  hint_->setText(QString::fromUtf8(modelLoaded() ? kDropHint : kNoModelHint));
  centre_->setCurrentIndex(items_->rowCount() > 0 ? 1 : 0);
  cancelButton_->setEnabled(items_->pendingCount() > 0);
  const bool any = items_->rowCount() > 0;
  copyButton_->setEnabled(any);
  exportButton_->setEnabled(any);
  clearButton_->setEnabled(any);
  int done = 0, failed = 0;
  for (const auto& item : items_->items()) {
    done += item.status == CaptionItem::Status::Done;
    failed += item.status == CaptionItem::Status::Failed;
  }
  const int pending = items_->pendingCount();
  QString text = QStringLiteral("%1 captioned").arg(done);
  if (failed) text += QStringLiteral(", %1 failed").arg(failed);
  if (pending) text += modelLoaded() ? QStringLiteral(", %1 to go").arg(pending)
                                     : QStringLiteral(", %1 waiting for a model").arg(pending);
  progress_->setText(any ? text : QString());
}

void CaptionPage::showDetails() {
  const int row = table_->currentIndex().row();
  if (row < 0 || row >= items_->rowCount()) return details_->clear();
  const auto& item = items_->item(row);
  QString html = QStringLiteral("<p><b>%1</b></p>").arg(htmlEscape(item.display));
  if (item.status == CaptionItem::Status::Failed) {
    html += QStringLiteral("<p style='color:#b02020'>%1</p>").arg(htmlEscape(item.error));
    return details_->setHtml(html);
  }
  if (!item.nbest.isEmpty()) {
    html += QStringLiteral("<table cellspacing=0 cellpadding=3><tr><th align=left>#</th><th align=left>Caption</th>"
                           "<th align=right>Score</th><th align=right>log p</th></tr>");
    int rank = 0;
    for (const auto& value : item.nbest) {
      const QJsonObject h = value.toObject();
      html += QStringLiteral("<tr><td>%1</td><td>%2</td><td align=right>%3</td><td align=right>%4</td></tr>")
                  .arg(++rank)
                  .arg(htmlEscape(h.value(QStringLiteral("text")).toString()))
                  .arg(h.value(QStringLiteral("score")).toDouble(), 0, 'f', 3)
                  .arg(h.value(QStringLiteral("sum_logprob")).toDouble(), 0, 'f', 3);
    }
    html += QStringLiteral("</table>");
  } else {
    html += QStringLiteral("<p>%1</p>").arg(htmlEscape(item.caption().isEmpty() ? item.statusText() : item.caption()));
  }
  if (!item.ms.isEmpty())
    html += QStringLiteral("<p><b>Time</b>: preprocess %1 ms, encode %2 ms, decode %3 ms</p>")
                .arg(item.ms.value(QStringLiteral("preprocess")).toDouble(), 0, 'f', 1)
                .arg(item.ms.value(QStringLiteral("encode")).toDouble(), 0, 'f', 1)
                .arg(item.ms.value(QStringLiteral("decode")).toDouble(), 0, 'f', 1);
  if (!item.settings.isEmpty()) {
    const auto& s = item.settings;
    html += QStringLiteral("<p><b>Settings</b>: %1, beam %2, n-best %3, max length %4, length penalty %5, "
                           "no-repeat n-gram %6</p>")
                .arg(s.value(QStringLiteral("search")).toString())
                .arg(s.value(QStringLiteral("beam_size")).toInt())
                .arg(s.value(QStringLiteral("n_best")).toInt())
                .arg(s.value(QStringLiteral("max_length")).toInt())
                .arg(s.value(QStringLiteral("length_penalty")).toDouble())
                .arg(s.value(QStringLiteral("no_repeat_ngram_size")).toInt() == 0
                         ? QStringLiteral("off")
                         : QString::number(s.value(QStringLiteral("no_repeat_ngram_size")).toInt()));
  }
  details_->setHtml(html);
}

QJsonObject CaptionPage::describe() const {
  QJsonArray list;
  for (const auto& item : items_->items()) {
    list.append(item.toJson());
  }
  QJsonObject out{{"model_loaded", modelLoaded()}, {"items", list}};
  if (modelLoaded()) out.insert(QStringLiteral("model"), modelName_);
  else out.insert(QStringLiteral("message"), QStringLiteral("No model loaded: load a checkpoint, vocabulary and config"));
  if (!modelError_.isEmpty()) out.insert(QStringLiteral("model_error"), modelError_);
  return out;
}

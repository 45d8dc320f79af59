#include "datasets/datasetspage.h"

#include <QComboBox>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QMimeData>
#include <QUrl>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QJsonArray>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSlider>
#include <QSplitter>
#include <QStackedWidget>
#include <QTabWidget>
#include <QToolButton>
#include <QVBoxLayout>

#include <utility>

#include "common/actionbutton.h"
#include "common/formfields.h"
#include "common/hintlabel.h"
#include "datasets/analysisworker.h"
#include "datasets/datasetstats.h"
#include "datasets/evaluationpanel.h"
#include "datasets/imagedetail.h"
#include "datasets/imagegridmodel.h"
#include "datasets/thumbnailgrid.h"
#include "datasets/thumbnailloader.h"
#include "expnet/metrics/sample_evaluation.h"
#include "shell/studiocontext.h"

namespace {
// In expnet::IndexSort's order: the combo's index is the enum's value.
const QStringList kSorts = {QStringLiteral("id"), QStringLiteral("caption length"),
                            QStringLiteral("score: worst first"), QStringLiteral("score: best first"),
                            QStringLiteral("caption length, longest first")};
}  // namespace

DatasetsPage::DatasetsPage(StudioContext* context, QWidget* parent)
    : StudioPage(parent),
      context_(context),
      indexWorker_(new IndexWorker),
      thumbnails_(new ThumbnailLoader),
      analysis_(new AnalysisWorker),
      model_(new ImageGridModel(this)) {
  qRegisterMetaType<GridItem>();
  qRegisterMetaType<OpenedIndex>();
  qRegisterMetaType<QVector<GridItem>>();
  indexWorker_->moveToThread(&indexThread_);
  thumbnails_->moveToThread(&thumbThread_);
  analysis_->moveToThread(&analysisThread_);
  connect(&indexThread_, &QThread::finished, indexWorker_, &QObject::deleteLater);
  connect(&thumbThread_, &QThread::finished, thumbnails_, &QObject::deleteLater);
  connect(&analysisThread_, &QThread::finished, analysis_, &QObject::deleteLater);

  setAcceptDrops(true);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(buildTopBar());
  tabs_ = new QTabWidget;
  tabs_->setObjectName(QStringLiteral("datasetTabs"));
  tabs_->addTab(buildBrowse(), QStringLiteral("Browse"));
  stats_ = new DatasetStats;
  tabs_->addTab(stats_, QStringLiteral("Statistics"));
  layout->addWidget(tabs_, 1);

  wireIndexing();
  wireStatistics();
  wireEvaluation();
  wireEvaluationPanel();
  wireDetail();
  searchDebounce_.setSingleShot(true);
  searchDebounce_.setInterval(250);
  connect(&searchDebounce_, &QTimer::timeout, this, [this] { setSearch(searchBox_->text()); });
  indexThread_.start();
  thumbThread_.start();
  analysisThread_.start();
  updateState();
}

DatasetsPage::~DatasetsPage() {
  indexWorker_->cancelBuild();
  analysis_->cancelEvaluation();
  thumbnails_->setIndex(QString());  // drops the queued thumbnails: the loader's thread ends at once
  for (QThread* thread : {&indexThread_, &thumbThread_, &analysisThread_}) {
    thread->quit();
    thread->wait();
  }
}

// The index worker opens the dataset and pages the grid; the loader brings its thumbnails.
void DatasetsPage::wireIndexing() {
  connect(indexWorker_, &IndexWorker::buildProgress, this, [this](qint64 done, qint64 total) {
    dataset_.indexDone = done;
    dataset_.indexTotal = total;
    updateState();
  });
  connect(indexWorker_, &IndexWorker::opened, this, &DatasetsPage::onOpened);
  connect(indexWorker_, &IndexWorker::openFailed, this, [this](const QString&, const QString& error) {
    dataset_.opening = false;
    dataset_.error = error;
    updateState();
  });
  connect(indexWorker_, &IndexWorker::openCancelled, this, [this](const QString& dataset) {
    dataset_.opening = false;
    dataset_.error = QStringLiteral("Indexing %1 was cancelled; open it again to index it").arg(dataset);
    updateState();
  });
  connect(indexWorker_, &IndexWorker::pageReady, this, &DatasetsPage::onPage);
  connect(indexWorker_, &IndexWorker::fetchFailed, this, [this](int generation, const QString& error) {
    if (generation != generation_) return;
    pending_.firstPage = false;
    dataset_.error = error;
    updateState();
  });
  connect(indexWorker_, &IndexWorker::exported, this, [this](const QString& file, qint64 rows, const QString& error) {
    evaluation_->showEnded(error.isEmpty() ? QStringLiteral("Exported %1 images to %2").arg(rows).arg(file) : error,
                           !error.isEmpty());
  });
  connect(model_, &ImageGridModel::pageWanted, this, [this](int generation, int page) {
    QMetaObject::invokeMethod(indexWorker_, [w = indexWorker_, generation, q = query(), page] {
      w->fetch(generation, q, page, ImageGridModel::kPageSize, false);
    }, Qt::QueuedConnection);
  });
  connect(model_, &ImageGridModel::thumbnailWanted, this, [this](qint64 cocoid) {
    if (const qint64 dropped = thumbnails_->request(cocoid)) model_->forgetRequest(dropped);
  });
  connect(thumbnails_, &ThumbnailLoader::ready, model_, &ImageGridModel::setThumbnail);
  connect(thumbnails_, &ThumbnailLoader::failed, model_, &ImageGridModel::setThumbnailError);
}

void DatasetsPage::wireStatistics() {
  connect(analysis_, &AnalysisWorker::statsReady, this, [this](const QString& dataset, const expnet::DatasetStats& stats) {
    if (dataset != dataset_.path) return;
    pending_.stats = false;
    stats_->setStats(stats);
    updateState();
  });
  connect(analysis_, &AnalysisWorker::statsFailed, this, [this](const QString& dataset, const QString& error) {
    if (dataset != dataset_.path) return;
    pending_.stats = false;
    stats_->showMessage(error);
    updateState();
  });
}

// An evaluation's progress and end, and the stored evaluations the panel offers.
void DatasetsPage::wireEvaluation() {
  connect(analysis_, &AnalysisWorker::evaluationProgress, this, [this](int done, int total) {
    evaluation_->showRunning(done, total);
  });
  connect(analysis_, &AnalysisWorker::evaluated, this, [this](const expnet::SampleEvaluation& e) {
    const auto cider = e.corpus.find("CIDEr");
    evaluation_->showEnded(QStringLiteral("Evaluation #%1: %2 images (%3 resumed), CIDEr-D %4")
                               .arg(e.id)
                               .arg(e.per_image.size())
                               .arg(e.resumed)
                               .arg(cider == e.corpus.end() ? 0.0 : cider->second, 0, 'f', 3),
                           false);
    showEvaluated(e.id);
  });
  connect(evaluation_, &EvaluationPanel::hostEvaluated, this, &DatasetsPage::showEvaluated);
  connect(analysis_, &AnalysisWorker::evaluationFailed, this, [this](const QString& error) {
    evaluation_->showEnded(error, true);
    updateState();
  });
  connect(analysis_, &AnalysisWorker::evaluationCancelled, this, [this](int done) {
    evaluation_->showEnded(QStringLiteral("Cancelled after %1 images; Evaluate again resumes from there").arg(done), false);
    requestEvaluations();
    updateState();
  });
  connect(analysis_, &AnalysisWorker::evaluationsListed, this,
          [this](const QString& db, const std::vector<expnet::SampleEvaluation>& list) {
    pending_.lists = std::max(0, pending_.lists - 1);
    if (db == evaluationDb()) evaluation_->setEvaluations(list, true);
    updateState();
  });
  connect(analysis_, &AnalysisWorker::evaluationLoaded, this, [this](qint64 id, const std::vector<expnet::SampleScore>& samples) {
    if (id != evaluation_->comparedId()) return;
    compared_.clear();
    for (const auto& sample : samples) {
      GridItem item;
      item.cocoid = sample.cocoid;
      item.evaluated = true;
      item.caption = QString::fromStdString(sample.caption);
      item.ciderD = sample.cider_d;
      item.bleu4 = sample.bleu4;
      compared_.insert(item.cocoid, item);
    }
    showSelected();
  });
}

// A finished evaluation shown worst first: where the model is wrong, the worst image selected.
void DatasetsPage::showEvaluated(qint64 id) {
  // Connected before asking, so the answer cannot pass unheard.
  connect(analysis_, &AnalysisWorker::evaluationsListed, this, [this, id] {
    evaluation_->selectEvaluation(id);
    sortBox_->setCurrentIndex(2);
    detail_->clear();
    setSort(expnet::IndexSort::score_ascending);
  }, Qt::SingleShotConnection);
  requestEvaluations();
  updateState();
}

// What the panel asks for: an evaluation run or cancelled, one shown or compared, an export.
void DatasetsPage::wireEvaluationPanel() {
  connect(evaluation_, &EvaluationPanel::evaluateRequested, this, &DatasetsPage::startEvaluation);
  connect(evaluation_, &EvaluationPanel::cancelRequested, this, [this] { analysis_->cancelEvaluation(); });
  connect(evaluation_, &EvaluationPanel::evaluationChosen, this, [this](qint64 id) {
    const bool byScore = sort_ == expnet::IndexSort::score_ascending || sort_ == expnet::IndexSort::score_descending;
    setSort(id == 0 && byScore ? expnet::IndexSort::id : sort_);  // no scores to sort by without an evaluation
  });
  connect(evaluation_, &EvaluationPanel::comparedChosen, this, [this](qint64 id) {
    compared_.clear();
    if (id != 0)
      QMetaObject::invokeMethod(analysis_, [a = analysis_, db = evaluationDb(), id] { a->loadEvaluation(db, id); }, Qt::QueuedConnection);
    showSelected();
  });
  connect(evaluation_, &EvaluationPanel::exportRequested, this, [this] {
    const QString file = QFileDialog::getSaveFileName(this, QStringLiteral("Export evaluation"),
                                                      QStringLiteral("evaluation.csv"), QStringLiteral("CSV (*.csv)"));
    if (!file.isEmpty()) exportEvaluationCsv(file);
  });
}

// The image shown in detail: its attention, and its caption by the Caption page's model.
void DatasetsPage::wireDetail() {
  connect(analysis_, &AnalysisWorker::imageCaptioned, this, [this](const QString& file, const QString& caption, const QString& error) {
    if (file == detail_->file()) detail_->showModelCaption(error.isEmpty() ? caption : error);
  });
  connect(detail_, &ImageDetail::attentionRequested, this, &DatasetsPage::attentionRequested);
  connect(detail_, &ImageDetail::captionRequested, this, [this](const QString& file) {
    detail_->showModelCaption(QStringLiteral("captioning…"));
    QMetaObject::invokeMethod(analysis_, [a = analysis_, file, c = context_->captioner()] { a->captionImage(file, c); },
                              Qt::QueuedConnection);
  });
  connect(context_, &StudioContext::modelChanged, this, &DatasetsPage::updateCaptionButton);
}

QWidget* DatasetsPage::buildTopBar() {
  auto* bar = new QWidget;
  auto* layout = new QVBoxLayout(bar);
  layout->setContentsMargins(0, 0, 0, 0);
  auto* row = new QHBoxLayout;
  path_ = new QLineEdit;
  path_->setObjectName(QStringLiteral("datasetPath"));
  path_->setPlaceholderText(QStringLiteral("dataset file (Karpathy/COCO JSON, CSV, JSONL) or folder; Enter opens it"));
  auto* open = new ActionButton(QStringLiteral("Open…"), QKeySequence::Open, QStringLiteral("Open a dataset file"), this);
  auto* folder = new QToolButton;
  folder->setText(QStringLiteral("Folder…"));
  folder->setToolTip(QStringLiteral("Open a dataset folder (a shapes set, or a folder with dataset_coco.json)"));
  splitBox_ = splitField(QStringLiteral("splitFilter"), QStringLiteral("all"),
                         QStringLiteral("Show the images of one split (all: every image)"));
  searchBox_ = new QLineEdit;
  searchBox_->setObjectName(QStringLiteral("captionSearch"));
  searchBox_->setPlaceholderText(QStringLiteral("search captions: every word must appear"));
  searchBox_->setClearButtonEnabled(true);
  sortBox_ = new QComboBox;
  sortBox_->setObjectName(QStringLiteral("gridSort"));
  sortBox_->addItems(kSorts);
  sortBox_->setToolTip(QStringLiteral("Order of the grid; by score needs an evaluation shown (Per-sample evaluation)"));
  zoom_ = new QSlider(Qt::Horizontal);
  zoom_->setObjectName(QStringLiteral("thumbnailZoom"));
  zoom_->setRange(64, ThumbnailLoader::kSize);
  zoom_->setValue(112);
  zoom_->setFixedWidth(110);
  zoom_->setToolTip(QStringLiteral("Thumbnail size"));
  count_ = new QLabel;
  count_->setObjectName(QStringLiteral("matchCount"));
  row->addWidget(path_, 2);
  for (QWidget* w : std::initializer_list<QWidget*>{open, folder}) row->addWidget(w);
  row->addSpacing(8);
  row->addWidget(splitBox_);
  row->addWidget(searchBox_, 2);
  for (QWidget* w : std::initializer_list<QWidget*>{sortBox_, zoom_, count_}) row->addWidget(w);
  layout->addLayout(row);
  auto* progress = new QHBoxLayout;
  indexProgress_ = new QProgressBar;
  indexProgress_->setObjectName(QStringLiteral("indexProgress"));
  cancelIndex_ = new QPushButton(QStringLiteral("Cancel"));
  cancelIndex_->setObjectName(QStringLiteral("cancelIndex"));
  cancelIndex_->setToolTip(QStringLiteral("Stop building the index (the dataset is not opened)"));
  status_ = new HintLabel;
  status_->setObjectName(QStringLiteral("datasetStatus"));
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  progress->addWidget(indexProgress_, 1);
  progress->addWidget(cancelIndex_);
  progress->addWidget(status_, 3);
  layout->addLayout(progress);

  connect(path_, &QLineEdit::returnPressed, this, [this] { openDataset(path_->text().trimmed()); });
  connect(open, &QPushButton::clicked, this, &DatasetsPage::openDatasetDialog);
  connect(folder, &QToolButton::clicked, this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(this, QStringLiteral("Open a dataset folder"), dataset_.path);
    if (!dir.isEmpty()) openDataset(dir);
  });
  connect(cancelIndex_, &QPushButton::clicked, this, &DatasetsPage::cancelIndexing);
  connect(splitBox_, &QComboBox::activated, this, [this] { setSplit(splitBox_->currentText()); });
  connect(searchBox_, &QLineEdit::textEdited, this, [this] { searchDebounce_.start(); });
  connect(searchBox_, &QLineEdit::returnPressed, this, [this] { setSearch(searchBox_->text()); });
  connect(sortBox_, &QComboBox::activated, this, [this](int index) { setSort(static_cast<expnet::IndexSort>(index)); });
  connect(zoom_, &QSlider::valueChanged, this, [this](int size) {
    view_->setThumbnailSize(size);
  });
  return bar;
}

QWidget* DatasetsPage::buildBrowse() {
  auto* split = new QSplitter(Qt::Horizontal);
  centre_ = new QStackedWidget;
  hint_ = new HintLabel(QStringLiteral("Open a captioning dataset (a file, or a folder of photos with alt text): File > Open "
                                       "dataset…, Open… (Ctrl+O) above, a drop here, or expnet-studio --page datasets --dataset "
                                       "FILE. Its index (SQLite, full-text search) is built once in the background and kept in "
                                       "the cache; the grid then pages through any number of images."),
                        HintLabel::Kind::Panel);
  centre_->addWidget(hint_);
  view_ = new ThumbnailGrid(model_);
  auto* side = new QWidget;
  auto* sideLayout = new QVBoxLayout(side);
  sideLayout->setContentsMargins(0, 0, 0, 0);
  detail_ = new ImageDetail;
  evaluation_ = new EvaluationPanel;
  sideLayout->addWidget(detail_, 1);
  sideLayout->addWidget(evaluation_);
  split->addWidget(view_);
  split->addWidget(side);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  centre_->addWidget(split);
  connect(view_->selectionModel(), &QItemSelectionModel::currentChanged, this, &DatasetsPage::showSelected);
  connect(model_, &QAbstractItemModel::dataChanged, this, [this](const QModelIndex& first, const QModelIndex& last) {
    const QModelIndex current = view_->currentIndex();
    if (current.isValid() && current.row() >= first.row() && current.row() <= last.row() && !detail_->hasItem())
      showSelected();
  });
  return centre_;
}

void DatasetsPage::dragEnterEvent(QDragEnterEvent* event) {
  const QList<QUrl> urls = event->mimeData()->urls();
  if (urls.size() == 1 && urls.front().isLocalFile()) event->acceptProposedAction();
}

void DatasetsPage::dropEvent(QDropEvent* event) {
  openDataset(event->mimeData()->urls().front().toLocalFile());
  event->acceptProposedAction();
}

void DatasetsPage::restoreSettings() {
  QSettings s;
  s.beginGroup(QStringLiteral("datasets"));
  zoom_->setValue(s.value(QStringLiteral("zoom"), zoom_->value()).toInt());
  const QString split = s.value(QStringLiteral("split"), QStringLiteral("all")).toString();
  split_ = split == QStringLiteral("all") ? QString() : split;
  splitBox_->setCurrentText(split);
  const int sort = s.value(QStringLiteral("sort"), 0).toInt();
  if (sort >= 0 && sort < kSorts.size()) sort_ = static_cast<expnet::IndexSort>(sort);
  sortBox_->setCurrentIndex(static_cast<int>(sort_));
  evaluation_->showOnceListed(s.value(QStringLiteral("evaluation"), 0).toLongLong());
  remembered_ = dataset_.path.isEmpty() ? s.value(QStringLiteral("dataset")).toString() : QString();
  path_->setText(dataset_.path.isEmpty() ? remembered_ : dataset_.path);
  if (isVisible() && !remembered_.isEmpty() && QFileInfo::exists(remembered_))
    openDataset(std::exchange(remembered_, QString()));
}

void DatasetsPage::saveSettings() const {
  QSettings s;
  s.beginGroup(QStringLiteral("datasets"));
  s.setValue(QStringLiteral("zoom"), zoom_->value());
  s.setValue(QStringLiteral("split"), split_.isEmpty() ? QStringLiteral("all") : split_);
  s.setValue(QStringLiteral("sort"), static_cast<int>(sort_));
  s.setValue(QStringLiteral("evaluation"), evaluation_->evaluationId());
  s.setValue(QStringLiteral("dataset"), dataset_.error.isEmpty() ? dataset_.path : QString());
}

void DatasetsPage::showEvent(QShowEvent* event) {
  StudioPage::showEvent(event);
  // The index is cached: reopening costs a query, the statistics a background read.
  if (!remembered_.isEmpty() && QFileInfo::exists(remembered_)) openDataset(std::exchange(remembered_, QString()));
}

void DatasetsPage::openDatasetDialog() {
  const QString file = QFileDialog::getOpenFileName(this, QStringLiteral("Open a dataset"), dataset_.path,
                                                    QStringLiteral("Datasets (*.json *.jsonl *.csv);;All files (*)"));
  if (!file.isEmpty()) openDataset(file);
}

void DatasetsPage::openDataset(const QString& path) {
  if (path.isEmpty() || dataset_.opening) return;
  remembered_.clear();  // what the user opens now wins over the last session's
  dataset_.path = QFileInfo(path).absoluteFilePath();
  path_->setText(dataset_.path);
  dataset_.opening = true;
  dataset_.error.clear();
  dataset_.indexPath.clear();
  dataset_.indexDone = dataset_.indexTotal = 0;
  thumbnails_->setIndex(QString());
  model_->forgetThumbnails();
  model_->reset(++generation_, 0);
  detail_->clear();
  compared_.clear();
  evaluation_->setEvaluations({});
  indexWorker_->armBuild();
  QMetaObject::invokeMethod(indexWorker_, [w = indexWorker_, d = dataset_.path] { w->open(d); }, Qt::QueuedConnection);
  updateState();
}

void DatasetsPage::cancelIndexing() {
  if (dataset_.opening) indexWorker_->cancelBuild();
}

void DatasetsPage::onOpened(const OpenedIndex& opened) {
  if (opened.dataset != dataset_.path) return;
  dataset_.opening = false;
  dataset_.indexPath = opened.indexPath;
  dataset_.built = opened.built;
  dataset_.openSeconds = opened.seconds;
  dataset_.splitCounts = QJsonArray();
  for (const auto& [name, images] : opened.splits)
    dataset_.splitCounts.append(QJsonObject{{"name", QString::fromStdString(name)}, {"images", qint64(images)}});
  dataset_.format = opened.format;
  thumbnails_->setIndex(opened.indexPath);
  pending_.stats = true;
  stats_->showMessage(QStringLiteral("Computing the statistics…"));
  QMetaObject::invokeMethod(analysis_, [a = analysis_, d = dataset_.path] { a->computeStats(d, 5); }, Qt::QueuedConnection);
  requestEvaluations();
  runQuery();
  emit datasetOpened();
}

void DatasetsPage::requestEvaluations() {
  ++pending_.lists;
  QMetaObject::invokeMethod(analysis_, [a = analysis_, db = evaluationDb()] { a->listEvaluations(db); }, Qt::QueuedConnection);
}

QString DatasetsPage::evaluationDb() const {
  return dataset_.path.isEmpty() ? QString() : QString::fromStdString(expnet::default_evaluation_db(dataset_.path.toStdString()));
}

GridQuery DatasetsPage::query() const {
  GridQuery q;
  q.split = split_;
  q.text = search_;
  q.sort = sort_;
  q.evaluationId = evaluation_->evaluationId();
  if (q.evaluationId != 0) q.evaluationDb = evaluationDb();
  if (q.evaluationId == 0 && (sort_ == expnet::IndexSort::score_ascending || sort_ == expnet::IndexSort::score_descending))
    q.sort = expnet::IndexSort::id;  // no scores to sort by
  return q;
}

// A new filter or order: the first page brings the count, then the grid is reset to it.
void DatasetsPage::runQuery() {
  if (dataset_.indexPath.isEmpty()) return updateState();
  pending_.firstPage = true;
  const int generation = ++generation_;
  QMetaObject::invokeMethod(indexWorker_, [w = indexWorker_, generation, q = query()] {
    w->fetch(generation, q, 0, ImageGridModel::kPageSize, true);
  }, Qt::QueuedConnection);
  updateState();
}

void DatasetsPage::onPage(int generation, int page, const QVector<GridItem>& items, qint64 total) {
  if (generation != generation_) return;
  if (page == 0 && total >= 0) {
    pending_.firstPage = false;
    const qint64 selected = detail_->cocoid();
    const bool hadItem = detail_->hasItem();
    model_->reset(generation, total);
    model_->addPage(generation, page, items);
    // The image shown stays selected when it is on the first page, else the first image is.
    int position = 0;
    for (int i = 0; hadItem && i < items.size(); ++i)
      if (items[i].cocoid == selected) position = i;
    if (total > 0) view_->setCurrentPosition(position);
    showSelected();
    return updateState();
  }
  model_->addPage(generation, page, items);
  updateState();
}

void DatasetsPage::setSplit(const QString& split) {
  split_ = split == QStringLiteral("all") ? QString() : split;
  splitBox_->setCurrentText(split_.isEmpty() ? QStringLiteral("all") : split_);
  runQuery();
}

void DatasetsPage::setSearch(const QString& words) {
  search_ = words.trimmed();
  if (searchBox_->text() != words) searchBox_->setText(words);
  runQuery();
}

void DatasetsPage::setSort(expnet::IndexSort sort) {
  sort_ = sort;
  sortBox_->setCurrentIndex(static_cast<int>(sort));
  runQuery();
}

void DatasetsPage::showSelected() {
  const GridItem* item = model_->item(view_->currentPosition());
  if (!item) return;
  detail_->showItem(*item, search_, compared_.contains(item->cocoid) ? &compared_[item->cocoid] : nullptr);
  updateCaptionButton();
}

void DatasetsPage::updateCaptionButton() {
  detail_->setCaptionEnabled(context_->captioner() != nullptr,
                             context_->captioner() ? QStringLiteral("Caption this image with %1").arg(context_->modelName())
                                                   : QStringLiteral("Load a model on the Caption page first"));
}

void DatasetsPage::evaluate(const QString& model, const QString& split, int limit) {
  evaluation_->setJob(model, split, limit);
  pending_.evaluation = dataset_.indexPath.isEmpty();  // then it starts once the dataset is open
  if (!pending_.evaluation) startEvaluation();
}

void DatasetsPage::startEvaluation() {
  pending_.evaluation = false;
  if (dataset_.path.isEmpty() || evaluation_->running()) return;
  EvaluationJob job = evaluation_->job();
  job.dataset = dataset_.path;
  job.db = evaluationDb();
  job.device = context_->device();
  if (evaluation_->runOnHost(job)) return updateState();
  analysis_->armEvaluation();
  evaluation_->showRunning(0, 0);
  QMetaObject::invokeMethod(analysis_, [a = analysis_, job] { a->evaluate(job); }, Qt::QueuedConnection);
  updateState();
}

void DatasetsPage::exportEvaluationCsv(const QString& file) {
  QMetaObject::invokeMethod(indexWorker_, [w = indexWorker_, q = query(), file] { w->exportCsv(q, file); },
                            Qt::QueuedConnection);
}

void DatasetsPage::updateState() {
  centre_->setCurrentIndex(dataset_.indexPath.isEmpty() ? 0 : 1);
  indexProgress_->setVisible(dataset_.opening);
  cancelIndex_->setVisible(dataset_.opening);
  indexProgress_->setRange(0, dataset_.indexTotal > 0 ? 100 : 0);  // busy until the total is known
  if (dataset_.indexTotal > 0) indexProgress_->setValue(int(100 * dataset_.indexDone / dataset_.indexTotal));
  QString status;
  if (dataset_.opening)
    status = dataset_.indexTotal > 0
                 ? QStringLiteral("Indexing %1: %2 of %3 images").arg(dataset_.path).arg(dataset_.indexDone).arg(dataset_.indexTotal)
                 : QStringLiteral("Opening %1…").arg(dataset_.path);
  else if (!dataset_.error.isEmpty())
    status = dataset_.error;
  else if (!dataset_.indexPath.isEmpty())
    status = QStringLiteral("%1 (%2)%3").arg(
        QFileInfo(dataset_.path).fileName(), dataset_.format,
        dataset_.built ? QStringLiteral(": indexed in %1 s").arg(dataset_.openSeconds, 0, 'f', 1) : QString());
  status_->setText(status);
  status_->setKind(!dataset_.error.isEmpty() && !dataset_.opening ? HintLabel::Kind::Error : HintLabel::Kind::Status);
  count_->setText(dataset_.indexPath.isEmpty() ? QString()
                  : pending_.firstPage         ? QStringLiteral("searching…")
                                               : QStringLiteral("%L1 images").arg(model_->total()));
  if (pending_.evaluation && !dataset_.indexPath.isEmpty()) startEvaluation();
}

bool DatasetsPage::gridFilled() const {
  if (dataset_.opening || pending_.firstPage || dataset_.indexPath.isEmpty()) return false;
  for (const int position : view_->visiblePositions())
    if (!model_->item(position) || model_->thumbnailPending(position)) return false;
  return true;
}

bool DatasetsPage::isBusy() const {
  if (dataset_.opening || pending_.stats || evaluation_->running() || pending_.evaluation || pending_.lists > 0) return true;
  return !dataset_.indexPath.isEmpty() && !gridFilled();
}

QJsonObject DatasetsPage::describe() const {
  return {{"dataset", dataset_.path},
          {"index", dataset_.indexPath},
          {"error", dataset_.error},
          {"built", dataset_.built},
          {"splits", dataset_.splitCounts},
          {"split", split_.isEmpty() ? QStringLiteral("all") : split_},
          {"search", search_},
          {"sort", kSorts.value(static_cast<int>(sort_))},
          {"total", model_->total()},
          {"items", model_->describe(view_->visiblePositions())},
          {"detail", detail_->describe()},
          {"evaluation", evaluation_->describe()},
          {"statistics", stats_->describe()},
          {"tab", tabs_->currentIndex() == 0 ? QStringLiteral("browse") : QStringLiteral("statistics")}};
}

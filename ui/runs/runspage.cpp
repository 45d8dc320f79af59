#include "runs/runspage.h"

#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QHeaderView>
#include <QJsonArray>
#include <QLabel>
#include <QLineEdit>
#include <QSettings>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QVBoxLayout>
#include <QtConcurrent>

#include <algorithm>

#include "common/actionbutton.h"
#include "common/hintlabel.h"
#include "common/theme.h"
#include "expnet/train/run_registry.h"
#include "runs/runactions.h"
#include "runs/runcomparisontabs.h"
#include "runs/runcurves.h"
#include "runs/runstablemodel.h"

namespace {

// What the listing says about a run that changes when its curves do.
QString detailsVersion(const RunRow& row) {
  return QStringLiteral("%1|%2|%3|%4")
      .arg(row.info.steps)
      .arg(QString::fromStdString(row.info.updated_at), row.status)
      .arg(row.info.best_cider.value_or(-1));
}

}  // namespace

RunsPage::RunsPage(QWidget* parent)
    : StudioPage(parent),
      model_(new RunsTableModel(this)),
      proxy_(new QSortFilterProxyModel(this)),
      table_(new QTableView),
      filter_(new QLineEdit),
      summary_(new HintLabel),
      problems_(new HintLabel(QString(), HintLabel::Kind::Notice)),
      empty_(new HintLabel(QStringLiteral("No training runs yet. Train one on the Training page (or `expnet train "
                                          "--preset shapes-demo --out DIR`): every run trained on this machine is "
                                          "listed here by itself. Open store… reads a run store kept elsewhere."),
                           HintLabel::Kind::Panel)),
      tabs_(new QTabWidget),
      curves_(new RunCurves),
      configDiff_(new ConfigDiffView),
      samples_(new SampleCaptionsView),
      actions_(new RunActions(this)) {
  setUpTable();
  wireActions();
  auto* top = buildTopBar();
  auto* splitter = buildTableAndTabs();
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(top);
  layout->addWidget(problems_);
  layout->addWidget(splitter, 1);
  problems_->hide();
  problems_->setObjectName(QStringLiteral("problems"));
  connect(problems_, &QLabel::linkActivated, this, [this](const QString& link) {
    if (link != QLatin1String("forget")) return;
    for (const QString& store : listing_.missingStores) expnet::forget_run_store(store.toStdString());
    refresh();
  });
  empty_->hide();

  connect(&listingWatcher_, &QFutureWatcher<RunsListing>::finished, this,
          [this] { onListing(listingWatcher_.result()); });
  connect(&detailsWatcher_, &QFutureWatcher<DetailsResult>::finished, this, [this] {
    // Shared, not copied: 50 runs of 10,000 steps are tens of MB.
    DetailsResult details = detailsWatcher_.result();
    if (details) onDetails(std::move(*details));
  });
  poll_.setSingleShot(true);
  connect(&poll_, &QTimer::timeout, this, &RunsPage::refresh);
}

void RunsPage::setUpTable() {
  proxy_->setSourceModel(model_);
  proxy_->setSortRole(RunsTableModel::SortRole);
  proxy_->setFilterKeyColumn(-1);
  proxy_->setFilterCaseSensitivity(Qt::CaseInsensitive);
  table_->setModel(proxy_);
  table_->setObjectName(QStringLiteral("runsTable"));
  table_->setSortingEnabled(true);
  table_->sortByColumn(RunsTableModel::Started, Qt::DescendingOrder);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  table_->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::EditKeyPressed);
  table_->verticalHeader()->hide();
  table_->setAlternatingRowColors(true);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
  table_->setToolTip(QStringLiteral("Ctrl+click or Shift+click several runs to overlay their curves; double-click a "
                                    "name, tags or notes to edit them"));
  connect(table_->selectionModel(), &QItemSelectionModel::selectionChanged, this, &RunsPage::onSelectionChanged);
  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, &RunsPage::updateCurrent);
}

// An edit in the table is an action; the actions' Rename opens the editor, their end refreshes.
void RunsPage::wireActions() {
  connect(model_, &RunsTableModel::editRequested, this, [this](const QString& key, int column, const QString& value) {
    if (const RunRow* row = model_->row(model_->rowOfKey(key))) actions_->edit(*row, column, value);
  });
  connect(actions_, &RunActions::renameRequested, this, [this] {
    const QModelIndex current = table_->selectionModel()->currentIndex();
    if (current.isValid()) table_->edit(current.siblingAtColumn(RunsTableModel::Name));
  });
  connect(actions_, &RunActions::finished, this, [this](bool, const QString&, bool changedRuns, const QString& select) {
    if (!select.isEmpty()) pendingSelection_ = {select};
    if (changedRuns) refresh();
  });
}

QLayout* RunsPage::buildTopBar() {
  filter_->setPlaceholderText(QStringLiteral("Filter: name, recipe, status, tag, note…"));
  filter_->setClearButtonEnabled(true);
  filter_->setObjectName(QStringLiteral("runsFilter"));
  connect(filter_, &QLineEdit::textChanged, this, &RunsPage::setFilterText);
  auto* openStoreButton = new ActionButton(QStringLiteral("Open store…"), QKeySequence(Qt::CTRL | Qt::Key_O),
                                           QStringLiteral("Read a run store file (runs.sqlite) or a run folder kept "
                                                          "elsewhere; it is listed from now on"),
                                           this);
  connect(openStoreButton, &QPushButton::clicked, this, &RunsPage::openStoreDialog);
  auto* refreshButton = new ActionButton(QStringLiteral("Refresh"), QKeySequence(Qt::Key_F5),
                                         QStringLiteral("Read every store again now (running runs refresh every 2 s)"), this);
  connect(refreshButton, &QPushButton::clicked, this, &RunsPage::refresh);

  auto* top = new QHBoxLayout;
  top->addWidget(filter_, 2);
  top->addWidget(summary_, 3);
  top->addWidget(refreshButton);
  top->addWidget(openStoreButton);
  return top;
}

// The table (or the hint when there is no run) and the actions above; the selected runs' curves,
// config diff and samples below.
QWidget* RunsPage::buildTableAndTabs() {
  tabs_->addTab(curves_, QStringLiteral("Curves"));
  tabs_->addTab(configDiff_, QStringLiteral("Config diff"));
  tabs_->addTab(samples_, QStringLiteral("Sample captions"));

  auto* upper = new QWidget;
  auto* upperLayout = new QVBoxLayout(upper);
  upperLayout->setContentsMargins(0, 0, 0, 0);
  upperLayout->addWidget(table_, 1);
  upperLayout->addWidget(empty_);
  upperLayout->addWidget(actions_);
  auto* splitter = new QSplitter(Qt::Vertical);
  splitter->addWidget(upper);
  splitter->addWidget(tabs_);
  splitter->setStretchFactor(0, 2);
  splitter->setStretchFactor(1, 3);
  splitter->setChildrenCollapsible(false);
  return splitter;
}

RunsPage::~RunsPage() {
  poll_.stop();
  listingWatcher_.waitForFinished();
  detailsWatcher_.waitForFinished();
}

void RunsPage::showEvent(QShowEvent* event) {
  StudioPage::showEvent(event);
  if (!listed_ && !listingInFlight_) refresh();
}

void RunsPage::setPollIntervals(int liveMs, int idleMs) {
  liveMs_ = liveMs;
  idleMs_ = idleMs;
  if (poll_.isActive()) poll_.start(liveMs_);
}

void RunsPage::refresh() {
  if (listingInFlight_) {  // one read at a time; another follows this one
    refreshAgain_ = true;
    return;
  }
  poll_.stop();
  listingInFlight_ = true;
  listingWatcher_.setFuture(QtConcurrent::run(loadRunsListing, extraStores_));
}

void RunsPage::onListing(const RunsListing& listing) {
  listingInFlight_ = false;
  listing_ = listing;
  listed_ = true;
  model_->updateRows(listing.rows);
  const bool anyLive = std::any_of(listing.rows.begin(), listing.rows.end(), [](const RunRow& r) { return r.live; });
  const qsizetype running = std::count_if(listing.rows.begin(), listing.rows.end(), [](const RunRow& r) { return r.live; });
  const auto count = [](qsizetype n, const char* one) { return QStringLiteral("%1 %2%3").arg(n).arg(one).arg(n == 1 ? "" : "s"); };
  summary_->setText(QStringLiteral("%1 in %2%3")
                        .arg(count(qsizetype(listing.rows.size()), "run"), count(listing.stores.size(), "store"))
                        .arg(running ? QStringLiteral(" · %1 running (updated live)").arg(running) : QString()));
  QStringList problemLines;
  for (const auto& p : listing.problems) problemLines << p.error.toHtmlEscaped();
  if (!listing.missingStores.isEmpty())
    // The first few named (all in the tooltip), and the way out: forgetting them.
    problemLines << QStringLiteral("%1 no longer %2 (moved or deleted): %3%4. <a href=\"forget\">Forget %5</a>")
                        .arg(count(listing.missingStores.size(), "registered store"),
                             listing.missingStores.size() == 1 ? QStringLiteral("exists") : QStringLiteral("exist"),
                             listing.missingStores.mid(0, 2).join(QStringLiteral(", ")).toHtmlEscaped(),
                             listing.missingStores.size() > 2
                                 ? QStringLiteral(" and %1 more").arg(listing.missingStores.size() - 2)
                                 : QString(),
                             listing.missingStores.size() == 1 ? QStringLiteral("it") : QStringLiteral("them"));
  problems_->setToolTip(listing.missingStores.join(QLatin1Char('\n')));
  problems_->setText(problemLines.join(QStringLiteral("<br>")));
  problems_->setVisible(!problemLines.isEmpty());
  empty_->setVisible(listing.rows.empty());
  table_->setVisible(!listing.rows.empty());
  if (table_->horizontalHeader()->sectionSize(RunsTableModel::Name) < 60) {  // not sized yet (nor restored)
    table_->resizeColumnsToContents();
    table_->setColumnWidth(RunsTableModel::Name, std::max(table_->columnWidth(RunsTableModel::Name), 200));
    table_->setColumnWidth(RunsTableModel::Notes, std::min(table_->columnWidth(RunsTableModel::Notes), 260));
  }
  applyPendingSelection();
  requestDetails(true);
  updateCurrent();
  emit listingUpdated();
  if (std::exchange(refreshAgain_, false))
    refresh();
  else
    poll_.start(anyLive ? liveMs_ : idleMs_);
}

QStringList RunsPage::selectedKeys() const {
  QList<QModelIndex> rows = table_->selectionModel()->selectedRows();
  std::sort(rows.begin(), rows.end(), [](const QModelIndex& a, const QModelIndex& b) { return a.row() < b.row(); });
  QStringList keys;
  for (const QModelIndex& index : rows) keys << index.data(RunsTableModel::KeyRole).toString();
  return keys;
}

void RunsPage::selectRuns(const QStringList& namesOrKeys) {
  pendingSelection_ = namesOrKeys;
  if (listed_) applyPendingSelection();
}

void RunsPage::applyPendingSelection() {
  if (pendingSelection_.isEmpty()) return;
  QItemSelection selection;
  for (int r = 0; r < proxy_->rowCount(); ++r) {
    const QModelIndex index = proxy_->index(r, 0);
    const QString key = index.data(RunsTableModel::KeyRole).toString();
    if (pendingSelection_.contains(key) || pendingSelection_.contains(index.data(Qt::DisplayRole).toString()))
      selection.select(index, proxy_->index(r, RunsTableModel::ColumnCount - 1));
  }
  if (selection.isEmpty()) return;  // not listed yet: a later listing may have them
  pendingSelection_.clear();
  table_->selectionModel()->select(selection, QItemSelectionModel::ClearAndSelect);
  table_->selectionModel()->setCurrentIndex(selection.indexes().first(), QItemSelectionModel::NoUpdate);
}

void RunsPage::onSelectionChanged() {
  // Applied once the view is done: the selection also changes while the filter
  // proxy removes rows, and the swatches' change notifications must not reach it then.
  if (selectionQueued_) return;
  selectionQueued_ = true;
  QTimer::singleShot(0, this, &RunsPage::applySelection);
}

void RunsPage::applySelection() {
  selectionQueued_ = false;
  const QStringList keys = selectedKeys();
  // Colours stay with a run while it is selected; new runs take the first free one.
  for (auto it = colours_.begin(); it != colours_.end();) it = keys.contains(it.key()) ? std::next(it) : colours_.erase(it);
  const Theme theme = Theme::current();
  for (const QString& key : keys) {
    if (colours_.contains(key)) continue;
    int hue = 0;  // the first of the ten hues no selected run has, else they repeat
    while (hue < 10 && std::find(colours_.cbegin(), colours_.cend(), theme.runColour(hue)) != colours_.cend()) ++hue;
    colours_.insert(key, theme.runColour(hue < 10 ? hue : int(colours_.size())));
  }
  model_->setColours(colours_);
  for (auto it = details_.begin(); it != details_.end();) it = keys.contains(it.key()) ? std::next(it) : details_.erase(it);
  applyDetails({});
  requestDetails(true);
  updateCurrent();
}

void RunsPage::requestDetails(bool onlyChanged) {
  if (detailsWatcher_.isRunning()) {
    detailsWanted_ = true;  // read again when this one is in
    return;
  }
  QVector<RunRef> wanted;
  for (const QString& key : selectedKeys()) {
    const RunRow* row = model_->row(model_->rowOfKey(key));
    if (!row) continue;
    if (onlyChanged && details_.contains(key) && detailsVersion_.value(key) == detailsVersion(*row)) continue;
    detailsVersion_.insert(key, detailsVersion(*row));
    wanted.append({row->storePath, row->info.id});
  }
  if (wanted.isEmpty()) return;
  detailsWatcher_.setFuture(
      QtConcurrent::run([wanted] { return std::make_shared<QVector<RunDetails>>(loadRunDetails(wanted)); }));
}

void RunsPage::onDetails(QVector<RunDetails> details) {
  const QStringList keys = selectedKeys();
  QStringList changed;
  for (RunDetails& d : details)
    if (keys.contains(d.key)) {
      changed << d.key;
      details_[d.key] = std::move(d);  // QHash::insert would copy it
    }
  applyDetails(changed);
  if (detailsWanted_) {
    detailsWanted_ = false;
    requestDetails(true);
    // The selection changed while these were read: its own result emits, so a
    // listener never sees the details of a selection that is no longer current.
    if (detailsWatcher_.isRunning()) return;
  }
  emit detailsUpdated();
}

void RunsPage::applyDetails(const QStringList& changedKeys) {
  QVector<RunColumn> columns;
  for (const QString& key : selectedKeys()) {
    const RunRow* row = model_->row(model_->rowOfKey(key));
    const auto it = details_.constFind(key);
    if (row && it != details_.constEnd()) columns.append({key, QString::fromStdString(row->info.name), &it.value()});
  }
  // The curves share the rows (tens of MB for long runs), never copy them.
  const auto input = [this](const RunColumn& column) {
    return RunSeriesInput{column.key, column.label, colours_.value(column.key), column.details->rows};
  };
  QStringList keys;
  for (const auto& column : columns) keys << column.key;
  if (keys == curves_->runKeys()) {
    // The same runs with new rows (a live run): only theirs are redrawn, and the view stays where the user put it.
    for (const auto& column : columns)
      if (changedKeys.contains(column.key)) curves_->updateRun(input(column));
  } else {
    QVector<RunSeriesInput> series;
    for (const auto& column : columns) series.append(input(column));
    curves_->setRuns(std::move(series));
  }
  configDiff_->setRuns(columns);
  samples_->setRuns(columns);
}

const RunRow* RunsPage::currentRow() const {
  const QModelIndex current = table_->selectionModel()->currentIndex();
  if (!current.isValid()) return nullptr;
  return model_->row(proxy_->mapToSource(current).row());
}

void RunsPage::updateCurrent() {
  actions_->setCurrent(currentRow());
  QVector<RunRow> selected;
  for (const QModelIndex& index : table_->selectionModel()->selectedRows())
    if (const RunRow* row = model_->row(proxy_->mapToSource(index).row())) selected.push_back(*row);
  actions_->setSelected(selected);
}

bool RunsPage::setCurrentRun(const QString& key) {
  for (int r = 0; r < proxy_->rowCount(); ++r) {
    const QModelIndex index = proxy_->index(r, 0);
    if (index.data(RunsTableModel::KeyRole).toString() != key) continue;
    table_->selectionModel()->setCurrentIndex(index, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    return true;
  }
  return false;
}

bool RunsPage::openStore(const QString& path, bool remember) {
  QFileInfo info(path);
  const QString store = info.isDir() ? QDir(path).filePath(QStringLiteral("runs.sqlite")) : info.absoluteFilePath();
  if (!QFileInfo(store).isFile()) {
    problems_->setText(
        QStringLiteral("'%1' is not a run store: pick a runs.sqlite file or a run folder that has one.").arg(path));
    problems_->show();
    return false;
  }
  if (!extraStores_.contains(store)) extraStores_ << store;
  if (remember) {
    try {
      expnet::register_run_store(store.toStdString());
    } catch (const std::exception& e) {
      problems_->setText(QString::fromStdString(e.what()));
      problems_->show();
    }
  }
  refresh();
  return true;
}

void RunsPage::openStoreDialog() {
  const QString file = QFileDialog::getOpenFileName(this, QStringLiteral("Open a run store"), QString(),
                                                    QStringLiteral("Run stores (*.sqlite);;All files (*)"));
  if (!file.isEmpty()) openStore(file);
}

void RunsPage::setFilterText(const QString& text) {
  if (filter_->text() != text) filter_->setText(text);
  proxy_->setFilterFixedString(text);
}

bool RunsPage::isBusy() const {
  return !listed_ || listingInFlight_ || detailsWatcher_.isRunning() || actions_->isBusy() ||
         !pendingSelection_.isEmpty() || selectionQueued_ || curves_->replotPending();
}

QJsonObject RunsPage::describe() const {
  QJsonArray rows;
  for (int r = 0; r < proxy_->rowCount(); ++r) {
    const RunRow* row = model_->row(proxy_->mapToSource(proxy_->index(r, 0)).row());
    if (!row) continue;
    const auto& info = row->info;
    rows.append(QJsonObject{
        {QStringLiteral("name"), QString::fromStdString(info.name)},
        {QStringLiteral("status"), row->status},
        {QStringLiteral("host"), row->host.isEmpty() ? QStringLiteral("this computer") : row->host},
        {QStringLiteral("recipe"), row->recipe},
        {QStringLiteral("model"), row->modelSize},
        {QStringLiteral("best_cider_d"), info.best_cider ? QJsonValue(*info.best_cider) : QJsonValue()},
        {QStringLiteral("best_epoch"), info.best_cider ? QJsonValue(qint64(info.best_epoch)) : QJsonValue()},
        {QStringLiteral("steps"), qint64(info.last_step)},
        {QStringLiteral("images_per_s"), info.images_per_s},
        {QStringLiteral("wall_s"), info.wall_s},
        {QStringLiteral("started"), QString::fromStdString(info.created_at)},
        {QStringLiteral("tags"), QString::fromStdString(info.tags)},
        {QStringLiteral("notes"), QString::fromStdString(info.notes)},
        {QStringLiteral("store"), row->storePath}});
  }
  QJsonArray problems;
  for (const auto& p : listing_.problems) problems.append(QJsonObject{{QStringLiteral("store"), p.path}, {QStringLiteral("error"), p.error}});
  return {{QStringLiteral("rows"), rows},
          {QStringLiteral("selected"), QJsonArray::fromStringList(selectedKeys())},
          {QStringLiteral("series"), curves_->describe()},
          {QStringLiteral("config_diff"), configDiff_->describe()},
          {QStringLiteral("samples"), samples_->describe()},
          {QStringLiteral("problems"), problems},
          {QStringLiteral("filter"), filter_->text()},
          {QStringLiteral("message"), actions_->message()}};
}

void RunsPage::restoreSettings() {
  QSettings settings;
  settings.beginGroup(QStringLiteral("runs"));
  for (const QString& store : settings.value(QStringLiteral("stores")).toStringList())
    if (QFileInfo(store).isFile() && !extraStores_.contains(store)) extraStores_ << store;
  filter_->setText(settings.value(QStringLiteral("filter")).toString());
  table_->horizontalHeader()->restoreState(settings.value(QStringLiteral("header")).toByteArray());
}

void RunsPage::saveSettings() const {
  QSettings settings;
  settings.beginGroup(QStringLiteral("runs"));
  settings.setValue(QStringLiteral("stores"), extraStores_);
  settings.setValue(QStringLiteral("filter"), filter_->text());
  settings.setValue(QStringLiteral("header"), table_->horizontalHeader()->saveState());
}

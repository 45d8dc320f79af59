#include "runs/runactions.h"

#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QJsonDocument>
#include <QProgressBar>
#include <QtConcurrent>

#include <exception>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/actionbutton.h"
#include "common/hintlabel.h"
#include "common/wrappingrow.h"
#include "expnet/remote/run_mirror.h"
#include "expnet/train/run_csv.h"
#include "expnet/train/run_store.h"
#include "expnet/train/tfevents_writer.h"
#include "runs/runstablemodel.h"

RunActions::RunActions(QWidget* owner) : QWidget(owner), message_(new HintLabel) {
  openBest_ = new ActionButton(QStringLiteral("Caption with best"), QKeySequence(Qt::CTRL | Qt::Key_B),
                               QStringLiteral("Load the run's best checkpoint (checkpoints/best.pth) on the Caption page"),
                               owner);
  resume_ = new ActionButton(QStringLiteral("Resume"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_R),
                             QStringLiteral("Continue an interrupted run from its last checkpoint on the Training page"),
                             owner);
  rename_ = new ActionButton(QStringLiteral("Rename"), QKeySequence(Qt::Key_F2),
                             QStringLiteral("Rename the run (double-click tags or notes to edit them)"), owner);
  delete_ = new ActionButton(QStringLiteral("Delete"), QKeySequence(QKeySequence::Delete),
                             QStringLiteral("Move the run (its folder and its rows) to the trash of the data folder; "
                                            "Undo delete brings it back"),
                             owner);
  undo_ = new ActionButton(QStringLiteral("Undo delete"), QKeySequence(QKeySequence::Undo),
                           QStringLiteral("Bring back the run deleted last"), owner);
  exportCsv_ = new ActionButton(QStringLiteral("Export CSV…"), QKeySequence(Qt::CTRL | Qt::Key_E),
                                QStringLiteral("The run's steps and validation metrics as CSV (as expnet runs export --csv)"),
                                owner);
  exportTensorBoard_ = new ActionButton(
      QStringLiteral("Export TensorBoard…"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E),
      QStringLiteral("The run's curves as a TensorBoard event file, for tensorboard --logdir DIR (several runs "
                     "selected: a folder each, overlaid)"),
      owner);
  const std::pair<QPushButton*, void (RunActions::*)()> commands[] = {
      {openBest_, &RunActions::openBestCheckpoint}, {resume_, &RunActions::resume},
      {rename_, &RunActions::renameRequested},      {delete_, &RunActions::deleteRun},
      {undo_, &RunActions::undoDelete}};
  for (const auto& [button, command] : commands) connect(button, &QPushButton::clicked, this, command);
  connect(exportCsv_, &QPushButton::clicked, this, [this] {
    if (!current_) return;
    const QString file = QFileDialog::getSaveFileName(this, QStringLiteral("Export the run's curves as CSV"),
                                                      QString::fromStdString(current_->info.name) + QStringLiteral(".csv"),
                                                      QStringLiteral("CSV (*.csv)"));
    if (!file.isEmpty()) exportCsv(file);
  });
  connect(exportTensorBoard_, &QPushButton::clicked, this, [this] {
    const QString dir = QFileDialog::getExistingDirectory(this, QStringLiteral("Folder for the TensorBoard event file"));
    if (!dir.isEmpty()) exportTensorBoard(dir);
  });
  transfer_ = new QProgressBar;
  transfer_->setObjectName(QStringLiteral("transfer"));
  transfer_->setRange(0, 1000);
  transfer_->setFixedWidth(140);
  transfer_->setVisible(false);
  message_->setWordWrap(true);
  auto* row = new WrappingRow;  // the exports and the message under the run's buttons where the page is narrow
  row->addWidget(widgetRow({openBest_, resume_, rename_, delete_, undo_}));
  row->addWidget(widgetRow({exportCsv_, exportTensorBoard_, transfer_, message_}, 3), 1);
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(row);
  connect(&fetch_, &HostCommand::progress, this, [this](qint64 done, qint64 total) {
    transfer_->setValue(total > 0 ? int(done * 1000 / total) : 0);
    showMessage(QStringLiteral("Bringing the checkpoint home: %1 of %2 MB").arg(done >> 20).arg(total >> 20), false);
  });
  connect(&fetch_, &HostCommand::finished, this, [this](int exitCode, const QByteArray&) {
    transfer_->setVisible(false);
    updateButtons();
    if (exitCode != 0) return showMessage(fetch_.lastError(), true);
    showMessage(QStringLiteral("Brought home as %1 (SHA-256 checked); loading it on the Caption page.").arg(fetchedTo_), false);
    emit openCheckpointRequested(fetchedTo_);
  });
  connect(&watcher_, &QFutureWatcher<QString>::finished, this, [this] {
    const QString error = watcher_.result();
    auto done = std::move(done_);
    done_ = nullptr;
    const QString text = done ? done(error) : error;
    showMessage(text, !error.isEmpty());
    updateButtons();
    emit finished(error.isEmpty(), text, changesRuns_ && error.isEmpty(), std::exchange(select_, QString()));
  });
  updateButtons();
}

RunActions::~RunActions() { watcher_.waitForFinished(); }

void RunActions::setCurrent(const RunRow* row) {
  if (row)
    current_ = *row;
  else
    current_.reset();
  updateButtons();
}

QString RunActions::message() const { return message_->text(); }

void RunActions::showMessage(const QString& text, bool error) {
  message_->setText(text);
  message_->setKind(error ? HintLabel::Kind::Error : HintLabel::Kind::Status);
}

void RunActions::updateButtons() {
  const bool idle = !watcher_.isRunning() && !fetch_.isRunning();
  const RunRow* row = current_ ? &*current_ : nullptr;
  const QDir folder(row ? QString::fromStdString(row->info.out_dir) : QString());
  const bool remote = row && !row->host.isEmpty();  // its folder is on the host
  openBest_->setEnabled(idle && row &&
                        (remote ? row->info.steps > 0 : QFileInfo::exists(folder.filePath(QStringLiteral("checkpoints/best.pth")))));
  openBest_->setText(remote ? QStringLiteral("Bring home, caption") : QStringLiteral("Caption with best"));
  // A host's run: its mirror says whether it can go on (its checkpoints are there).
  resume_->setEnabled(idle && row && !row->live &&
                      (row->status == QLatin1String("interrupted") || row->status == QLatin1String("failed")) &&
                      (remote || QFileInfo::exists(folder.filePath(QStringLiteral("checkpoints/latest.json")))));
  rename_->setEnabled(idle && row);
  delete_->setEnabled(idle && row);
  delete_->setTip(row && row->live ? QStringLiteral("A running run cannot be deleted: stop it first")
                                   : QStringLiteral("Move the run (its folder and its rows) to the trash of the data "
                                                    "folder; Undo delete brings it back"));
  undo_->setEnabled(idle && !trashed_.isEmpty());
  exportCsv_->setEnabled(idle && row && row->info.steps > 0);
  exportTensorBoard_->setEnabled(idle && row && row->info.steps > 0);
}

void RunActions::run(const QString& busyText, std::function<void()> job, std::function<QString(const QString&)> done,
                     bool changesRuns) {
  if (watcher_.isRunning()) {
    showMessage(QStringLiteral("Wait for the action in progress to finish."), true);
    return;
  }
  showMessage(busyText, false);
  done_ = std::move(done);
  changesRuns_ = changesRuns;
  watcher_.setFuture(QtConcurrent::run([job = std::move(job)]() -> QString {
    try {
      job();
      return {};
    } catch (const std::exception& e) {
      return QString::fromStdString(e.what());
    }
  }));
  updateButtons();
}

void RunActions::bringHome() {
  const auto origin = expnet::mirror_origin(current_->storePath.toStdString());
  if (!origin || fetch_.isRunning()) return;
  const QString which = current_->status == QLatin1String("finished") ? QStringLiteral("final") : QStringLiteral("best");
  fetchedTo_ = QFileInfo(current_->storePath).dir().filePath(QStringLiteral("run-%1-%2.pth").arg(current_->info.id).arg(which));
  fetch_.start({QStringLiteral("runs"), QStringLiteral("fetch"), QString::number(current_->info.id), QStringLiteral("--host"),
                QString::fromStdString(origin->host), QStringLiteral("--store"), QString::fromStdString(origin->remote_store),
                QStringLiteral("--checkpoint"), which, QStringLiteral("--to"), fetchedTo_});
  transfer_->setValue(0);
  transfer_->setVisible(true);
  showMessage(QStringLiteral("Bringing the %1 checkpoint home from %2…").arg(which, current_->host), false);
  updateButtons();
}

void RunActions::openBestCheckpoint() {
  if (!current_) return;
  if (!current_->host.isEmpty()) return bringHome();
  const QString best = QDir(QString::fromStdString(current_->info.out_dir)).filePath(QStringLiteral("checkpoints/best.pth"));
  if (!QFileInfo::exists(best)) {
    showMessage(QStringLiteral("'%1' has no best checkpoint yet (it is written at the first validation).").arg(best), true);
    return;
  }
  showMessage(QStringLiteral("Loading %1 on the Caption page.").arg(best), false);
  emit openCheckpointRequested(best);
}

void RunActions::resume() {
  if (!current_) return;
  if (current_->live) {
    showMessage(QStringLiteral("'%1' is running already.").arg(QString::fromStdString(current_->info.name)), true);
    return;
  }
  if (const auto origin = expnet::mirror_origin(current_->storePath.toStdString()); origin && !current_->host.isEmpty()) {
    const QString folder = QFileInfo(QString::fromStdString(origin->remote_store)).path();
    emit resumeOnHostRequested(current_->host, folder,
                               QJsonDocument::fromJson(QByteArray::fromStdString(current_->info.config_json)).object());
    return;
  }
  emit resumeRequested(QString::fromStdString(current_->info.out_dir));
}

void RunActions::edit(const RunRow& row, int column, const QString& value) {
  const std::string store = row.storePath.toStdString(), text = value.toStdString();
  const int64_t id = row.info.id;
  run(QStringLiteral("Saving…"),
      [store, id, column, text] {
        expnet::RunStore s(store);
        if (column == RunsTableModel::Name)
          s.rename_run(id, text);
        else if (column == RunsTableModel::Tags)
          s.set_tags(id, text);
        else
          s.set_notes(id, text);
      },
      [](const QString& error) { return error.isEmpty() ? QStringLiteral("Saved.") : error; }, true);
}

void RunActions::deleteRun() {
  if (!current_) return;
  const QString name = QString::fromStdString(current_->info.name);
  if (current_->live) {
    showMessage(QStringLiteral("'%1' is running: stop it on the Training page (or end its `expnet train`) before "
                               "deleting it.").arg(name), true);
    emit finished(false, message(), false, {});
    return;
  }
  const std::string store = current_->storePath.toStdString(), id = std::to_string(current_->info.id);
  auto trashed = std::make_shared<expnet::TrashedRun>();
  run(QStringLiteral("Moving '%1' to the trash…").arg(name), [store, id, trashed] { *trashed = expnet::trash_run(store, id); },
      [this, name, trashed](const QString& error) {
        if (!error.isEmpty()) return error;
        trashed_.append(*trashed);
        return QStringLiteral("Deleted '%1': moved to %2. Undo delete (Ctrl+Z) brings it back.")
            .arg(name, QString::fromStdString(trashed->trash_dir));
      },
      true);
}

void RunActions::undoDelete() {
  if (trashed_.isEmpty()) return;
  const expnet::TrashedRun last = trashed_.last();
  const QString name = QString::fromStdString(last.run_name);
  run(QStringLiteral("Restoring '%1'…").arg(name), [last] { expnet::restore_run(last); },
      [this, name](const QString& error) {
        if (!error.isEmpty()) return error;
        trashed_.removeLast();
        select_ = name;
        return QStringLiteral("Restored '%1'.").arg(name);
      },
      true);
}

void RunActions::exportCsv(const QString& file) {
  if (!current_) return;
  const std::string store = current_->storePath.toStdString(), id = std::to_string(current_->info.id),
                    path = file.toStdString();
  run(QStringLiteral("Exporting…"),
      [store, id, path] {
        expnet::RunStore s(store);
        expnet::write_run_csv_file(s, s.find_run(id), path);
      },
      [file](const QString& error) { return error.isEmpty() ? QStringLiteral("Exported to %1.").arg(file) : error; },
      false);
}

void RunActions::setSelected(const QVector<RunRow>& rows) { selected_ = rows; }

// One run: its event file in `dir`. Several selected: one folder each under `dir` (named
// after the run, its id added where two share a name), which --logdir overlays.
void RunActions::exportTensorBoard(const QString& dir) {
  if (!current_) return;
  std::vector<std::pair<std::string, int64_t>> runs;  // store, run id
  for (const RunRow& row : selected_.size() > 1 ? selected_ : QVector<RunRow>{*current_})
    runs.emplace_back(row.storePath.toStdString(), row.info.id);
  const bool several = runs.size() > 1;
  auto written = std::make_shared<std::vector<expnet::TensorboardExport>>();
  run(QStringLiteral("Exporting…"),
      [runs, several, folder = dir.toStdString(), written] {
        std::set<std::string> used;
        for (const auto& [store, id] : runs) {
          const expnet::RunStore s(store);
          const expnet::RunInfo info = s.find_run(std::to_string(id));
          std::string name = expnet::tensorboard_run_folder(info);
          if (!used.insert(name).second) used.insert(name += "-" + std::to_string(id));
          written->push_back(expnet::write_tensorboard_events(s, info, several ? folder + "/" + name : folder));
        }
      },
      [written, dir](const QString& error) {
        if (!error.isEmpty()) return error;
        if (written->size() == 1)
          return QStringLiteral("Wrote %1 (%2 values): tensorboard --logdir %3 shows them.")
              .arg(QString::fromStdString(written->front().path))
              .arg(written->front().scalars)
              .arg(dir);
        return QStringLiteral("Wrote the event files of %1 runs, a folder each under %2: tensorboard --logdir %2 overlays them.")
            .arg(written->size())
            .arg(dir);
      },
      false);
}

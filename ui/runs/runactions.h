// The Runs page's actions on its current run, as a bar of buttons and the line
// that says what the last one did: open the best checkpoint on the Caption
// page, resume on the Training page, rename (the page edits the name in place),
// edit tags and notes, delete to the trash and undo it (expnet/train/run_trash.h),
// export as CSV or TensorBoard events. Store writes and file moves run in the
// thread pool, one at a time; a running run is never deleted. A run of a host
// (a mirror store) is brought home first: `expnet runs fetch` copies its
// checkpoint over ssh (resumable, SHA-256 checked), with a progress bar.
#pragma once

#include <QJsonObject>
#include <QFutureWatcher>
#include <QVector>
#include <QWidget>

#include <functional>
#include <optional>

#include "common/hostcommand.h"
#include "expnet/train/run_trash.h"
#include "runs/runslisting.h"

class ActionButton;
class HintLabel;
class QProgressBar;

class RunActions : public QWidget {
  Q_OBJECT
 public:
  // `owner` holds the buttons' shortcuts (the page).
  explicit RunActions(QWidget* owner);
  ~RunActions() override;

  void setCurrent(const RunRow* row);  // copied; nullptr: none
  void setSelected(const QVector<RunRow>& rows);  // what Export TensorBoard writes when several are selected
  bool isBusy() const { return watcher_.isRunning() || fetch_.isRunning(); }
  QString message() const;
  int trashedCount() const { return int(trashed_.size()); }

 public slots:
  void openBestCheckpoint();  // of a host's run: its final (else best) checkpoint brought home first
  void resume();
  void deleteRun();
  void undoDelete();
  // column: RunsTableModel::Name (rename), Tags or Notes.
  void edit(const RunRow& row, int column, const QString& value);
  void exportCsv(const QString& file);
  void exportTensorBoard(const QString& dir);

 signals:
  void openCheckpointRequested(const QString& checkpoint);
  void resumeRequested(const QString& runFolder);
  // A host's run (its mirror selected): its folder there and the config it started with.
  void resumeOnHostRequested(const QString& host, const QString& folderThere, const QJsonObject& config);
  void renameRequested();
  // After an action; `changedRuns`: the store changed, re-read the listing;
  // `select`: a run name to select once listed (a restored run).
  void finished(bool ok, const QString& message, bool changedRuns, const QString& select);

 private:
  // Runs `job` in the thread pool; `done` gets its error (empty: it worked) on the UI thread.
  void run(const QString& busyText, std::function<void()> job, std::function<QString(const QString&)> done,
           bool changesRuns);
  void showMessage(const QString& text, bool error);
  void updateButtons();
  void bringHome();

  ActionButton *openBest_, *resume_, *rename_, *delete_, *undo_, *exportCsv_, *exportTensorBoard_;
  HintLabel* message_;
  QProgressBar* transfer_;
  HostCommand fetch_;
  QString fetchedTo_;
  std::optional<RunRow> current_;
  QVector<RunRow> selected_;
  QFutureWatcher<QString> watcher_;
  std::function<QString(const QString&)> done_;
  bool changesRuns_ = false;
  QString select_;
  QVector<expnet::TrashedRun> trashed_;  // this session's deletions, newest last
};

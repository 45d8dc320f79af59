// The Runs page: every training run this machine knows (run stores found
// through the registry, expnet/train/run_registry.h, plus stores opened by
// hand) in one sortable, filterable table whose running runs update live;
// the selected runs' curves overlaid (RunCurves), their configuration diff and
// sample captions side by side; and actions on the current run: open its best
// checkpoint on the Caption page, resume it on the Training page, rename, tag,
// annotate, delete to the trash (undoable) and export (CSV, TensorBoard).
#pragma once

#include <QFutureWatcher>
#include <QHash>
#include <QJsonObject>
#include <QStringList>
#include <QTimer>

#include <memory>

#include "runs/runslisting.h"
#include "shell/studiopage.h"

class QLabel;
class QLayout;
class QLineEdit;
class QSortFilterProxyModel;
class QTableView;
class QTabWidget;
class ConfigDiffView;
class HintLabel;
class RunActions;
class RunCurves;
class RunsTableModel;
class SampleCaptionsView;

class RunsPage : public StudioPage {
  Q_OBJECT
 public:
  explicit RunsPage(QWidget* parent = nullptr);
  ~RunsPage() override;

  QString pageId() const override { return QStringLiteral("runs"); }
  QString title() const override { return QStringLiteral("Runs"); }
  void restoreSettings() override;
  void saveSettings() const override;
  // Rows, selection, plotted series, config diff, samples, problems (docs/studio.md).
  QJsonObject describe() const override;
  bool isBusy() const override;

  RunsTableModel* model() const { return model_; }
  QTableView* table() const { return table_; }
  RunCurves* curves() const { return curves_; }
  ConfigDiffView* configDiff() const { return configDiff_; }
  SampleCaptionsView* samples() const { return samples_; }
  RunActions* actions() const { return actions_; }
  // Keys (runslisting.h RunRow::key) of the selected runs, in table order.
  QStringList selectedKeys() const;
  // True once the first listing has arrived.
  bool listed() const { return listed_; }

 public slots:
  void refresh();
  // Reads a store kept elsewhere; `remember` registers it so it is listed from now on.
  bool openStore(const QString& path, bool remember = true);
  void openStoreDialog();
  // Selects the runs of these names (or keys) once they are listed.
  void selectRuns(const QStringList& namesOrKeys);
  void setFilterText(const QString& text);
  // Makes the run of this key the current one (the actions' target) and selects it alone.
  bool setCurrentRun(const QString& key);
  void setPollIntervals(int liveMs, int idleMs);

 signals:
  void listingUpdated();
  void detailsUpdated();

 private:
  void setUpTable();
  void wireActions();
  QLayout* buildTopBar();  // filter, summary, Refresh and Open store
  QWidget* buildTableAndTabs();
  void showEvent(QShowEvent* event) override;
  void onListing(const RunsListing& listing);
  void onDetails(QVector<RunDetails> details);
  void onSelectionChanged();
  void applySelection();
  void requestDetails(bool onlyChanged);
  void applyDetails(const QStringList& changedKeys);
  void applyPendingSelection();
  void updateCurrent();
  const RunRow* currentRow() const;

  RunsTableModel* model_;
  QSortFilterProxyModel* proxy_;
  QTableView* table_;
  QLineEdit* filter_;
  QLabel* summary_;
  HintLabel* problems_;
  HintLabel* empty_;
  QTabWidget* tabs_;
  RunCurves* curves_;
  ConfigDiffView* configDiff_;
  SampleCaptionsView* samples_;
  RunActions* actions_;

  QTimer poll_;
  int liveMs_ = 2000, idleMs_ = 10000;
  QFutureWatcher<RunsListing> listingWatcher_;
  using DetailsResult = std::shared_ptr<QVector<RunDetails>>;
  QFutureWatcher<DetailsResult> detailsWatcher_;
  bool listed_ = false, detailsWanted_ = false, refreshAgain_ = false, selectionQueued_ = false;
  // From a listing's start until its result is taken: the watcher stops "running"
  // before its finished signal is delivered, and the page is busy until then.
  bool listingInFlight_ = false;
  QStringList extraStores_;
  QStringList pendingSelection_;
  QHash<QString, RunDetails> details_;        // by key, for the selected runs
  QHash<QString, QString> detailsVersion_;    // key -> what the listing said when they were read
  QHash<QString, QColor> colours_;            // key -> curve colour while selected
  RunsListing listing_;
};

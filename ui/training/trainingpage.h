// The Training page: a form for the recipe (dataset, model, stages and their
// hyper-parameters, pre-filled from the built-in presets), Start / Stop /
// Resume of an `expnet train` child process, and a live view of any run of a
// run store: charts, progress with ETA, sample captions and the child's log.
#pragma once

#include <QDateTime>
#include <QJsonObject>

#include "shell/studiopage.h"
#include "training/remotetraining.h"
#include "training/runsnapshot.h"
#include "training/trainingprocess.h"
#include "training/trainingprogress.h"

class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QProgressBar;
class QSplitter;
class QTabWidget;
class ActionButton;
class HintLabel;
class HostChoice;
class RecipeForm;
class SamplesPanel;
class StoreRunsPanel;
class StudioContext;
class TrainingCharts;

class TrainingPage : public StudioPage {
  Q_OBJECT
 public:
  explicit TrainingPage(StudioContext* context, QWidget* parent = nullptr);
  ~TrainingPage() override;

  QString pageId() const override { return QStringLiteral("training"); }
  QJsonObject describe() const override;
  QString title() const override { return QStringLiteral("Training"); }
  bool isBusy() const override;

  TrainingCharts* charts() const { return charts_; }
  TrainingProcess* process() const { return process_; }
  RemoteTraining* remote() const { return remote_; }
  // Where Start trains: "" for this computer, else a host of hosts.json (docs/remote.md).
  QString where() const;
  RunStorePoller* poller() const { return poller_; }
  const RunSnapshot& snapshot() const { return snapshot_; }
  // The training config the form describes (validated with the engine's own
  // parser); empty with `error` set when a field is wrong.
  QJsonObject formConfig(QString* error) const;

 public slots:
  void applyPreset(const QString& name);
  // Fills the form from a training config (the format of docs/training.md).
  bool setConfigJson(const QByteArray& json, QString* error = nullptr);
  void setOutputDir(const QString& dir);
  // Selects this computer ("") or a host; false when the host is not in the list.
  bool setWhere(const QString& host);
  // Re-reads the hosts list (after the Hosts dialog changed it).
  void reloadHosts();
  // A run folder (with runs.sqlite) or a run store file: follows its run
  // (the one whose folder it is, else the newest). Returns false with a message on the page otherwise.
  bool openRun(const QString& folderOrStore, const QString& runName = QString());
  void start();
  void stop();
  void resume();
  // The Runs page's Resume of a host's run, with the config it started with.
  void resumeOnHost(const QString& host, const QString& folderThere, const QJsonObject& config);
  void loadConfigFile();
  void saveConfigFile();
  void browseOutputDir();
  void browseRun();
  void restoreSettings() override;
  void saveSettings() const override;
  // A trainer of this computer (a host's run goes on without the studio).
  QString workLostOnQuit() const override;
  void stopForQuit() override { stop(); }

 signals:
  void trainingFinished(int exitCode);  // also quitSafe()
  void snapshotUpdated();

 private:
  QWidget* buildForm();
  QWidget* buildMonitor();
  void launch(const QString& configPath, bool resume);
  void launchRemote(const QJsonObject& config, bool resume);
  void clearMonitor(const QString& runName);
  void connectRemote();
  // A trainer being started or running here; a run followed on a host does not keep Start from starting another.
  bool trainerActive() const { return process_->isRunning() || remote_->isLaunching(); }
  void onSnapshot(const RunSnapshot& snapshot);
  void onProcessFinished(int exitCode, bool crashed);
  void appendLog(const QString& line);
  void updateProgress();
  void updateButtons();
  void showMessage(const QString& text, bool error);
  QString storeForFolder(const QString& dir) const;
  bool hasCheckpoint(const QString& dir) const;

  StudioContext* context_;
  TrainingProcess* process_;
  RemoteTraining* remote_;
  RunStorePoller* poller_;
  RecipeForm* recipe_;
  RunSnapshot snapshot_;
  TrainProgressLine lastProgress_;
  bool haveProgress_ = false;
  QString outDirOfChild_;
  int lastExitCode_ = -1;
  bool fillFormFromRun_ = false;
  bool followingChild_ = false;  // the followed run is the one our child trains
  RunProgress progress_;
  EtaClock eta_;
  double etaSeconds_ = -1;
  QString progressText_;

  HostChoice* where_;
  QLineEdit* outDir_;
  QWidget* browseOut_;
  ActionButton* startButton_;
  ActionButton* stopButton_;
  ActionButton* resumeButton_;
  HintLabel* message_;
  StoreRunsPanel* storeRuns_;
  QLabel* runTitle_;
  QProgressBar* progressBar_;
  QLabel* progressLabel_;
  TrainingCharts* charts_;
  QTabWidget* tabs_;
  SamplesPanel* samplesPanel_;
  QPlainTextEdit* log_;
  QSplitter* split_;
  QSplitter* monitorSplit_;
};

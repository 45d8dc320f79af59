#include "training/trainingpage.h"

#include <QAction>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSettings>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QVBoxLayout>

#include <cmath>

#include "common/actionbutton.h"
#include "common/browsebutton.h"
#include "common/hintlabel.h"
#include "common/hostchoice.h"
#include "expnet/system/atomic_file.h"
#include "shell/studiocontext.h"
#include "training/recipeform.h"
#include "training/snapshottabs.h"
#include "training/trainingcharts.h"
#include "training/trainingmodels.h"
#include "training/trainingprogress.h"

TrainingPage::TrainingPage(StudioContext* context, QWidget* parent)
    : StudioPage(parent),
      context_(context),
      process_(new TrainingProcess(this)),
      remote_(new RemoteTraining(this)),
      poller_(new RunStorePoller(this)),
      recipe_(new RecipeForm) {
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(8, 8, 8, 8);
  split_ = new QSplitter(Qt::Horizontal);
  auto* scroll = new QScrollArea;
  scroll->setWidget(buildForm());
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  // As wide as the form's least (its fields never clipped: no sideways scrolling here).
  scroll->setMinimumWidth(scroll->widget()->minimumSizeHint().width() + scroll->verticalScrollBar()->sizeHint().width());
  split_->addWidget(scroll);
  split_->addWidget(buildMonitor());
  split_->setStretchFactor(0, 0);
  split_->setStretchFactor(1, 1);
  split_->setSizes({430, 850});
  layout->addWidget(split_);

  connect(process_, &TrainingProcess::logLine, this, &TrainingPage::appendLog);
  connect(this, &TrainingPage::trainingFinished, this, &StudioPage::quitSafe);
  connect(process_, &TrainingProcess::progress, this, [this](const TrainProgressLine& line) {
    lastProgress_ = line;
    haveProgress_ = true;
    updateProgress();
  });
  connect(process_, &TrainingProcess::started, this, [this] {
    appendLog(QStringLiteral("$ %1").arg(process_->commandLine()));
    updateButtons();
  });
  connect(process_, &TrainingProcess::failedToStart, this, [this](const QString& reason) {
    showMessage(reason, true);
    appendLog(reason);
    updateButtons();
  });
  connect(process_, &TrainingProcess::finished, this, &TrainingPage::onProcessFinished);
  connectRemote();
  connect(poller_, &RunStorePoller::snapshotReady, this, &TrainingPage::onSnapshot);
  connect(recipe_, &RecipeForm::message, this, &TrainingPage::showMessage);
  recipe_->setConfigFolder([this] { return outDir_->text(); });
  applyPreset(QStringLiteral("shapes-demo"));
  reloadHosts();
  updateButtons();
}

TrainingPage::~TrainingPage() = default;

// ---------------------------------------------------------------- form

QWidget* TrainingPage::buildForm() {
  auto* panel = new QWidget;
  auto* column = new QVBoxLayout(panel);
  column->setContentsMargins(0, 0, 6, 0);

  auto* output = new QGroupBox(QStringLiteral("Run"));
  auto* outputLayout = new QVBoxLayout(output);
  where_ = new HostChoice;
  where_->setObjectName(QStringLiteral("where"));
  where_->setToolTip(QStringLiteral("Where Start trains: this computer, or a host of File > Hosts… (over ssh; the run "
                                    "folder and dataset paths are then the host's)"));
  connect(where_, &QComboBox::currentIndexChanged, this, [this] {
    const bool remote = !where().isEmpty();
    outDir_->setPlaceholderText(remote ? QStringLiteral("run folder on %1 (relative: to its work folder)").arg(where())
                                       : QStringLiteral("run folder (checkpoints, runs.sqlite)"));
    browseOut_->setEnabled(!remote);
    updateButtons();
  });
  auto* whereRow = new QHBoxLayout;
  whereRow->addWidget(new QLabel(QStringLiteral("Where:")));
  whereRow->addWidget(where_, 1);
  outputLayout->addLayout(whereRow);
  outDir_ = new QLineEdit;
  outDir_->setObjectName(QStringLiteral("outDir"));
  outDir_->setPlaceholderText(QStringLiteral("run folder (checkpoints, runs.sqlite)"));
  outDir_->setToolTip(QStringLiteral("Run folder: checkpoints/, final.pth and its own runs.sqlite"));
  connect(outDir_, &QLineEdit::editingFinished, this, &TrainingPage::updateButtons);
  auto* browseOut = new BrowseButton(outDir_, QStringLiteral("Pick the run folder"), QString(), BrowseButton::Mode::Folder);
  connect(browseOut, &BrowseButton::chosen, this, &TrainingPage::setOutputDir);
  browseOut_ = browseOut->row();
  outputLayout->addWidget(browseOut_);
  startButton_ = new ActionButton(QStringLiteral("Start"), QKeySequence(Qt::CTRL | Qt::Key_Return),
                                  QStringLiteral("Start `expnet train` with this form in the run folder"), this);
  startButton_->setObjectName(QStringLiteral("start"));
  stopButton_ = new ActionButton(QStringLiteral("Stop"), QKeySequence(Qt::CTRL | Qt::Key_Period),
                                 QStringLiteral("Stop the trainer: it writes a checkpoint after the current step"), this);
  stopButton_->setObjectName(QStringLiteral("stop"));
  resumeButton_ = new ActionButton(QStringLiteral("Resume"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_R),
                                   QStringLiteral("Continue the run in the folder exactly from its last checkpoint"), this);
  resumeButton_->setObjectName(QStringLiteral("resume"));
  auto* open = new ActionButton(QStringLiteral("Open run…"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_O),
                                QStringLiteral("Open a run folder (with runs.sqlite) to follow a finished or running run"),
                                this);
  connect(startButton_, &QPushButton::clicked, this, &TrainingPage::start);
  connect(stopButton_, &QPushButton::clicked, this, &TrainingPage::stop);
  connect(resumeButton_, &QPushButton::clicked, this, &TrainingPage::resume);
  connect(open, &QPushButton::clicked, this, &TrainingPage::browseRun);
  auto* buttons = new QHBoxLayout;
  for (QWidget* button : std::initializer_list<QWidget*>{startButton_, stopButton_, resumeButton_, open})
    buttons->addWidget(button);
  outputLayout->addLayout(buttons);
  message_ = HintLabel::statusLine(QStringLiteral("message"));
  outputLayout->addWidget(message_);
  column->addWidget(output);
  column->addWidget(recipe_, 1);
  column->addStretch(0);
  return panel;
}

QWidget* TrainingPage::buildMonitor() {
  auto* panel = new QWidget;
  auto* layout = new QVBoxLayout(panel);
  layout->setContentsMargins(6, 0, 0, 0);
  runTitle_ = new QLabel(QStringLiteral("No run: start one with the form, or open a run folder (Ctrl+Shift+O)"));
  runTitle_->setObjectName(QStringLiteral("runTitle"));
  runTitle_->setStyleSheet(QStringLiteral("font-size: 12pt; font-weight: bold"));
  runTitle_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  runTitle_->setWordWrap(true);  // a long run name takes two lines, never the page's width
  layout->addWidget(runTitle_);
  auto* progressRow = new QHBoxLayout;
  progressBar_ = new QProgressBar;
  progressBar_->setObjectName(QStringLiteral("progress"));
  progressBar_->setRange(0, 1000);
  progressBar_->setValue(0);
  progressBar_->setTextVisible(false);  // the percentage leads the label beside it (readable on any style)
  progressBar_->setFixedWidth(220);
  progressBar_->setToolTip(QStringLiteral("Epochs done over all stages"));
  progressBar_->setVisible(false);  // until there is a run to follow
  progressLabel_ = new QLabel;
  progressLabel_->setObjectName(QStringLiteral("progressText"));
  progressLabel_->setWordWrap(true);  // "stage … · epoch … · ETA …" in lines, never wider than the page
  progressRow->addWidget(progressBar_);
  progressRow->addWidget(progressLabel_, 1);
  layout->addLayout(progressRow);

  monitorSplit_ = new QSplitter(Qt::Vertical);
  charts_ = new TrainingCharts;
  monitorSplit_->addWidget(charts_);
  tabs_ = new QTabWidget;
  samplesPanel_ = new SamplesPanel;
  tabs_->addTab(samplesPanel_, QStringLiteral("Sample captions"));
  log_ = new QPlainTextEdit;
  log_->setObjectName(QStringLiteral("log"));
  log_->setReadOnly(true);
  log_->setMaximumBlockCount(5000);
  log_->setFont(QFont(QStringLiteral("monospace"), 9));
  log_->setPlaceholderText(QStringLiteral("The output of a training started here shows up in this log."));
  tabs_->addTab(log_, QStringLiteral("Log"));
  storeRuns_ = new StoreRunsPanel;
  connect(storeRuns_, &StoreRunsPanel::runClicked, this, [this](const QString& name) {
    if (name != snapshot_.run.name.c_str()) openRun(poller_->storePath(), name);
  });
  tabs_->addTab(storeRuns_, QStringLiteral("Runs in the store"));
  // Alt, not Ctrl: Ctrl+1.. switch pages (the View menu).
  tabs_->setToolTip(QStringLiteral("Alt+1: sample captions, Alt+2: log, Alt+3: runs of the store"));
  for (int i = 0; i < 3; ++i) {
    auto* action = new QAction(this);
    action->setShortcut(QKeySequence(Qt::ALT | Qt::Key(Qt::Key_1 + i)));
    action->setShortcutContext(Qt::WidgetWithChildrenShortcut);
    connect(action, &QAction::triggered, tabs_, [this, i] { tabs_->setCurrentIndex(i); });
    addAction(action);
  }
  auto* logScale = new QAction(this);
  logScale->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_L));
  logScale->setShortcutContext(Qt::WidgetWithChildrenShortcut);
  connect(logScale, &QAction::triggered, this, [this] { charts_->setLogScale(!charts_->logScale()); });
  addAction(logScale);
  monitorSplit_->addWidget(tabs_);
  monitorSplit_->setStretchFactor(0, 3);
  monitorSplit_->setStretchFactor(1, 1);
  monitorSplit_->setSizes({560, 200});
  layout->addWidget(monitorSplit_, 1);
  return panel;
}

void TrainingPage::applyPreset(const QString& name) { recipe_->applyPreset(name); }

bool TrainingPage::setConfigJson(const QByteArray& json, QString* error) { return recipe_->setConfigJson(json, error); }

QJsonObject TrainingPage::formConfig(QString* error) const { return recipe_->config(error); }

void TrainingPage::setOutputDir(const QString& dir) {
  outDir_->setText(dir);
  updateButtons();
}

void TrainingPage::loadConfigFile() { recipe_->loadConfigFile(); }

void TrainingPage::saveConfigFile() { recipe_->saveConfigFile(); }

void TrainingPage::browseOutputDir() {
  const QString dir = QFileDialog::getExistingDirectory(this, QStringLiteral("Run folder"), outDir_->text());
  if (!dir.isEmpty()) setOutputDir(dir);
}

void TrainingPage::browseRun() {
  const QString dir = QFileDialog::getExistingDirectory(this, QStringLiteral("Open a run folder"), outDir_->text());
  if (!dir.isEmpty()) openRun(dir);
}

// ---------------------------------------------------------------- process

QString TrainingPage::storeForFolder(const QString& dir) const { return QDir(dir).filePath(QStringLiteral("runs.sqlite")); }

bool TrainingPage::hasCheckpoint(const QString& dir) const {
  return !dir.isEmpty() && QFileInfo::exists(QDir(dir).filePath(QStringLiteral("checkpoints/latest.json")));
}

void TrainingPage::start() {
  if (trainerActive()) return;
  remote_->detach();  // a run followed on a host goes on being mirrored in the background
  QString error;
  const QJsonObject config = formConfig(&error);
  if (!error.isEmpty()) return showMessage(error, true);
  const QString out = outDir_->text().trimmed();
  if (out.isEmpty()) return showMessage(QStringLiteral("Choose an output folder for the run first."), true);
  if (!where().isEmpty()) return launchRemote(config, false);
  if (hasCheckpoint(out))
    return showMessage(
        QStringLiteral("'%1' already has checkpoints: press Resume to continue that run, or choose another folder.").arg(out), true);
  if (!QDir().mkpath(out)) return showMessage(QStringLiteral("cannot create '%1': check the parent folder is writable").arg(out), true);
  const QString configPath = QDir(out).filePath(QStringLiteral("studio-config.json"));
  try {
    expnet::write_file_atomic(configPath.toStdString(), QJsonDocument(config).toJson().toStdString());
  } catch (const std::exception& e) {
    showMessage(QString::fromStdString(e.what()), true);
    return;
  }
  launch(configPath, false);
}

void TrainingPage::resume() {
  if (trainerActive()) return;
  const QString out = outDir_->text().trimmed();
  if (!where().isEmpty()) {
    QString error;
    const QJsonObject config = formConfig(&error);
    if (!error.isEmpty()) return showMessage(error, true);
    return launchRemote(config, true);
  }
  if (!hasCheckpoint(out))
    return showMessage(QStringLiteral("'%1' has no checkpoint to resume from (checkpoints/latest.json).").arg(out), true);
  // The config the run started with: ours, or the one in the run store.
  QString configPath = QDir(out).filePath(QStringLiteral("studio-config.json"));
  if (!QFileInfo::exists(configPath)) {
    const RunSnapshot s = loadRunSnapshot(storeForFolder(out), QString());
    if (!s.found) return showMessage(QStringLiteral("cannot resume: %1").arg(s.error), true);
    try {
      expnet::write_file_atomic(configPath.toStdString(), s.run.config_json);
    } catch (const std::exception& e) {
      return showMessage(QString::fromStdString(e.what()), true);
    }
  }
  launch(configPath, true);
}

void TrainingPage::launch(const QString& configPath, bool resume) {
  const QString out = outDir_->text().trimmed();
  QFile file(configPath);
  QString runName;
  if (file.open(QIODevice::ReadOnly)) runName = QJsonDocument::fromJson(file.readAll()).object().value(QStringLiteral("name")).toString();
  outDirOfChild_ = out;
  clearMonitor(runName);
  process_->start(configPath, out, resume, recipe_->threads());
  showMessage(resume ? QStringLiteral("Resuming %1…").arg(runName) : QStringLiteral("Starting %1…").arg(runName), false);
  // The run appears in the store once the trainer has prepared its data.
  poller_->follow(storeForFolder(out), runName);
  updateButtons();
}

void TrainingPage::clearMonitor(const QString& runName) {
  poller_->stop();  // a read of the run shown before must not land after this
  eta_.reset();
  followingChild_ = true;
  haveProgress_ = false;
  lastExitCode_ = -1;
  log_->clear();
  // Nothing of the previously shown run stays on screen.
  snapshot_ = RunSnapshot();
  charts_->clear();
  samplesPanel_->clear();
  runTitle_->setText(QStringLiteral("%1 — starting").arg(runName));
  progressBar_->setValue(0);
  progressBar_->setVisible(true);
}

void TrainingPage::stop() {
  if (remote_->isFollowing() && !remote_->stopRequested()) {
    remote_->stop();
    return updateButtons();
  }
  if (!process_->isRunning()) return;
  process_->requestStop();
  showMessage(QStringLiteral("Stopping: the trainer writes a checkpoint after the current step…"), false);
  updateButtons();
}

void TrainingPage::onProcessFinished(int exitCode, bool crashed) {
  lastExitCode_ = crashed ? -1 : exitCode;
  if (crashed)
    showMessage(QStringLiteral("The trainer crashed (killed by a signal); the studio is fine. See the log."), true);
  else if (exitCode == 0)
    showMessage(QStringLiteral("Training finished: %1").arg(QDir(outDirOfChild_).filePath(QStringLiteral("final.pth"))), false);
  else if (exitCode == 130)
    showMessage(QStringLiteral("Stopped with a checkpoint in %1/checkpoints; Resume continues from it.").arg(outDirOfChild_), false);
  else
    showMessage(QStringLiteral("The trainer failed (exit status %1): see the log.").arg(exitCode), true);
  haveProgress_ = false;
  poller_->setIdle(false);  // until the final state has been read
  poller_->pollNow();
  updateButtons();
  emit trainingFinished(crashed ? -1 : exitCode);
}

// ---------------------------------------------------------------- on a host

QString TrainingPage::where() const { return where_->host(); }

bool TrainingPage::setWhere(const QString& host) { return where_->setHost(host); }

void TrainingPage::reloadHosts() {
  const QString error = where_->reload();
  if (!error.isEmpty()) showMessage(error, true);
}

void TrainingPage::resumeOnHost(const QString& host, const QString& folderThere, const QJsonObject& config) {
  if (trainerActive()) return showMessage(QStringLiteral("Stop the run being trained before resuming another."), true);
  if (!setWhere(host)) return showMessage(QStringLiteral("'%1' is not in File > Hosts… any more.").arg(host), true);
  setOutputDir(folderThere);
  launchRemote(config, true);
}

void TrainingPage::launchRemote(const QJsonObject& config, bool resume) {
  const QString runName = config.value(QStringLiteral("name")).toString();
  outDirOfChild_ = outDir_->text().trimmed();
  clearMonitor(runName);
  remote_->launch(where(), config, outDirOfChild_, resume, recipe_->threads());
  updateButtons();
}

void TrainingPage::connectRemote() {
  connect(remote_, &RemoteTraining::logLine, this, &TrainingPage::appendLog);
  connect(remote_, &RemoteTraining::message, this, [this](const QString& text) { showMessage(text, false); });
  connect(remote_, &RemoteTraining::failed, this, [this](const QString& reason) {
    showMessage(reason, true);
    updateButtons();
  });
  connect(remote_, &RemoteTraining::followStarted, this, [this](const QString& mirror) {
    followingChild_ = true;
    poller_->follow(mirror, remote_->runName());
    updateButtons();
  });
  connect(remote_, &RemoteTraining::followEnded, this, [this] {
    poller_->setIdle(false);  // until the final state has been read
    poller_->pollNow();
  });
}

void TrainingPage::appendLog(const QString& line) {
  QScrollBar* bar = log_->verticalScrollBar();
  const bool atEnd = bar->value() == bar->maximum();
  log_->appendPlainText(line);
  if (atEnd) bar->setValue(bar->maximum());
}

// ---------------------------------------------------------------- following a run

bool TrainingPage::openRun(const QString& folderOrStore, const QString& runName) {
  const QFileInfo info(folderOrStore);
  const QString store = info.isDir() ? storeForFolder(folderOrStore) : folderOrStore;
  if (!QFileInfo(store).isFile()) {
    showMessage(QStringLiteral("'%1' is not a run folder: it has no runs.sqlite (expnet train --out writes one).")
                    .arg(folderOrStore),
                true);
    return false;
  }
  if (info.isDir() && !process_->isRunning()) setOutputDir(folderOrStore);
  if (store != remote_->mirrorPath() || runName != remote_->runName()) remote_->detach();
  fillFormFromRun_ = !process_->isRunning();
  followingChild_ = false;
  eta_.reset();
  poller_->follow(store, runName);
  return true;
}

void TrainingPage::onSnapshot(const RunSnapshot& snapshot) {
  snapshot_ = snapshot;
  if (!snapshot.found) {
    // A child's run may not exist yet (or never, when the trainer failed early:
    // its own message says why); only an opened run's absence is news.
    if (!followingChild_) showMessage(snapshot.error, true);
    return;
  }
  if (poller_->runName().isEmpty()) poller_->follow(snapshot.storePath, QString::fromStdString(snapshot.run.name));
  if (fillFormFromRun_ && !process_->isRunning()) {
    // The form shows the opened run's recipe, so Resume and a re-run start from it.
    fillFormFromRun_ = false;
    setConfigJson(QByteArray::fromStdString(snapshot.run.config_json));
    recipe_->showSource(QStringLiteral("(from the run)"));
  }
  runTitle_->setText(QStringLiteral("%1 — %2").arg(QString::fromStdString(snapshot.run.name),
                                                   QString::fromStdString(snapshot.run.status)));
  runTitle_->setToolTip(QStringLiteral("Run %1 in %2\nFolder: %3")
                            .arg(snapshot.run.id)
                            .arg(snapshot.storePath, QString::fromStdString(snapshot.run.out_dir)));
  // Read often while a trainer or a host's mirror may change it (a resumed run shows its old state first).
  poller_->setIdle(snapshot.run.status != "running" && !trainerActive() && !remote_->isFollowing());
  charts_->setData(snapshot.storePath + '#' + QString::number(snapshot.run.id), snapshot.steps, snapshot.validations);
  samplesPanel_->show(snapshot);
  storeRuns_->show(snapshot);
  updateProgress();
  updateButtons();
  emit snapshotUpdated();
}

void TrainingPage::updateProgress() {
  progressBar_->setVisible(snapshot_.found || process_->isRunning());
  if (!snapshot_.found) {
    if (process_->isRunning())
      progressLabel_->setText(QStringLiteral("Preparing: dataset, vocabulary and model (the run appears in the store next)"));
    return;
  }
  const std::string& status = snapshot_.run.status;
  const bool liveBar = haveProgress_ && process_->isRunning();
  progress_ = runProgress(status, snapshot_.config.value(QStringLiteral("stages")).toArray(), snapshot_.stageNames,
                          snapshot_.steps, snapshot_.validations, liveBar ? &lastProgress_ : nullptr);
  progressBar_->setValue(int(std::lround(progress_.fraction * 1000)));
  etaSeconds_ = status == "running" ? eta_.update(progress_.fraction, QDateTime::currentMSecsSinceEpoch()) : -1;
  progressText_ = progressSummary(status, progress_, etaSeconds_, snapshot_.steps.size(), snapshot_.validations.size());
  progressLabel_->setText(QStringLiteral("%1% · %2").arg(int(std::floor(progress_.fraction * 100))).arg(progressText_));
  progressLabel_->setToolTip(QStringLiteral("ETA: the pace since the page started following this run, over all stages "
                                            "(stages differ in speed: SCST is slower than XE)"));
}

void TrainingPage::updateButtons() {
  const bool running = trainerActive();
  if (running) fillFormFromRun_ = false;
  startButton_->setEnabled(!running);
  stopButton_->setEnabled(process_->isRunning() ? !process_->stopRequested()
                                                : remote_->isFollowing() && !remote_->stopRequested());
  where_->setEnabled(!running);
  const QString out = outDir_->text().trimmed();
  if (!where().isEmpty()) {  // the host's folder: its store's mirror says what can be resumed
    const std::string& status = snapshot_.run.status;
    resumeButton_->setEnabled(!running && snapshot_.found && (status == "interrupted" || status == "failed"));
    recipe_->setEditable(!running);
    outDir_->setEnabled(!running);
    return;
  }
  // A finished run has nothing left to resume.
  const bool finishedHere = snapshot_.found && snapshot_.run.status == "finished" &&
                            QDir(QString::fromStdString(snapshot_.run.out_dir)).canonicalPath() == QDir(out).canonicalPath();
  // Another trainer writing this run right now (its WAL changed lately): a second one must not start.
  const bool trainedElsewhere =
      !running && snapshot_.found && snapshot_.run.status == "running" &&
      QFileInfo(snapshot_.storePath + QStringLiteral("-wal")).lastModified().secsTo(QDateTime::currentDateTime()) < 120;
  resumeButton_->setEnabled(!running && hasCheckpoint(out) && !finishedHere && !trainedElsewhere);
  recipe_->setEditable(!running);
  outDir_->setEnabled(!running);
}

void TrainingPage::showMessage(const QString& text, bool error) {
  message_->setText(text);
  message_->setVisible(!text.isEmpty());
  message_->setKind(error ? HintLabel::Kind::Error : HintLabel::Kind::Status);
}

bool TrainingPage::isBusy() const { return poller_->waitingForFirst(); }

QJsonObject TrainingPage::describe() const {
  QJsonObject d;
  d.insert(QStringLiteral("run"), snapshot_.found ? QJsonValue(QString::fromStdString(snapshot_.run.name)) : QJsonValue());
  d.insert(QStringLiteral("status"), snapshot_.found ? QJsonValue(QString::fromStdString(snapshot_.run.status)) : QJsonValue());
  d.insert(QStringLiteral("store"), poller_->storePath().isEmpty() ? QJsonValue() : QJsonValue(poller_->storePath()));
  if (snapshot_.found) {
    d.insert(QStringLiteral("out_dir"), QString::fromStdString(snapshot_.run.out_dir));
    QJsonArray stages;
    for (const auto& s : snapshot_.stageNames) stages << s;
    d.insert(QStringLiteral("stages"), stages);
    d.insert(QStringLiteral("step_rows"), qint64(snapshot_.steps.size()));
    d.insert(QStringLiteral("validation_rows"), qint64(snapshot_.validations.size()));
  }
  if (!snapshot_.error.isEmpty()) d.insert(QStringLiteral("store_error"), snapshot_.error);
  d.insert(QStringLiteral("process"), QJsonObject{{"program", process_->program()},
                                                  {"running", process_->isRunning()},
                                                  {"command", process_->commandLine()},
                                                  {"exit_code", lastExitCode_}});
  d.insert(QStringLiteral("progress"),
           QJsonObject{{"fraction", progress_.fraction},
                       {"text", progressText_},
                       {"eta_seconds", etaSeconds_ >= 0 ? QJsonValue(etaSeconds_) : QJsonValue()},
                       {"stage_eta_seconds", progress_.stageEtaSeconds >= 0 ? QJsonValue(progress_.stageEtaSeconds) : QJsonValue()}});
  d.insert(QStringLiteral("series"), charts_->describe());
  d.insert(QStringLiteral("log_scale"), charts_->logScale());
  d.insert(QStringLiteral("samples"), samplesPanel_->describe());
  d.insert(QStringLiteral("runs"), storeRuns_->describe());
  d.insert(QStringLiteral("where"), where());
  d.insert(QStringLiteral("remote"), QJsonObject{{"host", remote_->host()}, {"store", remote_->store()},
                                                 {"following", remote_->isFollowing()}, {"background", int(remote_->backgroundRuns().size())}});
  d.insert(QStringLiteral("log_lines"), log_->blockCount() - (log_->toPlainText().isEmpty() ? 1 : 0));
  d.insert(QStringLiteral("message"), message_->text());
  QJsonObject form = recipe_->describe();
  form.insert(QStringLiteral("out_dir"), outDir_->text());
  d.insert(QStringLiteral("form"), form);
  return d;
}

// ---------------------------------------------------------------- settings

void TrainingPage::restoreSettings() {
  QSettings settings;
  settings.beginGroup(QStringLiteral("training"));
  const QString preset = settings.value(QStringLiteral("preset")).toString();
  if (!preset.isEmpty()) recipe_->setPreset(preset);
  const QByteArray form = settings.value(QStringLiteral("form")).toByteArray();
  if (!form.isEmpty()) setConfigJson(form);
  setOutputDir(settings.value(QStringLiteral("outDir")).toString());
  setWhere(settings.value(QStringLiteral("where")).toString());
  // The run shown when the studio closed is shown again (its curves, samples, status).
  if (where().isEmpty() && QFileInfo(storeForFolder(outDir_->text())).isFile() && openRun(outDir_->text()))
    fillFormFromRun_ = false;  // the form as it was left
  // A run on a host goes on while the studio is closed: follow it again, from the mirror's cursor.
  for (const QVariant& run : settings.value(QStringLiteral("remoteRuns")).toList()) {
    const QStringList r = run.toStringList();
    if (r.size() == 4 && r[3] == QLatin1String("shown") && !remote_->isActive()) remote_->follow(r[0], r[1], r[2]);
    else if (r.size() == 4) remote_->followInBackground(r[0], r[1], r[2]);
  }
  recipe_->setThreads(settings.value(QStringLiteral("threads"), 0).toInt());
  charts_->setLogScale(settings.value(QStringLiteral("logScale"), false).toBool());
  split_->restoreState(settings.value(QStringLiteral("split")).toByteArray());
  monitorSplit_->restoreState(settings.value(QStringLiteral("monitorSplit")).toByteArray());
  showMessage(QString(), false);
}

QString TrainingPage::workLostOnQuit() const {
  if (!process_->isRunning() || process_->stopRequested()) return {};
  return QStringLiteral("%1 is training on this computer, and quitting stops it. Stop it with a checkpoint first: Resume "
                        "continues it after the next start.").arg(runTitle_->text().section(QStringLiteral(" — "), 0, 0));
}

void TrainingPage::saveSettings() const {
  QSettings settings;
  settings.beginGroup(QStringLiteral("training"));
  settings.setValue(QStringLiteral("preset"), recipe_->preset());
  QString error;
  const QJsonObject config = formConfig(&error);
  if (error.isEmpty()) settings.setValue(QStringLiteral("form"), QJsonDocument(config).toJson(QJsonDocument::Compact));
  settings.setValue(QStringLiteral("outDir"), outDir_->text());
  settings.setValue(QStringLiteral("where"), where());
  QVariantList remoteRuns;  // {host, store, run, shown|background}
  if (remote_->isFollowing()) remoteRuns << QStringList{remote_->host(), remote_->store(), remote_->runName(), "shown"};
  for (QStringList run : remote_->backgroundRuns()) remoteRuns << (run << QStringLiteral("background"));
  settings.setValue(QStringLiteral("remoteRuns"), remoteRuns);
  settings.setValue(QStringLiteral("threads"), recipe_->threads());
  settings.setValue(QStringLiteral("logScale"), charts_->logScale());
  settings.setValue(QStringLiteral("split"), split_->saveState());
  settings.setValue(QStringLiteral("monitorSplit"), monitorSplit_->saveState());
}

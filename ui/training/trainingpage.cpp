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
#include "expnet/system/atomic_file.h"
#include "shell/studiocontext.h"
#include "training/recipeform.h"
#include "training/trainingcharts.h"
#include "training/trainingmodels.h"
#include "training/trainingprogress.h"

TrainingPage::TrainingPage(StudioContext* context, QWidget* parent)
    : StudioPage(parent),
      context_(context),
      process_(new TrainingProcess(this)),
      poller_(new RunStorePoller(this)),
      runs_(new RunListModel(this)),
      samples_(new SampleModel(this)),
      recipe_(new RecipeForm) {
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(8, 8, 8, 8);
  split_ = new QSplitter(Qt::Horizontal);
  auto* scroll = new QScrollArea;
  scroll->setWidget(buildForm());
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  scroll->setMinimumWidth(430);
  split_->addWidget(scroll);
  split_->addWidget(buildMonitor());
  split_->setStretchFactor(0, 0);
  split_->setStretchFactor(1, 1);
  split_->setSizes({430, 850});
  layout->addWidget(split_);

  connect(process_, &TrainingProcess::logLine, this, &TrainingPage::appendLog);
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
  connect(poller_, &RunStorePoller::snapshotReady, this, &TrainingPage::onSnapshot);
  connect(recipe_, &RecipeForm::message, this, &TrainingPage::showMessage);
  recipe_->setConfigFolder([this] { return outDir_->text(); });
  applyPreset(QStringLiteral("shapes-demo"));
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
  outDir_ = new QLineEdit;
  outDir_->setObjectName(QStringLiteral("outDir"));
  outDir_->setPlaceholderText(QStringLiteral("run folder (checkpoints, runs.sqlite)"));
  outDir_->setToolTip(QStringLiteral("Run folder: checkpoints/, final.pth and its own runs.sqlite"));
  connect(outDir_, &QLineEdit::editingFinished, this, &TrainingPage::updateButtons);
  auto* browseOut = new BrowseButton(outDir_, QStringLiteral("Pick the run folder"), QString(), BrowseButton::Mode::Folder);
  connect(browseOut, &BrowseButton::chosen, this, &TrainingPage::setOutputDir);
  outputLayout->addWidget(browseOut->row());
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
  message_ = new HintLabel(QString(), HintLabel::Kind::Status);
  message_->setObjectName(QStringLiteral("message"));
  message_->setWordWrap(true);
  message_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  outputLayout->addWidget(message_);
  column->addWidget(output);
  column->addWidget(recipe_, 1);
  column->addStretch(0);
  return panel;
}

QWidget* TrainingPage::buildRunsBox() {
  auto* box = new QWidget;
  auto* layout = new QVBoxLayout(box);
  layout->setContentsMargins(4, 4, 4, 4);
  runsView_ = new QTableView;
  runsView_->setObjectName(QStringLiteral("runs"));
  runsView_->setModel(runs_);
  runsView_->setSelectionBehavior(QAbstractItemView::SelectRows);
  runsView_->setSelectionMode(QAbstractItemView::SingleSelection);
  runsView_->verticalHeader()->hide();
  runsView_->verticalHeader()->setDefaultSectionSize(22);
  runsView_->horizontalHeader()->setStretchLastSection(true);
  runsView_->setToolTip(QStringLiteral("Runs of the followed run store; click one to show it (finished or running)"));
  runsView_->setMinimumHeight(90);
  connect(runsView_, &QTableView::clicked, this, [this](const QModelIndex& index) {
    const auto& run = runs_->rows().at(size_t(index.row()));
    if (QString::fromStdString(run.name) != snapshot_.run.name.c_str()) openRun(poller_->storePath(), QString::fromStdString(run.name));
  });
  layout->addWidget(runsView_, 1);
  return box;
}

QWidget* TrainingPage::buildMonitor() {
  auto* panel = new QWidget;
  auto* layout = new QVBoxLayout(panel);
  layout->setContentsMargins(6, 0, 0, 0);
  runTitle_ = new QLabel(QStringLiteral("No run: start one with the form, or open a run folder (Ctrl+Shift+O)"));
  runTitle_->setObjectName(QStringLiteral("runTitle"));
  runTitle_->setStyleSheet(QStringLiteral("font-size: 12pt; font-weight: bold"));
  runTitle_->setTextInteractionFlags(Qt::TextSelectableByMouse);
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
  progressRow->addWidget(progressBar_);
  progressRow->addWidget(progressLabel_, 1);
  layout->addLayout(progressRow);

  monitorSplit_ = new QSplitter(Qt::Vertical);
  charts_ = new TrainingCharts;
  monitorSplit_->addWidget(charts_);
  tabs_ = new QTabWidget;
  auto* samplesPanel = new QWidget;
  auto* samplesLayout = new QVBoxLayout(samplesPanel);
  samplesLayout->setContentsMargins(4, 4, 4, 4);
  samplesTitle_ = new QLabel(QStringLiteral("No validation yet"));
  samplesLayout->addWidget(samplesTitle_);
  samplesView_ = new QTableView;
  samplesView_->setObjectName(QStringLiteral("samples"));
  samplesView_->setModel(samples_);
  samplesView_->verticalHeader()->hide();
  samplesView_->verticalHeader()->setDefaultSectionSize(22);
  samplesView_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  samplesView_->horizontalHeader()->setSectionResizeMode(SampleModel::ImageColumn, QHeaderView::ResizeToContents);
  samplesView_->setWordWrap(false);
  samplesLayout->addWidget(samplesView_, 1);
  tabs_->addTab(samplesPanel, QStringLiteral("Sample captions"));
  log_ = new QPlainTextEdit;
  log_->setObjectName(QStringLiteral("log"));
  log_->setReadOnly(true);
  log_->setMaximumBlockCount(5000);
  log_->setFont(QFont(QStringLiteral("monospace"), 9));
  log_->setPlaceholderText(QStringLiteral("The output of a training started here shows up in this log."));
  tabs_->addTab(log_, QStringLiteral("Log"));
  tabs_->addTab(buildRunsBox(), QStringLiteral("Runs in the store"));
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
  if (process_->isRunning()) return;
  QString error;
  const QJsonObject config = formConfig(&error);
  if (!error.isEmpty()) {
    showMessage(error, true);
    return;
  }
  const QString out = outDir_->text().trimmed();
  if (out.isEmpty()) {
    showMessage(QStringLiteral("Choose an output folder for the run first."), true);
    return;
  }
  if (hasCheckpoint(out)) {
    showMessage(QStringLiteral("'%1' already has checkpoints: press Resume to continue that run, or choose another folder.")
                    .arg(out),
                true);
    return;
  }
  if (!QDir().mkpath(out)) {
    showMessage(QStringLiteral("cannot create '%1': check the parent folder is writable").arg(out), true);
    return;
  }
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
  if (process_->isRunning()) return;
  const QString out = outDir_->text().trimmed();
  if (!hasCheckpoint(out)) {
    showMessage(QStringLiteral("'%1' has no checkpoint to resume from (checkpoints/latest.json).").arg(out), true);
    return;
  }
  // The config the run started with: ours, or the one in the run store.
  QString configPath = QDir(out).filePath(QStringLiteral("studio-config.json"));
  if (!QFileInfo::exists(configPath)) {
    const RunSnapshot s = loadRunSnapshot(storeForFolder(out), QString());
    if (!s.found) {
      showMessage(QStringLiteral("cannot resume: %1").arg(s.error), true);
      return;
    }
    try {
      expnet::write_file_atomic(configPath.toStdString(), s.run.config_json);
    } catch (const std::exception& e) {
      showMessage(QString::fromStdString(e.what()), true);
      return;
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
  followingChild_ = true;
  haveProgress_ = false;
  lastExitCode_ = -1;
  log_->clear();
  // Nothing of the previously shown run stays on screen.
  snapshot_ = RunSnapshot();
  charts_->clear();
  samples_->setRows({});
  runTitle_->setText(QStringLiteral("%1 — starting").arg(runName));
  progressBar_->setValue(0);
  progressBar_->setVisible(true);
  process_->start(configPath, out, resume, recipe_->threads());
  showMessage(resume ? QStringLiteral("Resuming %1…").arg(runName) : QStringLiteral("Starting %1…").arg(runName), false);
  // The run appears in the store once the trainer has prepared its data.
  poller_->follow(storeForFolder(out), runName);
  eta_.reset();
  updateButtons();
}

void TrainingPage::stop() {
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
  poller_->setIdle(snapshot.run.status != "running" && !process_->isRunning());
  charts_->setData(snapshot.steps, snapshot.validations);
  if (snapshot.samples.size() != samples_->rows().size() ||
      (!snapshot.samples.empty() && snapshot.samples.front().epoch != samples_->rows().front().epoch) ||
      (!snapshot.samples.empty() && snapshot.samples.front().stage != samples_->rows().front().stage)) {
    samples_->setRows(snapshot.samples);
  }
  if (!snapshot.samples.empty()) {
    const auto& first = snapshot.samples.front();
    const QString stage = snapshot.stageNames.value(int(first.stage), QString::number(first.stage));
    samplesTitle_->setText(QStringLiteral("Latest validation: stage %1, epoch %2 (%3 of the validation images)")
                               .arg(stage)
                               .arg(first.epoch + 1)
                               .arg(snapshot.samples.size()));
  } else {
    samplesTitle_->setText(QStringLiteral("No validation yet: sample captions appear after the first epoch"));
  }
  // The run list: keep the selection on the followed run.
  const auto& runs = snapshot.runs;
  bool changed = runs.size() != runs_->rows().size();
  for (size_t i = 0; !changed && i < runs.size(); ++i)
    changed = runs[i].status != runs_->rows()[i].status || runs[i].steps != runs_->rows()[i].steps;
  if (changed) {
    runs_->setRows(runs);
    runsView_->resizeColumnsToContents();
    const int row = runs_->rowOf(QString::fromStdString(snapshot.run.name));
    if (row >= 0) runsView_->selectRow(row);
  }
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
  const bool running = process_->isRunning();
  if (running) fillFormFromRun_ = false;
  startButton_->setEnabled(!running);
  stopButton_->setEnabled(running && !process_->stopRequested());
  const QString out = outDir_->text().trimmed();
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
  QJsonArray samples;
  for (const auto& s : samples_->rows())
    samples << QJsonObject{{"image", QString::fromStdString(s.image)},
                           {"caption", QString::fromStdString(s.caption)},
                           {"reference", QString::fromStdString(s.reference)}};
  d.insert(QStringLiteral("samples"), samples);
  QJsonArray runs;
  for (const auto& r : runs_->rows())
    runs << QJsonObject{{"name", QString::fromStdString(r.name)}, {"status", QString::fromStdString(r.status)}, {"steps", qint64(r.steps)}};
  d.insert(QStringLiteral("runs"), runs);
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
  recipe_->setThreads(settings.value(QStringLiteral("threads"), 0).toInt());
  charts_->setLogScale(settings.value(QStringLiteral("logScale"), false).toBool());
  split_->restoreState(settings.value(QStringLiteral("split")).toByteArray());
  monitorSplit_->restoreState(settings.value(QStringLiteral("monitorSplit")).toByteArray());
  showMessage(QString(), false);
}

void TrainingPage::saveSettings() const {
  QSettings settings;
  settings.beginGroup(QStringLiteral("training"));
  settings.setValue(QStringLiteral("preset"), recipe_->preset());
  QString error;
  const QJsonObject config = formConfig(&error);
  if (error.isEmpty()) settings.setValue(QStringLiteral("form"), QJsonDocument(config).toJson(QJsonDocument::Compact));
  settings.setValue(QStringLiteral("outDir"), outDir_->text());
  settings.setValue(QStringLiteral("threads"), recipe_->threads());
  settings.setValue(QStringLiteral("logScale"), charts_->logScale());
  settings.setValue(QStringLiteral("split"), split_->saveState());
  settings.setValue(QStringLiteral("monitorSplit"), monitorSplit_->saveState());
}

#include "training/trainingpage.h"

#include <QAction>
#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
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
#include <QSpinBox>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <climits>
#include <cmath>

#include "shell/studiocontext.h"
#include "expnet/system/atomic_file.h"
#include "expnet/model/model_config.h"
#include "expnet/train/trainer.h"
#include "training/trainingcharts.h"
#include "training/trainingmodels.h"

namespace {
// The stage fields of docs/training.md, in the order the table shows them.
enum class FieldType { Text, Integer, Real };
struct StageField {
  const char* key;
  FieldType type;
  const char* tip;
};
const StageField kStageFields[] = {
    {"name", FieldType::Text, "Stage name, shown in the log and the charts"},
    {"objective", FieldType::Text, "xe (cross-entropy with label smoothing) or scst (self-critical, CIDEr-D reward)"},
    {"backbone", FieldType::Text, "frozen (features extracted once, cached) or train (end to end)"},
    {"epochs", FieldType::Integer, "Epochs of this stage"},
    {"batch", FieldType::Integer, "Micro-batch: caption pairs (or images, see batch_unit) for xe, images for scst"},
    {"batch_unit", FieldType::Text, "xe: caption (pairs, the reference) or image (each image with all its captions: "
                                    "the backbone runs once per image)"},
    {"accumulate", FieldType::Integer, "Micro-batches per optimizer step (losses summed)"},
    {"lr", FieldType::Real, "Peak learning rate (RAdam)"},
    {"schedule", FieldType::Text, "reference (paper warm-up and annealing), linear (linear warm-up) or fixed"},
    {"warmup", FieldType::Integer, "Warm-up iterations (micro-batches)"},
    {"anneal_factor", FieldType::Real, "Learning rate multiplied by this every anneal_every epochs"},
    {"anneal_every", FieldType::Integer, "Epochs between annealing steps"},
    {"clip", FieldType::Real, "Max gradient norm; 0 = no clipping"},
    {"dropout", FieldType::Real, "All captioner dropouts"},
    {"drop_path", FieldType::Real, "Swin drop-path (end-to-end stages only)"},
    {"max_batches_per_epoch", FieldType::Integer, "Cap on micro-batches per epoch; 0 = the whole epoch (quick runs)"},
};
constexpr int kStageFieldCount = int(sizeof kStageFields / sizeof kStageFields[0]);
const char* kFromConfig = "(the config's own)";

QPushButton* actionButton(const QString& text, const QKeySequence& keys, const QString& tip, QWidget* owner) {
  auto* button = new QPushButton(text);
  auto* action = new QAction(text, owner);
  action->setShortcut(keys);
  action->setShortcutContext(Qt::WidgetWithChildrenShortcut);
  owner->addAction(action);
  QObject::connect(action, &QAction::triggered, button, [button] {
    if (button->isEnabled()) button->click();
  });
  button->setToolTip(QStringLiteral("%1 (%2)").arg(tip, keys.toString(QKeySequence::NativeText)));
  return button;
}

QString jsonCell(const QJsonValue& v) {
  if (v.isString()) return v.toString();
  if (v.isDouble()) return QString::number(v.toDouble(), 'g', 10);
  return {};
}

QString formatSeconds(double s) {
  const qint64 total = qint64(std::llround(s));
  if (total >= 3600) return QStringLiteral("%1h %2m").arg(total / 3600).arg((total % 3600) / 60, 2, 10, QChar('0'));
  if (total >= 60) return QStringLiteral("%1m %2s").arg(total / 60).arg(total % 60, 2, 10, QChar('0'));
  return QStringLiteral("%1s").arg(total);
}
}  // namespace

TrainingPage::TrainingPage(StudioContext* context, QWidget* parent)
    : StudioPage(parent),
      context_(context),
      process_(new TrainingProcess(this)),
      poller_(new RunStorePoller(this)),
      runs_(new RunListModel(this)),
      samples_(new SampleModel(this)) {
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
  auto* outRow = new QHBoxLayout;
  outDir_ = new QLineEdit;
  outDir_->setObjectName(QStringLiteral("outDir"));
  outDir_->setPlaceholderText(QStringLiteral("run folder (checkpoints, runs.sqlite)"));
  outDir_->setToolTip(QStringLiteral("Run folder: checkpoints/, final.pth and its own runs.sqlite"));
  connect(outDir_, &QLineEdit::editingFinished, this, &TrainingPage::updateButtons);
  auto* browseOut = new QPushButton(QStringLiteral("…"));
  browseOut->setMaximumWidth(32);
  browseOut->setToolTip(QStringLiteral("Pick the run folder"));
  connect(browseOut, &QPushButton::clicked, this, &TrainingPage::browseOutputDir);
  outRow->addWidget(outDir_, 1);
  outRow->addWidget(browseOut);
  outputLayout->addLayout(outRow);
  auto* buttons = new QHBoxLayout;
  startButton_ = actionButton(QStringLiteral("Start"), QKeySequence(Qt::CTRL | Qt::Key_Return),
                              QStringLiteral("Start `expnet train` with this form in the run folder"), this);
  startButton_->setObjectName(QStringLiteral("start"));
  stopButton_ = actionButton(QStringLiteral("Stop"), QKeySequence(Qt::CTRL | Qt::Key_Period),
                             QStringLiteral("Stop the trainer: it writes a checkpoint after the current step"), this);
  stopButton_->setObjectName(QStringLiteral("stop"));
  resumeButton_ = actionButton(QStringLiteral("Resume"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_R),
                               QStringLiteral("Continue the run in the folder exactly from its last checkpoint"), this);
  resumeButton_->setObjectName(QStringLiteral("resume"));
  connect(startButton_, &QPushButton::clicked, this, &TrainingPage::start);
  connect(stopButton_, &QPushButton::clicked, this, &TrainingPage::stop);
  connect(resumeButton_, &QPushButton::clicked, this, &TrainingPage::resume);
  buttons->addWidget(startButton_);
  buttons->addWidget(stopButton_);
  buttons->addWidget(resumeButton_);
  outputLayout->addLayout(buttons);
  message_ = new QLabel;
  message_->setObjectName(QStringLiteral("message"));
  message_->setWordWrap(true);
  message_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  outputLayout->addWidget(message_);
  auto* open = actionButton(QStringLiteral("Open run…"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_O),
                            QStringLiteral("Open a run folder (with runs.sqlite) to follow a finished or running run"), this);
  connect(open, &QPushButton::clicked, this, &TrainingPage::browseRun);
  buttons->addWidget(open);
  column->addWidget(output);
  auto* recipe = new QGroupBox(QStringLiteral("Recipe"));
  auto* form = new QFormLayout(recipe);
  form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  preset_ = new QComboBox;
  preset_->setObjectName(QStringLiteral("preset"));
  for (const auto& name : expnet::train_preset_names()) preset_->addItem(QString::fromStdString(name));
  preset_->setCurrentText(QStringLiteral("shapes-demo"));
  preset_->setToolTip(QStringLiteral("Built-in recipe that fills the form: shapes-demo (small model, generated shapes "
                                     "dataset, minutes on a CPU) or paper (stages A-D of ExpansionNet v2 on COCO)"));
  connect(preset_, &QComboBox::textActivated, this, &TrainingPage::applyPreset);
  auto* presetRow = new QHBoxLayout;
  presetRow->addWidget(preset_, 1);
  auto* loadConfig = new QPushButton(QStringLiteral("Load…"));
  loadConfig->setToolTip(QStringLiteral("Fill the form from a training config JSON (docs/training.md)"));
  connect(loadConfig, &QPushButton::clicked, this, &TrainingPage::loadConfigFile);
  auto* saveConfig = new QPushButton(QStringLiteral("Save…"));
  saveConfig->setToolTip(QStringLiteral("Save the form as a training config JSON for `expnet train --config`"));
  connect(saveConfig, &QPushButton::clicked, this, &TrainingPage::saveConfigFile);
  presetRow->addWidget(loadConfig);
  presetRow->addWidget(saveConfig);
  form->addRow(QStringLiteral("Preset"), presetRow);

  name_ = new QLineEdit;
  name_->setObjectName(QStringLiteral("runName"));
  name_->setToolTip(QStringLiteral("Run name in the run store (unique per store)"));
  form->addRow(QStringLiteral("Run name"), name_);
  dataset_ = new QLineEdit;
  dataset_->setObjectName(QStringLiteral("dataset"));
  dataset_->setToolTip(QStringLiteral("Dataset file (COCO/Karpathy JSON, CSV, JSON Lines; docs/datasets.md), or "
                                      "'shapes' for the generated shapes set (written into the output folder)"));
  auto* datasetRow = new QHBoxLayout;
  datasetRow->addWidget(dataset_, 1);
  auto* browseDataset = new QPushButton(QStringLiteral("…"));
  browseDataset->setToolTip(QStringLiteral("Pick a dataset file"));
  browseDataset->setMaximumWidth(32);
  connect(browseDataset, &QPushButton::clicked, this, [this] {
    const QString file = QFileDialog::getOpenFileName(this, QStringLiteral("Dataset"), dataset_->text(),
                                                      QStringLiteral("Datasets (*.json *.jsonl *.csv);;All files (*)"));
    if (!file.isEmpty()) dataset_->setText(file);
  });
  datasetRow->addWidget(browseDataset);
  form->addRow(QStringLiteral("Dataset"), datasetRow);
  shapesImages_ = new QSpinBox;
  shapesImages_->setObjectName(QStringLiteral("shapesImages"));
  shapesImages_->setRange(10, 1000000);
  shapesImages_->setToolTip(QStringLiteral("Images generated for the 'shapes' dataset"));
  form->addRow(QStringLiteral("Shapes images"), shapesImages_);
  model_ = new QComboBox;
  model_->setObjectName(QStringLiteral("model"));
  model_->addItem(QString::fromLatin1(kFromConfig));
  for (const auto& name : expnet::model_preset_names()) model_->addItem(QString::fromStdString(name));
  model_->setToolTip(QStringLiteral("Model preset (docs/model.md), or the model object of the preset / loaded config"));
  form->addRow(QStringLiteral("Model"), model_);
  seed_ = new QSpinBox;
  seed_->setRange(0, INT_MAX);
  seed_->setToolTip(QStringLiteral("Seed of initialisation, dropout, sampling and loader shuffling"));
  form->addRow(QStringLiteral("Seed"), seed_);
  validationImages_ = new QSpinBox;
  validationImages_->setRange(1, 1000000);
  validationImages_->setToolTip(QStringLiteral("Validation images scored (CIDEr-D, BLEU) after every epoch"));
  form->addRow(QStringLiteral("Validation images"), validationImages_);
  threads_ = new QSpinBox;
  threads_->setObjectName(QStringLiteral("threads"));
  threads_->setRange(0, 256);
  threads_->setSpecialValueText(QStringLiteral("all cores"));
  threads_->setToolTip(QStringLiteral("CPU threads of the trainer process (--threads)"));
  form->addRow(QStringLiteral("Threads"), threads_);
  column->addWidget(recipe);
  column->addWidget(buildStagesBox(), 1);

  column->addStretch(0);
  return panel;
}

QWidget* TrainingPage::buildStagesBox() {
  auto* box = new QGroupBox(QStringLiteral("Stages"));
  auto* layout = new QVBoxLayout(box);
  stages_ = new QTableWidget(kStageFieldCount, 0);
  stages_->setObjectName(QStringLiteral("stages"));
  stages_->setToolTip(QStringLiteral("One column per stage, run left to right; each gets a fresh RAdam and schedule"));
  QStringList rows;
  for (int r = 0; r < kStageFieldCount; ++r) {
    rows << QString::fromLatin1(kStageFields[r].key);
    auto* header = new QTableWidgetItem(rows.last());
    header->setToolTip(QString::fromLatin1(kStageFields[r].tip));
    stages_->setVerticalHeaderItem(r, header);
  }
  stages_->verticalHeader()->setDefaultSectionSize(22);
  stages_->horizontalHeader()->setDefaultSectionSize(78);
  stages_->setMinimumHeight(22 * kStageFieldCount + 30);
  layout->addWidget(stages_, 1);
  auto* row = new QHBoxLayout;
  auto* add = new QPushButton(QStringLiteral("Add stage"));
  add->setToolTip(QStringLiteral("Append a stage (a copy of the last one)"));
  connect(add, &QPushButton::clicked, this, &TrainingPage::addStage);
  auto* remove = new QPushButton(QStringLiteral("Remove stage"));
  remove->setToolTip(QStringLiteral("Remove the selected stage (column)"));
  connect(remove, &QPushButton::clicked, this, &TrainingPage::removeStage);
  row->addWidget(add);
  row->addWidget(remove);
  row->addStretch(1);
  layout->addLayout(row);
  return box;
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
    const auto& run = runs_->runs().at(size_t(index.row()));
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
  tabs_->setToolTip(QStringLiteral("Ctrl+1: sample captions, Ctrl+2: log, Ctrl+3: runs of the store"));
  for (int i = 0; i < 3; ++i) {
    auto* action = new QAction(this);
    action->setShortcut(QKeySequence(Qt::CTRL | Qt::Key(Qt::Key_1 + i)));
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

void TrainingPage::applyPreset(const QString& name) {
  try {
    const auto config = expnet::train_preset(name.toStdString());
    setConfigJson(QByteArray::fromStdString(config.to_json()));
    if (preset_->currentText() != name) preset_->setCurrentText(name);
    showMessage(name == QStringLiteral("paper")
                    ? QStringLiteral("The paper recipe needs the COCO Karpathy file: set Dataset.")
                    : QString(),
                false);
  } catch (const std::exception& e) {
    showMessage(QString::fromStdString(e.what()), true);
  }
}

bool TrainingPage::setConfigJson(const QByteArray& json, QString* error) {
  QJsonParseError parseError;
  const QJsonObject config = QJsonDocument::fromJson(json, &parseError).object();
  if (parseError.error != QJsonParseError::NoError || config.isEmpty()) {
    const QString why = QStringLiteral("not a training config: %1").arg(parseError.errorString());
    if (error) *error = why;
    showMessage(why, true);
    return false;
  }
  baseConfig_ = config;
  name_->setText(config.value(QStringLiteral("name")).toString(QStringLiteral("run")));
  dataset_->setText(config.value(QStringLiteral("dataset")).toString(QStringLiteral("shapes")));
  shapesImages_->setValue(config.value(QStringLiteral("shapes_images")).toInt(1500));
  const QJsonValue model = config.value(QStringLiteral("model"));
  model_->setCurrentText(model.isString() ? model.toString() : QString::fromLatin1(kFromConfig));
  seed_->setValue(config.value(QStringLiteral("seed")).toInt(1));
  validationImages_->setValue(config.value(QStringLiteral("validation_images")).toInt(100));
  fillStages(config.value(QStringLiteral("stages")).toArray());
  return true;
}

void TrainingPage::fillStages(const QJsonArray& stages) {
  stages_->setColumnCount(int(stages.size()));
  for (int c = 0; c < stages.size(); ++c) {
    const QJsonObject stage = stages.at(c).toObject();
    stages_->setHorizontalHeaderItem(c, new QTableWidgetItem(QStringLiteral("%1").arg(c + 1)));
    for (int r = 0; r < kStageFieldCount; ++r) {
      auto* item = new QTableWidgetItem(jsonCell(stage.value(QString::fromLatin1(kStageFields[r].key))));
      item->setToolTip(QString::fromLatin1(kStageFields[r].tip));
      stages_->setItem(r, c, item);
    }
  }
}

QJsonArray TrainingPage::stagesFromTable(QString* error) const {
  QJsonArray out;
  for (int c = 0; c < stages_->columnCount(); ++c) {
    QJsonObject stage;
    for (int r = 0; r < kStageFieldCount; ++r) {
      const auto& field = kStageFields[r];
      const QString text = stages_->item(r, c) ? stages_->item(r, c)->text().trimmed() : QString();
      if (text.isEmpty()) continue;  // the engine's default
      bool ok = true;
      QJsonValue value;
      if (field.type == FieldType::Integer)
        value = qint64(text.toLongLong(&ok));
      else if (field.type == FieldType::Real)
        value = text.toDouble(&ok);
      else
        value = text;
      if (!ok) {
        *error = QStringLiteral("stage %1, %2: '%3' is not a number").arg(c + 1).arg(QString::fromLatin1(field.key), text);
        return {};
      }
      stage.insert(QString::fromLatin1(field.key), value);
    }
    out << stage;
  }
  return out;
}

QJsonObject TrainingPage::formConfig(QString* error) const {
  QJsonObject config = baseConfig_;
  config.insert(QStringLiteral("name"), name_->text().trimmed());
  config.insert(QStringLiteral("dataset"), dataset_->text().trimmed());
  config.insert(QStringLiteral("shapes_images"), shapesImages_->value());
  if (model_->currentText() != QString::fromLatin1(kFromConfig)) config.insert(QStringLiteral("model"), model_->currentText());
  config.insert(QStringLiteral("seed"), seed_->value());
  config.insert(QStringLiteral("validation_images"), validationImages_->value());
  QString stageError;
  const QJsonArray stages = stagesFromTable(&stageError);
  if (!stageError.isEmpty()) {
    *error = stageError;
    return {};
  }
  config.insert(QStringLiteral("stages"), stages);
  if (name_->text().trimmed().isEmpty()) {
    *error = QStringLiteral("give the run a name");
    return {};
  }
  // The engine's own parser: the same strict checks and messages as `expnet train`.
  try {
    expnet::TrainConfig::from_json(QJsonDocument(config).toJson().toStdString(), "the form");
  } catch (const std::exception& e) {
    *error = QString::fromStdString(e.what());
    return {};
  }
  return config;
}

void TrainingPage::addStage() {
  const int c = stages_->columnCount();
  stages_->insertColumn(c);
  stages_->setHorizontalHeaderItem(c, new QTableWidgetItem(QString::number(c + 1)));
  for (int r = 0; r < kStageFieldCount; ++r) {
    const auto* previous = c > 0 ? stages_->item(r, c - 1) : nullptr;
    auto* item = new QTableWidgetItem(previous ? previous->text() : QString());
    item->setToolTip(QString::fromLatin1(kStageFields[r].tip));
    stages_->setItem(r, c, item);
  }
}

void TrainingPage::removeStage() {
  if (stages_->columnCount() <= 1) return;
  const int c = stages_->currentColumn() >= 0 ? stages_->currentColumn() : stages_->columnCount() - 1;
  stages_->removeColumn(c);
  for (int i = 0; i < stages_->columnCount(); ++i) stages_->setHorizontalHeaderItem(i, new QTableWidgetItem(QString::number(i + 1)));
}

void TrainingPage::setOutputDir(const QString& dir) {
  outDir_->setText(dir);
  updateButtons();
}

void TrainingPage::loadConfigFile() {
  const QString file = QFileDialog::getOpenFileName(this, QStringLiteral("Training config"), outDir_->text(),
                                                    QStringLiteral("JSON (*.json);;All files (*)"));
  if (file.isEmpty()) return;
  QFile in(file);
  if (!in.open(QIODevice::ReadOnly)) {
    showMessage(QStringLiteral("cannot read '%1'").arg(file), true);
    return;
  }
  QString error;
  if (setConfigJson(in.readAll(), &error)) {
    preset_->setCurrentIndex(-1);
    preset_->setPlaceholderText(QStringLiteral("(from %1)").arg(QFileInfo(file).fileName()));
    showMessage(QStringLiteral("Loaded %1").arg(file), false);
  }
}

void TrainingPage::saveConfigFile() {
  QString error;
  const QJsonObject config = formConfig(&error);
  if (!error.isEmpty()) {
    showMessage(error, true);
    return;
  }
  const QString file = QFileDialog::getSaveFileName(this, QStringLiteral("Save training config"),
                                                    name_->text() + QStringLiteral(".json"), QStringLiteral("JSON (*.json)"));
  if (file.isEmpty()) return;
  try {
    expnet::write_file_atomic(file.toStdString(), QJsonDocument(config).toJson().toStdString());
    showMessage(QStringLiteral("Saved %1").arg(file), false);
  } catch (const std::exception& e) {
    showMessage(QString::fromStdString(e.what()), true);
  }
}

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
  samples_->setSamples({});
  runTitle_->setText(QStringLiteral("%1 — starting").arg(runName));
  progressBar_->setValue(0);
  progressBar_->setVisible(true);
  process_->start(configPath, out, resume, threads_->value());
  showMessage(resume ? QStringLiteral("Resuming %1…").arg(runName) : QStringLiteral("Starting %1…").arg(runName), false);
  // The run appears in the store once the trainer has prepared its data.
  poller_->follow(storeForFolder(out), runName);
  etaStartFraction_ = -1;
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
  etaStartFraction_ = -1;
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
    preset_->setCurrentIndex(-1);
    preset_->setPlaceholderText(QStringLiteral("(from the run)"));
  }
  runTitle_->setText(QStringLiteral("%1 — %2").arg(QString::fromStdString(snapshot.run.name),
                                                   QString::fromStdString(snapshot.run.status)));
  runTitle_->setToolTip(QStringLiteral("Run %1 in %2\nFolder: %3")
                            .arg(snapshot.run.id)
                            .arg(snapshot.storePath, QString::fromStdString(snapshot.run.out_dir)));
  poller_->setIdle(snapshot.run.status != "running" && !process_->isRunning());
  charts_->setData(snapshot.steps, snapshot.validations);
  if (snapshot.samples.size() != samples_->samples().size() ||
      (!snapshot.samples.empty() && snapshot.samples.front().epoch != samples_->samples().front().epoch) ||
      (!snapshot.samples.empty() && snapshot.samples.front().stage != samples_->samples().front().stage)) {
    samples_->setSamples(snapshot.samples);
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
  bool changed = runs.size() != runs_->runs().size();
  for (size_t i = 0; !changed && i < runs.size(); ++i)
    changed = runs[i].status != runs_->runs()[i].status || runs[i].steps != runs_->runs()[i].steps;
  if (changed) {
    runs_->setRuns(runs);
    runsView_->resizeColumnsToContents();
    const int row = runs_->rowOf(QString::fromStdString(snapshot.run.name));
    if (row >= 0) runsView_->selectRow(row);
  }
  updateProgress();
  updateButtons();
  emit snapshotUpdated();
}

TrainingPage::StepsPerEpoch TrainingPage::countSteps(int stage, int epoch) const {
  StepsPerEpoch out;
  for (auto it = snapshot_.steps.rbegin(); it != snapshot_.steps.rend(); ++it) {
    if (it->stage < stage || (it->stage == stage && it->epoch < epoch)) break;  // rows are in step order
    if (it->stage != stage || it->epoch != epoch) continue;
    if (out.steps++ == 0) out.imagesPerSecond = it->images_per_s;  // the latest figure of the epoch
  }
  return out;
}

void TrainingPage::updateProgress() {
  progressBar_->setVisible(snapshot_.found || process_->isRunning());
  if (!snapshot_.found) {
    if (process_->isRunning())
      progressLabel_->setText(QStringLiteral("Preparing: dataset, vocabulary and model (the run appears in the store next)"));
    return;
  }
  const QJsonArray stages = snapshot_.config.value(QStringLiteral("stages")).toArray();
  QVector<int> epochs;
  int totalEpochs = 0;
  for (const auto& s : stages) {
    epochs << s.toObject().value(QStringLiteral("epochs")).toInt(1);
    totalEpochs += epochs.last();
  }
  const std::string& status = snapshot_.run.status;
  double done = 0;
  QString where;
  if (status == "finished") {
    done = totalEpochs;
  } else if (!snapshot_.steps.empty() || !snapshot_.validations.empty()) {
    int stage = 0, epoch = 0;
    double within = 0;
    if (!snapshot_.steps.empty()) {
      stage = int(snapshot_.steps.back().stage);
      epoch = int(snapshot_.steps.back().epoch);
    }
    // A validation row for that epoch: the epoch is complete.
    if (!snapshot_.validations.empty()) {
      const auto& v = snapshot_.validations.back();
      if (std::make_pair(int(v.stage), int(v.epoch)) >= std::make_pair(stage, epoch)) {
        stage = int(v.stage);
        epoch = int(v.epoch) + 1;
      }
    }
    const bool liveBar = haveProgress_ && process_->isRunning() && lastProgress_.total > 0 &&
                         lastProgress_.stage == snapshot_.stageNames.value(stage) && lastProgress_.epoch == epoch + 1;
    // Without the trainer's own bar (a run followed from the store): the step
    // rows of this epoch over the steps of a whole one.
    const QJsonObject stageConfig = stages.at(stage).toObject();
    const int accumulate = std::max(1, stageConfig.value(QStringLiteral("accumulate")).toInt(1));
    const int stepImages = accumulate * std::max(1, stageConfig.value(QStringLiteral("batch")).toInt(1));
    const StepsPerEpoch counted = countSteps(stage, epoch);
    int perEpoch = 0;
    if (const int cap = stageConfig.value(QStringLiteral("max_batches_per_epoch")).toInt(0); cap > 0)
      perEpoch = (cap + accumulate - 1) / accumulate;
    else if (epoch > 0)
      perEpoch = countSteps(stage, epoch - 1).steps;
    if (liveBar)
      within = double(lastProgress_.done) / lastProgress_.total;
    else if (perEpoch > 0)
      within = std::min(1.0, double(counted.steps) / perEpoch);
    // Rough ETA of this stage alone, from the trainer's images/s (validations not counted).
    stageEtaSeconds_ = -1;
    if (perEpoch > 0 && counted.imagesPerSecond > 0 && stage < epochs.size()) {
      const double remainingSteps = double(epochs[stage] - epoch - 1) * perEpoch + std::max(0, perEpoch - counted.steps);
      stageEtaSeconds_ = remainingSteps > 0 ? remainingSteps * stepImages / counted.imagesPerSecond : -1;
    }
    const bool validating = status == "running" && perEpoch > 0 && counted.steps >= perEpoch;
    for (int i = 0; i < stage && i < epochs.size(); ++i) done += epochs[i];
    done += epoch + within;
    const QString stageName = snapshot_.stageNames.value(stage, QString::number(stage + 1));
    if (stage < epochs.size())
      where = QStringLiteral("stage %1 (%2/%3) · epoch %4/%5")
                  .arg(stageName)
                  .arg(stage + 1)
                  .arg(epochs.size())
                  .arg(std::min(epoch + 1, epochs[stage]))
                  .arg(epochs[stage]);
    if (validating && !liveBar) where += QStringLiteral(" · validating");
    if (liveBar)
      where += QStringLiteral(" · batch %1/%2 · %3 img/s")
                   .arg(lastProgress_.done)
                   .arg(lastProgress_.total)
                   .arg(lastProgress_.imagesPerSecond, 0, 'f', 1);
  }
  fraction_ = totalEpochs > 0 ? std::clamp(done / totalEpochs, 0.0, 1.0) : 0;
  progressBar_->setValue(int(std::lround(fraction_ * 1000)));
  etaSeconds_ = -1;
  const bool live = status == "running";
  if (live) {
    const QDateTime now = QDateTime::currentDateTimeUtc();
    if (etaStartFraction_ < 0 || fraction_ < etaStartFraction_) {
      etaStart_ = now;
      etaStartFraction_ = fraction_;
    } else if (fraction_ > etaStartFraction_) {
      const double elapsed = etaStart_.msecsTo(now) / 1000.0;
      etaSeconds_ = elapsed * (1 - fraction_) / (fraction_ - etaStartFraction_);
    }
  }
  QString text;
  if (status == "finished")
    text = QStringLiteral("Finished: %1 optimizer steps, %2 validations").arg(snapshot_.steps.size()).arg(snapshot_.validations.size());
  else if (status == "interrupted")
    text = QStringLiteral("Interrupted at %1: Resume continues from the last checkpoint").arg(where);
  else if (live && etaSeconds_ >= 0)
    text = where + QStringLiteral(" · ETA %1").arg(formatSeconds(etaSeconds_));
  else if (live && stageEtaSeconds_ >= 0)
    text = where + QStringLiteral(" · this stage ends in ~%1").arg(formatSeconds(stageEtaSeconds_));
  else if (live)
    text = where + QStringLiteral(" · ETA after the next progress");
  else
    text = where.isEmpty() ? QString::fromStdString(status) : where;
  progressText_ = text;
  progressLabel_->setText(QStringLiteral("%1% · %2").arg(int(std::floor(fraction_ * 100))).arg(text));
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
  for (auto* w : std::initializer_list<QWidget*>{preset_, name_, dataset_, shapesImages_, model_, seed_, validationImages_,
                                                 threads_, stages_, outDir_})
    w->setEnabled(!running);
}

void TrainingPage::showMessage(const QString& text, bool error) {
  message_->setText(text);
  message_->setVisible(!text.isEmpty());
  message_->setStyleSheet(error ? QStringLiteral("color: #b00020") : QStringLiteral("color: #2b3440"));
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
           QJsonObject{{"fraction", fraction_},
                       {"text", progressText_},
                       {"eta_seconds", etaSeconds_ >= 0 ? QJsonValue(etaSeconds_) : QJsonValue()},
                       {"stage_eta_seconds", stageEtaSeconds_ >= 0 ? QJsonValue(stageEtaSeconds_) : QJsonValue()}});
  d.insert(QStringLiteral("series"), charts_->describe());
  d.insert(QStringLiteral("log_scale"), charts_->logScale());
  QJsonArray samples;
  for (const auto& s : samples_->samples())
    samples << QJsonObject{{"image", QString::fromStdString(s.image)},
                           {"caption", QString::fromStdString(s.caption)},
                           {"reference", QString::fromStdString(s.reference)}};
  d.insert(QStringLiteral("samples"), samples);
  QJsonArray runs;
  for (const auto& r : runs_->runs())
    runs << QJsonObject{{"name", QString::fromStdString(r.name)}, {"status", QString::fromStdString(r.status)}, {"steps", qint64(r.steps)}};
  d.insert(QStringLiteral("runs"), runs);
  d.insert(QStringLiteral("log_lines"), log_->blockCount() - (log_->toPlainText().isEmpty() ? 1 : 0));
  d.insert(QStringLiteral("message"), message_->text());
  d.insert(QStringLiteral("form"), QJsonObject{{"preset", preset_->currentText()},
                                               {"name", name_->text()},
                                               {"dataset", dataset_->text()},
                                               {"model", model_->currentText()},
                                               {"stages", stages_->columnCount()},
                                               {"out_dir", outDir_->text()}});
  return d;
}

// ---------------------------------------------------------------- settings

void TrainingPage::restoreSettings() {
  QSettings settings;
  settings.beginGroup(QStringLiteral("training"));
  const QString preset = settings.value(QStringLiteral("preset")).toString();
  if (!preset.isEmpty()) preset_->setCurrentText(preset);
  const QByteArray form = settings.value(QStringLiteral("form")).toByteArray();
  if (!form.isEmpty()) setConfigJson(form);
  setOutputDir(settings.value(QStringLiteral("outDir")).toString());
  threads_->setValue(settings.value(QStringLiteral("threads"), 0).toInt());
  charts_->setLogScale(settings.value(QStringLiteral("logScale"), false).toBool());
  split_->restoreState(settings.value(QStringLiteral("split")).toByteArray());
  monitorSplit_->restoreState(settings.value(QStringLiteral("monitorSplit")).toByteArray());
  showMessage(QString(), false);
}

void TrainingPage::saveSettings() const {
  QSettings settings;
  settings.beginGroup(QStringLiteral("training"));
  settings.setValue(QStringLiteral("preset"), preset_->currentText());
  QString error;
  const QJsonObject config = formConfig(&error);
  if (error.isEmpty()) settings.setValue(QStringLiteral("form"), QJsonDocument(config).toJson(QJsonDocument::Compact));
  settings.setValue(QStringLiteral("outDir"), outDir_->text());
  settings.setValue(QStringLiteral("threads"), threads_->value());
  settings.setValue(QStringLiteral("logScale"), charts_->logScale());
  settings.setValue(QStringLiteral("split"), split_->saveState());
  settings.setValue(QStringLiteral("monitorSplit"), monitorSplit_->saveState());
}

#include "datasets/evaluationpanel.h"

#include <QComboBox>
#include <QJsonArray>
#include <QJsonObject>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>

#include <utility>

#include "common/browsebutton.h"
#include "common/formfields.h"
#include "common/hintlabel.h"
#include "common/hostchoice.h"
#include "datasets/hostevaluation.h"

namespace {
// What the panel lists and describes of a stored evaluation.
QJsonObject summaryJson(const expnet::SampleEvaluation& e) {
  QJsonObject corpus;
  for (const auto& [key, value] : e.corpus) corpus.insert(QString::fromStdString(key), value);
  return {{"id", static_cast<qint64>(e.id)},
          {"db", QString::fromStdString(e.db)},
          {"model", QString::fromStdString(e.model)},
          {"split", QString::fromStdString(e.split)},
          {"options", QString::fromStdString(e.options)},
          {"created", QString::fromStdString(e.created)},
          {"checkpoint_sha256", QString::fromStdString(e.checkpoint_sha256)},
          {"resumed", static_cast<qint64>(e.resumed)},
          {"images", static_cast<qint64>(e.per_image.empty() ? e.samples : e.per_image.size())},
          {"corpus", corpus}};
}

QString evaluationLabel(const QJsonObject& e) {
  const double cider = e["corpus"].toObject()["CIDEr"].toDouble();
  return QStringLiteral("#%1 %2 · %3 · %4 images · CIDEr-D %5")
      .arg(e["id"].toInteger())
      .arg(e["model"].toString(), e["split"].toString())
      .arg(e["images"].toInteger())
      .arg(cider, 0, 'f', 3);
}
}  // namespace

EvaluationPanel::EvaluationPanel(QWidget* parent) : QGroupBox(QStringLiteral("Per-sample evaluation"), parent) {
  setObjectName(QStringLiteral("evaluationPanel"));
  model_ = new QComboBox;
  model_->setObjectName(QStringLiteral("evalModel"));
  model_->setEditable(true);
  model_->addItems({QStringLiteral("demo"), QStringLiteral("pnaic-demo-k5"), QStringLiteral("pnaic-demo-k2")});
  model_->setToolTip(QStringLiteral("A built-in model, or a checkpoint of ours (.pth; …)"));
  browse_ = new BrowseButton(model_, QStringLiteral("Choose a checkpoint"),
                             QStringLiteral("Checkpoints (*.pth *.pt);;All files (*)"));
  config_ = new QComboBox;
  config_->setObjectName(QStringLiteral("evalConfig"));
  config_->setEditable(true);
  config_->addItems({QString(), QStringLiteral("official"), QStringLiteral("small"), QStringLiteral("tiny")});
  config_->setToolTip(QStringLiteral("For the authors' checkpoints (rf_model.pth): the model preset or a config JSON; "
                                     "empty for checkpoints of ours, which carry it"));
  config_->lineEdit()->setPlaceholderText(QStringLiteral("config, if not in it"));
  vocab_ = new QLineEdit;
  vocab_->setObjectName(QStringLiteral("evalVocab"));
  vocab_->setPlaceholderText(QStringLiteral("vocabulary, if not in the checkpoint"));
  beam_ = integerField(QStringLiteral("evalBeam"), 1, 16, 3, QStringLiteral("greedy"),
                       QStringLiteral("Beam width (1 = greedy); part of the evaluation's key"));
  split_ = splitField(QStringLiteral("evalSplit"), QStringLiteral("val"), QStringLiteral("Split to caption"));
  limit_ = integerField(QStringLiteral("evalLimit"), 0, 1000000, 0, QStringLiteral("all"),
                        QStringLiteral("At most this many images of the split"));
  evaluate_ = new QPushButton(QStringLiteral("Evaluate"));
  evaluate_->setObjectName(QStringLiteral("evalRun"));
  evaluate_->setToolTip(QStringLiteral("Caption every image of the split and score it; an evaluation cancelled "
                                       "earlier with the same model and options resumes where it stopped"));
  cancel_ = new QPushButton(QStringLiteral("Cancel"));
  cancel_->setObjectName(QStringLiteral("evalCancel"));
  progress_ = new QProgressBar;
  state_ = new HintLabel;  // the run's progress, result or error
  state_->setObjectName(QStringLiteral("evalState"));
  state_->setWordWrap(true);
  state_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  shown_ = new QComboBox;
  shown_->setObjectName(QStringLiteral("evalShown"));
  shown_->setToolTip(QStringLiteral("The evaluation whose captions and scores the grid shows"));
  compared_ = new QComboBox;
  compared_->setObjectName(QStringLiteral("evalCompared"));
  compared_->setToolTip(QStringLiteral("A second evaluation: its caption and score shown under the first's"));
  export_ = new QPushButton(QStringLiteral("Export CSV…"));
  export_->setToolTip(QStringLiteral("The shown evaluation's images in the grid's order, with captions and scores"));
  buildHost();
  connect(model_, &QComboBox::currentTextChanged, this, &EvaluationPanel::fitBeamToModel);
  auto* form = new QFormLayout(this);
  form->addRow(QStringLiteral("Where:"), where_);
  form->addRow(there_);
  form->addRow(QStringLiteral("Model:"), browse_->row());
  auto* reference = new QHBoxLayout;
  reference->addWidget(config_, 1);
  reference->addWidget(vocab_, 2);
  form->addRow(QString(), reference);
  auto* row = new QHBoxLayout;
  row->addWidget(new HintLabel(QStringLiteral("Beam:")));
  row->addWidget(beam_);
  row->addWidget(new HintLabel(QStringLiteral("Split:")));
  row->addWidget(split_);
  row->addWidget(new HintLabel(QStringLiteral("Limit:")));
  row->addWidget(limit_);
  form->addRow(row);
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(evaluate_);
  buttons->addWidget(cancel_);
  buttons->addWidget(progress_, 1);
  form->addRow(buttons);
  form->addRow(state_);
  form->addRow(QStringLiteral("Show:"), shown_);
  form->addRow(QStringLiteral("Compare:"), compared_);
  form->addRow(export_);
  connect(evaluate_, &QPushButton::clicked, this, &EvaluationPanel::evaluateRequested);
  connect(export_, &QPushButton::clicked, this, &EvaluationPanel::exportRequested);
  connect(shown_, &QComboBox::activated, this, [this] { emit evaluationChosen(evaluationId()); });
  connect(compared_, &QComboBox::activated, this, [this] { emit comparedChosen(comparedId()); });
  showEnded(QString(), false);
  setEvaluations({});
}

// "Where" and, for a host, its dataset path and device; the model's files are then the host's.
void EvaluationPanel::buildHost() {
  where_ = new HostChoice;
  where_->setObjectName(QStringLiteral("evalWhere"));
  where_->setToolTip(QStringLiteral("Caption here, or on a host over ssh with its GPU (File > Hosts…); the result is kept "
                                    "here with this dataset"));
  datasetThere_ = new QLineEdit;
  datasetThere_->setObjectName(QStringLiteral("evalDatasetThere"));
  datasetThere_->setPlaceholderText(QStringLiteral("this dataset's path on the host"));
  datasetThere_->setToolTip(QStringLiteral("The host's copy of this dataset (relative: in its work folder); its images "
                                           "are matched to these by id"));
  deviceThere_ = new QComboBox;
  deviceThere_->setObjectName(QStringLiteral("evalDeviceThere"));
  deviceThere_->addItems({QStringLiteral("cuda"), QStringLiteral("cpu")});
  deviceThere_->setToolTip(QStringLiteral("The host's device"));
  there_ = new QWidget;
  auto* thereRow = new QHBoxLayout(there_);
  thereRow->setContentsMargins(0, 0, 0, 0);
  thereRow->addWidget(datasetThere_, 1);
  thereRow->addWidget(deviceThere_);
  hostEvaluation_ = new HostEvaluation(this);
  connect(cancel_, &QPushButton::clicked, this, [this] {
    if (hostEvaluation_->running())
      hostEvaluation_->cancel();
    else
      emit cancelRequested();
  });

  const auto showWhere = [this] {
    const bool host = !where_->host().isEmpty();
    there_->setVisible(host);
    browse_->setEnabled(!host);  // a file dialog shows this computer's files
    model_->setToolTip(host ? QStringLiteral("A built-in model, or a checkpoint on the host (its path there)")
                            : QStringLiteral("A built-in model, or a checkpoint of ours (.pth; …)"));
  };
  connect(where_, &QComboBox::currentIndexChanged, this, showWhere);
  showWhere();
  connect(hostEvaluation_, &HostEvaluation::progress, this, &EvaluationPanel::showRunning);
  connect(hostEvaluation_, &HostEvaluation::failed, this, [this](const QString& error) { showEnded(error, true); });
  connect(hostEvaluation_, &HostEvaluation::cancelled, this, [this] {
    showEnded(QStringLiteral("Cancelled; the host keeps what it captioned: Evaluate again resumes from there"), false);
  });
  connect(hostEvaluation_, &HostEvaluation::evaluated, this, [this](const HostEvaluationResult& r) {
    showEnded(QStringLiteral("Evaluation #%1 on %2: %3 images (%4 resumed), CIDEr-D %5")
                  .arg(r.id)
                  .arg(where_->host())
                  .arg(r.images)
                  .arg(r.resumed)
                  .arg(r.ciderD, 0, 'f', 3),
              false);
    emit hostEvaluated(r.id);
  });
}

// A PNAIC model decodes greedily only: its beam is 1 and cannot be changed (the reason in the tooltip).
void EvaluationPanel::fitBeamToModel(const QString& model) {
  const bool pnaic = model.trimmed().startsWith(QStringLiteral("pnaic-"));
  if (pnaic) beam_->setValue(1);
  beam_->setEnabled(!pnaic);
  beam_->setToolTip(pnaic ? QStringLiteral("A PNAIC model decodes its groups greedily: no beam search")
                          : QStringLiteral("Beam width (1 = greedy); part of the evaluation's key"));
}

bool EvaluationPanel::runOnHost(const EvaluationJob& job) {
  const QString host = where_->host();
  if (host.isEmpty()) return false;
  const QString there = datasetThere_->text().trimmed();
  if (there.isEmpty()) {
    showEnded(QStringLiteral("Name this dataset's path on %1 (beside Where), or choose this computer").arg(host), true);
    return true;
  }
  showRunning(0, 0);
  hostEvaluation_->start(job, host, there, deviceThere_->currentText());
  return true;
}

EvaluationJob EvaluationPanel::job() const {
  EvaluationJob job;
  const QString model = model_->currentText().trimmed();
  // A built-in name stands alone; anything else is a checkpoint file.
  if (model.endsWith(QStringLiteral(".pth")) || model.endsWith(QStringLiteral(".pt")) || model.contains(QLatin1Char('/'))) {
    job.checkpoint = model;
    job.model = config_->currentText().trimmed();  // empty: the checkpoint carries its config
  } else {
    job.model = model;
  }
  job.vocab = vocab_->text().trimmed();
  job.split = split_->currentText();
  job.limit = limit_->value();
  job.beam = beam_->value();
  return job;
}

void EvaluationPanel::setJob(const QString& model, const QString& split, int limit) {
  model_->setCurrentText(model);
  split_->setCurrentText(split);
  limit_->setValue(limit);
}

void EvaluationPanel::setReferenceFiles(const QString& config, const QString& vocab) {
  config_->setCurrentText(config);
  vocab_->setText(vocab);
}

void EvaluationPanel::setEvaluations(const std::vector<expnet::SampleEvaluation>& list, bool listed) {
  const qint64 shown = evaluationId(), compared = comparedId();
  QJsonArray evaluations;
  for (const auto& e : list) evaluations.append(summaryJson(e));
  evaluations_ = evaluations;
  shown_->clear();
  compared_->clear();
  shown_->addItem(QStringLiteral("none"), 0);
  compared_->addItem(QStringLiteral("none"), 0);
  for (const auto& e : evaluations) {
    const QJsonObject evaluation = e.toObject();
    shown_->addItem(evaluationLabel(evaluation), evaluation["id"].toInteger());
    compared_->addItem(evaluationLabel(evaluation), evaluation["id"].toInteger());
  }
  shown_->setCurrentIndex(std::max(0, shown_->findData(shown)));
  compared_->setCurrentIndex(std::max(0, compared_->findData(compared)));
  export_->setEnabled(evaluationId() != 0);
  if (listed && wanted_ >= 0) {
    selectEvaluation(std::exchange(wanted_, -1));
    emit evaluationChosen(evaluationId());
  }
}

void EvaluationPanel::selectEvaluation(qint64 id) {
  shown_->setCurrentIndex(std::max(0, shown_->findData(id)));
  export_->setEnabled(evaluationId() != 0);
}

qint64 EvaluationPanel::evaluationId() const { return shown_->currentData().toLongLong(); }
qint64 EvaluationPanel::comparedId() const { return compared_->currentData().toLongLong(); }

QJsonObject EvaluationPanel::evaluation(qint64 id) const {
  for (const auto& e : evaluations_)
    if (e.toObject()["id"].toInteger() == id) return e.toObject();
  return {};
}

void EvaluationPanel::showRunning(int done, int total) {
  if (!running_) clock_.start();
  running_ = true;
  evaluate_->setEnabled(false);
  cancel_->setEnabled(true);
  progress_->setVisible(true);
  progress_->setRange(0, std::max(1, total));
  progress_->setValue(done);
  QString text = QStringLiteral("%1 / %2 images").arg(done).arg(total);
  if (done > 0 && total > done)
    text += QStringLiteral(" · about %1 s left").arg(clock_.elapsed() / 1000.0 / done * (total - done), 0, 'f', 0);
  state_->setText(text);
  state_->setKind(HintLabel::Kind::Status);
}

void EvaluationPanel::showEnded(const QString& message, bool error) {
  running_ = false;
  evaluate_->setEnabled(true);
  cancel_->setEnabled(false);
  progress_->setVisible(false);
  state_->setText(message);
  state_->setKind(error ? HintLabel::Kind::Error : HintLabel::Kind::Status);
}

QJsonObject EvaluationPanel::describe() const {
  return {{"where", where_->host()},
          {"model", model_->currentText()},
          {"beam", beam_->value()},
          {"split", split_->currentText()},
          {"running", running_},
          {"state", state_->text()},
          {"shown", evaluationId()},
          {"compared", comparedId()},
          {"evaluations", evaluations_}};
}

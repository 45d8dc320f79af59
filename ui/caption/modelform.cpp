#include "caption/modelform.h"

#include <QComboBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QSettings>
#include <QSpinBox>

#include <algorithm>

#include "common/actionbutton.h"
#include "common/browsebutton.h"
#include "common/formfields.h"
#include "caption/recentmodels.h"
#include "common/theme.h"
#include "expnet/model/demo_model.h"
#include "expnet/model/model_config.h"
#include "expnet/model/precision.h"
#include "expnet/system/system.h"

ModelForm::ModelForm(const QString& device, int threads, QWidget* owner) : QGroupBox(QStringLiteral("Model")) {
  auto* form = new QFormLayout(this);
  addFileRows(form);
  form->addRow(QStringLiteral("Device:"), buildRuntimeRow(device, threads));
  form->addRow(buildActionRow(owner));
}

void ModelForm::addFileRows(QFormLayout* form) {
  config_ = new QComboBox;
  config_->setEditable(true);
  config_->addItem(QString());
  for (const auto& name : expnet::model_preset_names()) config_->addItem(QString::fromStdString(name));
  for (const auto& name : expnet::builtin_model_names())  // the built-in models, PNAIC students included
    if (config_->findText(QString::fromStdString(name)) < 0) config_->addItem(QString::fromStdString(name));
  config_->lineEdit()->setPlaceholderText(QStringLiteral("preset (official, small, tiny), built-in model or config .json"));
  config_->setToolTip(QStringLiteral("Preset name or model config JSON; empty = read from one of our checkpoints"));
  checkpoint_ = new QLineEdit;
  checkpoint_->setObjectName(QStringLiteral("checkpoint"));
  checkpoint_->setPlaceholderText(QStringLiteral("checkpoint .pth"));
  vocab_ = new QLineEdit;
  vocab_->setPlaceholderText(QStringLiteral("vocabulary .pickle or .json (empty = from our checkpoint)"));
  form->addRow(QStringLiteral("Config:"),
               (new BrowseButton(config_, QStringLiteral("Choose a model config JSON"), QStringLiteral("Model config (*.json)")))->row());
  form->addRow(QStringLiteral("Checkpoint:"), (new BrowseButton(checkpoint_, QStringLiteral("Choose a checkpoint"),
                                                                QStringLiteral("Checkpoints (*.pth *.pt);;All files (*)")))
                                                  ->row());
  form->addRow(QStringLiteral("Vocabulary:"), (new BrowseButton(vocab_, QStringLiteral("Choose a vocabulary"),
                                                                QStringLiteral("Vocabulary (*.pickle *.pkl *.json)")))
                                                  ->row());
}

// Runtime: starts as the command line set it (--device, --threads); used by the next load.
QLayout* ModelForm::buildRuntimeRow(const QString& device, int threads) {
  device_ = new QComboBox;
  device_->setObjectName(QStringLiteral("device"));
  device_->setEditable(true);
  device_->addItems({QStringLiteral("cpu"), QStringLiteral("cuda"), QStringLiteral("cuda:0")});
  device_->setCurrentText(device);
  device_->setToolTip(QStringLiteral("Device for the next Load model: cpu, cuda or cuda:N"));
  threads_ = new QSpinBox;
  threads_->setObjectName(QStringLiteral("threads"));
  threads_->setRange(0, std::max(1, expnet::hardware_threads()));
  threads_->setSpecialValueText(QStringLiteral("all cores"));
  threads_->setValue(threads);
  threads_->setToolTip(QStringLiteral("CPU threads for the model (all pages), applied at the next Load model"));
  auto* runtimeRow = new QHBoxLayout;
  runtimeRow->addWidget(device_, 1);
  runtimeRow->addWidget(new QLabel(QStringLiteral("Threads:")));
  runtimeRow->addWidget(threads_);
  precision_ = new QComboBox;
  precision_->setObjectName(QStringLiteral("precision"));
  for (const auto& name : expnet::precision_names()) precision_->addItem(QString::fromStdString(name));
  std::string bf16Why;
  const bool bf16 = expnet::bf16_is_fast(device.toStdString(), &bf16Why);
  precision_->setToolTip(
      QStringLiteral("Matrix products (a change loads the loaded model again with it): fp32 (the reference's), bf16 (bfloat16 with float32 "
                     "accumulation: about twice as fast where the CPU has it; captions can differ on a few images), "
                     "int8 (CPU: dynamically quantised Linears) or auto (bf16 where fast). On this machine: %1%2.")
          .arg(QString::fromStdString(bf16Why), bf16 ? QString() : QStringLiteral(", so bf16 runs as fp32")));
  runtimeRow->addWidget(new QLabel(QStringLiteral("Precision:")));
  runtimeRow->addWidget(precision_);
  connect(precision_, &QComboBox::activated, this, [this] { emit precisionChosen(precision_->currentText()); });
  return runtimeRow;
}

// `owner` takes the buttons' shortcuts (the page, so they work anywhere on it).
QLayout* ModelForm::buildActionRow(QWidget* owner) {
  loadButton_ = new ActionButton(QStringLiteral("Load model"), QKeySequence(Qt::CTRL | Qt::Key_L),
                                 QStringLiteral("Load the checkpoint, vocabulary and config above"), owner);
  connect(loadButton_, &QPushButton::clicked, this, [this] { emit loadRequested(request()); });
  auto* demo = new ActionButton(QStringLiteral("Demo model"), QKeySequence(Qt::CTRL | Qt::Key_D),
                                QStringLiteral("Load the built-in demo model (trained on the shapes set by the "
                                               "shapes-demo recipe; README: how it was made)"),
                                owner);
  demo->setObjectName(QStringLiteral("demoModel"));
  if (!expnet::demo_model_available()) {
    demo->setEnabled(false);
    demo->setToolTip(QStringLiteral("The demo model file was not found: reinstall, or set EXPNET_RESOURCES"));
  }
  connect(demo, &QPushButton::clicked, this, [this] {
    ModelRequest demoRequest;
    demoRequest.model = QStringLiteral("demo");
    demoRequest.precision = precision_->currentText();
    emit loadRequested(demoRequest);
  });
  auto* recentButton = menuButton(
      QStringLiteral("recentModels"), QStringLiteral("Recent"),
      QStringLiteral("Load again a model loaded lately (the studio reloads the last one at start)"),
      loadButton_->sizeHint().height(), [this](QMenu* menu) {
        if (recent_) recent_->fillMenu(menu, [this](const ModelRequest& request) { emit loadRequested(request); });
      });
  busy_ = new QProgressBar;
  busy_->setRange(0, 0);  // indeterminate: loading has no measurable steps
  busy_->setMaximumWidth(140);
  busy_->setTextVisible(false);
  busy_->hide();
  status_ = new QLabel;
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* row = new QHBoxLayout;
  row->addWidget(loadButton_);
  row->addWidget(demo);
  row->addWidget(recentButton);
  row->addWidget(busy_);
  row->addWidget(status_, 1);
  return row;
}

ModelRequest ModelForm::request() const {
  ModelRequest request;
  request.model = config_->currentText().trimmed();
  request.checkpoint = checkpoint_->text().trimmed();
  request.vocab = vocab_->text().trimmed();
  request.device = device_->currentText().trimmed();
  request.threads = threads_->value();
  request.precision = precision_->currentText();
  return request;
}

void ModelForm::showRequest(const ModelRequest& request) {
  checkpoint_->setText(request.checkpoint);
  vocab_->setText(request.vocab);
  config_->setCurrentText(request.model);
  precision_->setCurrentText(request.precision);
}

void ModelForm::setLoading(bool loading) {
  busy_->setVisible(loading);
  loadButton_->setEnabled(!loading);
}

void ModelForm::showLoading() {
  setLoading(true);
  status_->setText(QStringLiteral("Loading…"));
}

void ModelForm::showLoaded(const QString& name, double loadMs, const QString& note) {
  setLoading(false);
  QString text = QStringLiteral("Loaded <b>%1</b> in %2 ms").arg(name.toHtmlEscaped()).arg(loadMs, 0, 'f', 0);
  if (!note.isEmpty())
    text += QStringLiteral(". <span style='color:%1'>%2</span>").arg(Theme::css(Theme::current().errorText()), note.toHtmlEscaped());
  status_->setText(text);
}

void ModelForm::showFailed(const QString& error) {
  setLoading(false);
  status_->setText(
      QStringLiteral("<span style='color:%1'>%2</span>").arg(Theme::css(Theme::current().errorText()), error.toHtmlEscaped()));
}

void ModelForm::showNoModel() {
  setLoading(false);
  status_->setText(QStringLiteral("No model loaded"));
}

void ModelForm::restoreFields(const QSettings& settings) {
  config_->setCurrentText(settings.value(QStringLiteral("model")).toString());
  checkpoint_->setText(settings.value(QStringLiteral("checkpoint")).toString());
  vocab_->setText(settings.value(QStringLiteral("vocab")).toString());
  precision_->setCurrentText(settings.value(QStringLiteral("precision"), QStringLiteral("fp32")).toString());
}

void ModelForm::saveFields(QSettings& settings) const {
  settings.setValue(QStringLiteral("model"), config_->currentText());
  settings.setValue(QStringLiteral("checkpoint"), checkpoint_->text());
  settings.setValue(QStringLiteral("vocab"), vocab_->text());
  settings.setValue(QStringLiteral("precision"), precision_->currentText());
}

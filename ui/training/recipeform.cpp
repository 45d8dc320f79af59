#include "training/recipeform.h"

#include <QComboBox>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QJsonDocument>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <climits>
#include <numeric>

#include "common/actionbutton.h"
#include "common/browsebutton.h"
#include "common/formfields.h"
#include "expnet/model/model_config.h"
#include "expnet/system/atomic_file.h"
#include "expnet/train/train_config.h"

namespace {
// The stage keys the table edits, in the order the docs show them: the
// engine's own field table (expnet/train/train_config.h), so a key added there
// appears here with its help.
const std::vector<expnet::ConfigFieldInfo>& stageFields() {
  static const std::vector<expnet::ConfigFieldInfo> fields = expnet::stage_config_fields();
  return fields;
}
int stageFieldCount() { return int(stageFields().size()); }
const char* kFromConfig = "(the config's own)";
const char* kFromModel = "(the model's own)";

QComboBox* layerKindBox(const QString& name, const std::vector<std::string>& kinds, const QString& tip) {
  auto* box = new QComboBox;
  box->setObjectName(name);
  box->addItem(QString::fromLatin1(kFromModel));
  for (const auto& kind : kinds) box->addItem(QString::fromStdString(kind));
  box->setToolTip(tip);
  return box;
}

int kindIndex(const std::vector<std::string>& kinds, const QString& name) {
  const auto it = std::find(kinds.begin(), kinds.end(), name.toStdString());
  return int(it - kinds.begin());
}

QString jsonCell(const QJsonValue& v) {
  if (v.isString()) return v.toString();
  if (v.isDouble()) return QString::number(v.toDouble(), 'g', 10);
  return {};
}

QTableWidgetItem* stageCell(int field, const QString& text) {
  auto* item = new QTableWidgetItem(text);
  item->setToolTip(QString::fromStdString(stageFields()[size_t(field)].help));
  return item;
}

// A form row: the field stretched, `extra` buttons after it.
QHBoxLayout* fieldRow(QWidget* field, std::initializer_list<QWidget*> extra) {
  auto* row = new QHBoxLayout;
  row->addWidget(field, 1);
  for (QWidget* w : extra) row->addWidget(w);
  return row;
}
}  // namespace

RecipeForm::RecipeForm() {
  auto* column = new QVBoxLayout(this);
  column->setContentsMargins(0, 0, 0, 0);
  auto* recipe = new QGroupBox(QStringLiteral("Recipe"));
  auto* form = new QFormLayout(recipe);
  form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  form->setRowWrapPolicy(QFormLayout::WrapLongRows);  // a label above its field where the column is narrow
  preset_ = new QComboBox;
  preset_->setObjectName(QStringLiteral("preset"));
  preset_->setToolTip(QStringLiteral("Built-in recipe that fills the form: shapes-demo (small model, generated shapes "
                                     "dataset, minutes on a CPU) or paper (stages A-D of ExpansionNet v2 on COCO)"));
  for (const auto& name : expnet::train_preset_names()) preset_->addItem(QString::fromStdString(name));
  preset_->setCurrentText(QStringLiteral("shapes-demo"));
  connect(preset_, &QComboBox::textActivated, this, &RecipeForm::applyPreset);
  form->addRow(QStringLiteral("Preset"),
               fieldRow(preset_, {commandButton(QStringLiteral("Load…"),
                                                QStringLiteral("Fill the form from a training config JSON (docs/training.md)"),
                                                this, &RecipeForm::loadConfigFile),
                                  commandButton(QStringLiteral("Save…"),
                                                QStringLiteral("Save the form as a training config JSON for `expnet train --config`"),
                                                this, &RecipeForm::saveConfigFile)}));
  name_ = new QLineEdit;
  name_->setObjectName(QStringLiteral("runName"));
  name_->setToolTip(QStringLiteral("Run name in the run store (unique per store)"));
  form->addRow(QStringLiteral("Run name"), name_);
  dataset_ = new QLineEdit;
  dataset_->setObjectName(QStringLiteral("dataset"));
  dataset_->setToolTip(QStringLiteral("Dataset file (COCO/Karpathy JSON, CSV, JSON Lines; docs/datasets.md), or "
                                      "'shapes' for the generated shapes set (written into the output folder)"));
  form->addRow(QStringLiteral("Dataset"), (new BrowseButton(dataset_, QStringLiteral("Dataset"),
                                                            QStringLiteral("Datasets (*.json *.jsonl *.csv);;All files (*)")))
                                              ->row());
  shapesImages_ = integerField(QStringLiteral("shapesImages"), 10, 1000000, 1500, {},
                               QStringLiteral("Images generated for the 'shapes' dataset"));
  form->addRow(QStringLiteral("Shapes images"), shapesImages_);
  model_ = new QComboBox;
  model_->setObjectName(QStringLiteral("model"));
  model_->addItem(QString::fromLatin1(kFromConfig));
  for (const auto& name : expnet::model_preset_names()) model_->addItem(QString::fromStdString(name));
  model_->setToolTip(QStringLiteral("Model preset (docs/model.md), or the model object of the preset / loaded config"));
  form->addRow(QStringLiteral("Model"), model_);
  encoderLayer_ = layerKindBox(QStringLiteral("encoderLayer"), expnet::encoder_layer_names(),
                               QStringLiteral("What mixes the sequence in each encoder layer (docs/model.md, \"Layer "
                                              "kinds\"): static_expansion (v2), dynamic_expansion (v1; one NE, the "
                                              "model's expansion groups summed), self_attention (base Transformer), "
                                              "ngsan (NG-SAN's normalised, geometry-aware self-attention)"));
  form->addRow(QStringLiteral("Encoder layers"), encoderLayer_);
  decoderLayer_ = layerKindBox(QStringLiteral("decoderLayer"), expnet::decoder_layer_names(),
                               QStringLiteral("What mixes the words in each decoder layer: dynamic_expansion (v2) or "
                                              "self_attention (base Transformer)"));
  form->addRow(QStringLiteral("Decoder layers"), decoderLayer_);
  seed_ = integerField(QString(), 0, INT_MAX, 1, {},
                       QStringLiteral("Seed of initialisation, dropout, sampling and loader shuffling"));
  form->addRow(QStringLiteral("Seed"), seed_);
  validationImages_ = integerField(QString(), 1, 1000000, 100, {},
                                   QStringLiteral("Validation images scored (CIDEr-D, BLEU) after every epoch"));
  form->addRow(QStringLiteral("Validation images"), validationImages_);
  threads_ = integerField(QStringLiteral("threads"), 0, 256, 0, QStringLiteral("all cores"),
                          QStringLiteral("CPU threads of the trainer process (--threads)"));
  form->addRow(QStringLiteral("Threads"), threads_);
  column->addWidget(recipe);
  column->addWidget(buildStagesBox(), 1);
}

QWidget* RecipeForm::buildStagesBox() {
  auto* box = new QGroupBox(QStringLiteral("Stages"));
  auto* layout = new QVBoxLayout(box);
  stages_ = new QTableWidget(stageFieldCount(), 0);
  stages_->setObjectName(QStringLiteral("stages"));
  stages_->setToolTip(QStringLiteral("One column per stage, run left to right; each gets a fresh RAdam and schedule"));
  for (int r = 0; r < stageFieldCount(); ++r) stages_->setVerticalHeaderItem(r, stageCell(r, QString::fromStdString(stageFields()[size_t(r)].key)));
  stages_->verticalHeader()->setDefaultSectionSize(22);
  stages_->horizontalHeader()->setDefaultSectionSize(78);
  stages_->setMinimumHeight(22 * stageFieldCount() + 30);
  layout->addWidget(stages_, 1);
  auto* row = new QHBoxLayout;
  row->addWidget(commandButton(QStringLiteral("Add stage"), QStringLiteral("Append a stage (a copy of the last one)"),
                               this, &RecipeForm::addStage));
  row->addWidget(commandButton(QStringLiteral("Remove stage"), QStringLiteral("Remove the selected stage (column)"),
                               this, &RecipeForm::removeStage));
  row->addStretch(1);
  layout->addLayout(row);
  return box;
}

void RecipeForm::applyPreset(const QString& name) {
  try {
    const auto config = expnet::train_preset(name.toStdString());
    setConfigJson(QByteArray::fromStdString(config.to_json()));
    if (preset_->currentText() != name) preset_->setCurrentText(name);
    emit message(name == QStringLiteral("paper") ? QStringLiteral("The paper recipe needs the COCO Karpathy file: set Dataset.")
                                                 : QString(),
                 false);
  } catch (const std::exception& e) {
    emit message(QString::fromStdString(e.what()), true);
  }
}

bool RecipeForm::setConfigJson(const QByteArray& json, QString* error) {
  QJsonParseError parseError;
  const QJsonObject config = QJsonDocument::fromJson(json, &parseError).object();
  if (parseError.error != QJsonParseError::NoError || config.isEmpty()) {
    const QString why = QStringLiteral("not a training config: %1").arg(parseError.errorString());
    if (error) *error = why;
    emit message(why, true);
    return false;
  }
  baseConfig_ = config;
  name_->setText(config.value(QStringLiteral("name")).toString(QStringLiteral("run")));
  dataset_->setText(config.value(QStringLiteral("dataset")).toString(QStringLiteral("shapes")));
  shapesImages_->setValue(config.value(QStringLiteral("shapes_images")).toInt(1500));
  const QJsonValue model = config.value(QStringLiteral("model"));
  model_->setCurrentText(model.isString() ? model.toString() : QString::fromLatin1(kFromConfig));
  const QJsonObject modelObject = model.toObject();
  encoderLayer_->setCurrentText(modelObject.value(QStringLiteral("encoder_layer")).toString(QString::fromLatin1(kFromModel)));
  decoderLayer_->setCurrentText(modelObject.value(QStringLiteral("decoder_layer")).toString(QString::fromLatin1(kFromModel)));
  seed_->setValue(config.value(QStringLiteral("seed")).toInt(1));
  validationImages_->setValue(config.value(QStringLiteral("validation_images")).toInt(100));
  fillStages(config.value(QStringLiteral("stages")).toArray());
  return true;
}

void RecipeForm::fillStages(const QJsonArray& stages) {
  stages_->setColumnCount(int(stages.size()));
  for (int c = 0; c < stages.size(); ++c) {
    const QJsonObject stage = stages.at(c).toObject();
    for (int r = 0; r < stageFieldCount(); ++r)
      stages_->setItem(r, c, stageCell(r, jsonCell(stage.value(QString::fromStdString(stageFields()[size_t(r)].key)))));
  }
  renumberStages();
}

QJsonArray RecipeForm::stages(QString* error) const {
  QJsonArray out;
  for (int c = 0; c < stages_->columnCount(); ++c) {
    QJsonObject stage;
    for (int r = 0; r < stageFieldCount(); ++r) {
      const auto& field = stageFields()[size_t(r)];
      const QString text = stages_->item(r, c) ? stages_->item(r, c)->text().trimmed() : QString();
      if (text.isEmpty()) continue;  // the engine's default
      bool ok = true;
      QJsonValue value;
      if (field.type == expnet::ConfigFieldType::integer)
        value = qint64(text.toLongLong(&ok));
      else if (field.type == expnet::ConfigFieldType::real)
        value = text.toDouble(&ok);
      else
        value = text;
      if (!ok) {
        *error = QStringLiteral("stage %1, %2: '%3' is not a number").arg(c + 1).arg(QString::fromStdString(field.key), text);
        return {};
      }
      stage.insert(QString::fromLatin1(field.key), value);
    }
    out << stage;
  }
  return out;
}

QJsonObject RecipeForm::config(QString* error) const {
  QJsonObject config = baseConfig_;
  config.insert(QStringLiteral("name"), name_->text().trimmed());
  config.insert(QStringLiteral("dataset"), dataset_->text().trimmed());
  config.insert(QStringLiteral("shapes_images"), shapesImages_->value());
  if (model_->currentText() != QString::fromLatin1(kFromConfig)) config.insert(QStringLiteral("model"), model_->currentText());
  config.insert(QStringLiteral("seed"), seed_->value());
  config.insert(QStringLiteral("validation_images"), validationImages_->value());
  QString stageError;
  const QJsonArray stageList = stages(&stageError);
  if (!stageError.isEmpty()) {
    *error = stageError;
    return {};
  }
  config.insert(QStringLiteral("stages"), stageList);
  if (!applyLayerKinds(config, error)) return {};
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

bool RecipeForm::applyLayerKinds(QJsonObject& config, QString* error) const {
  const QString encoder = encoderLayer_->currentText(), decoder = decoderLayer_->currentText();
  const QString own = QString::fromLatin1(kFromModel);
  if (encoder == own && decoder == own) return true;
  const QJsonValue model = config.value(QStringLiteral("model"));
  if (!model.isString() && !model.isObject()) {
    *error = QStringLiteral("the layer kinds change a model, and this recipe names none (a PNAIC run takes its "
                            "teacher's): set Encoder and Decoder layers to \"%1\"").arg(own);
    return false;
  }
  try {
    expnet::ModelConfig m =
        model.isString() ? expnet::resolve_model_config(model.toString().toStdString())
                         : expnet::ModelConfig::from_json(QJsonDocument(model.toObject()).toJson().toStdString(), "the form's model");
    if (encoder != own) {
      m.encoder_layer = expnet::EncoderLayerKind(kindIndex(expnet::encoder_layer_names(), encoder));
      // One dynamic expansion has one NE: the static groups' slots together.
      if (m.encoder_layer == expnet::EncoderLayerKind::DynamicExpansion && m.num_exp_enc_list.size() > 1)
        m.num_exp_enc_list = {std::accumulate(m.num_exp_enc_list.begin(), m.num_exp_enc_list.end(), int64_t{0})};
    }
    if (decoder != own) m.decoder_layer = expnet::DecoderLayerKind(kindIndex(expnet::decoder_layer_names(), decoder));
    m.validate("the form's model");
    config.insert(QStringLiteral("model"), QJsonDocument::fromJson(QByteArray::fromStdString(m.to_json())).object());
  } catch (const std::exception& e) {
    *error = QString::fromStdString(e.what());
    return false;
  }
  return true;
}

void RecipeForm::addStage() {
  const int c = stages_->columnCount();
  stages_->insertColumn(c);
  for (int r = 0; r < stageFieldCount(); ++r) {
    const auto* previous = c > 0 ? stages_->item(r, c - 1) : nullptr;
    stages_->setItem(r, c, stageCell(r, previous ? previous->text() : QString()));
  }
  renumberStages();
}

void RecipeForm::removeStage() {
  if (stages_->columnCount() <= 1) return;
  stages_->removeColumn(stages_->currentColumn() >= 0 ? stages_->currentColumn() : stages_->columnCount() - 1);
  renumberStages();
}

void RecipeForm::renumberStages() {
  for (int i = 0; i < stages_->columnCount(); ++i) stages_->setHorizontalHeaderItem(i, new QTableWidgetItem(QString::number(i + 1)));
}

void RecipeForm::showSource(const QString& source) {
  preset_->setCurrentIndex(-1);
  preset_->setPlaceholderText(source);
}

void RecipeForm::loadConfigFile() {
  const QString file = QFileDialog::getOpenFileName(this, QStringLiteral("Training config"), folder_ ? folder_() : QString(),
                                                    QStringLiteral("JSON (*.json);;All files (*)"));
  if (file.isEmpty()) return;
  QFile in(file);
  if (!in.open(QIODevice::ReadOnly)) {
    emit message(QStringLiteral("cannot read '%1'").arg(file), true);
    return;
  }
  QString error;
  if (setConfigJson(in.readAll(), &error)) {
    showSource(QStringLiteral("(from %1)").arg(QFileInfo(file).fileName()));
    emit message(QStringLiteral("Loaded %1").arg(file), false);
  }
}

void RecipeForm::saveConfigFile() {
  QString error;
  const QJsonObject form = config(&error);
  if (!error.isEmpty()) {
    emit message(error, true);
    return;
  }
  const QString file = QFileDialog::getSaveFileName(this, QStringLiteral("Save training config"),
                                                    name_->text() + QStringLiteral(".json"), QStringLiteral("JSON (*.json)"));
  if (file.isEmpty()) return;
  try {
    expnet::write_file_atomic(file.toStdString(), QJsonDocument(form).toJson().toStdString());
    emit message(QStringLiteral("Saved %1").arg(file), false);
  } catch (const std::exception& e) {
    emit message(QString::fromStdString(e.what()), true);
  }
}

QString RecipeForm::preset() const { return preset_->currentText(); }
void RecipeForm::setPreset(const QString& name) { preset_->setCurrentText(name); }
QString RecipeForm::runName() const { return name_->text(); }
int RecipeForm::threads() const { return threads_->value(); }
void RecipeForm::setThreads(int threads) { threads_->setValue(threads); }

void RecipeForm::setEditable(bool editable) {
  for (auto* w : std::initializer_list<QWidget*>{preset_, name_, dataset_, shapesImages_, model_, encoderLayer_,
                                                 decoderLayer_, seed_, validationImages_, threads_, stages_})
    w->setEnabled(editable);
}

QJsonObject RecipeForm::describe() const {
  return QJsonObject{{"preset", preset_->currentText()},
                     {"name", name_->text()},
                     {"dataset", dataset_->text()},
                     {"model", model_->currentText()},
                     {"encoder_layer", encoderLayer_->currentText()},
                     {"decoder_layer", decoderLayer_->currentText()},
                     {"stages", stages_->columnCount()}};
}

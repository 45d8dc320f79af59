// The Training page's recipe: a built-in preset or a loaded config file fills
// the fields (run name, dataset, model and its layer kinds, seed, validation
// images, trainer threads) and the stages table (one column per stage, one row per field of
// docs/training.md); config() turns them back into a training config, checked
// by the engine's own parser.
#pragma once

#include <QJsonArray>
#include <QJsonObject>
#include <QWidget>

#include <functional>

class QComboBox;
class QLineEdit;
class QSpinBox;
class QTableWidget;

class RecipeForm : public QWidget {
  Q_OBJECT
 public:
  RecipeForm();

  // Fills the form from a config in the format of docs/training.md; keys the form does not show are kept.
  bool setConfigJson(const QByteArray& json, QString* error = nullptr);
  // The config the form describes; empty with `error` set when a field is wrong.
  QJsonObject config(QString* error) const;
  void applyPreset(const QString& name);
  // The preset box shows where the fields came from instead of a preset ("(from the run)").
  void showSource(const QString& source);
  // Where the config file dialog starts (the run folder).
  void setConfigFolder(std::function<QString()> folder) { folder_ = std::move(folder); }
  void loadConfigFile();
  void saveConfigFile();

  QString preset() const;
  void setPreset(const QString& name);
  QString runName() const;
  int threads() const;
  void setThreads(int threads);
  // The form is read-only while its trainer runs.
  void setEditable(bool editable);
  // {preset, name, dataset, model, stages}
  QJsonObject describe() const;

 signals:
  // A line for the page's message area; `error` shows it as an error.
  void message(const QString& text, bool error);

 private:
  QWidget* buildStagesBox();
  void fillStages(const QJsonArray& stages);
  QJsonArray stages(QString* error) const;
  // The chosen layer kinds written into the model (then an object); false with `error` set when it cannot be.
  bool applyLayerKinds(QJsonObject& config, QString* error) const;
  void addStage();
  void removeStage();
  void renumberStages();

  std::function<QString()> folder_;
  QJsonObject baseConfig_;  // keys the form does not show are kept from here
  QComboBox* preset_;
  QLineEdit* name_;
  QLineEdit* dataset_;
  QSpinBox* shapesImages_;
  QComboBox* model_;
  QComboBox* encoderLayer_;  // "(the model's own)" or an encoder_layer kind
  QComboBox* decoderLayer_;
  QSpinBox* seed_;
  QSpinBox* validationImages_;
  QSpinBox* threads_;
  QTableWidget* stages_;
};

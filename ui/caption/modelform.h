// The Caption page's "Model" box: config (preset or JSON), checkpoint,
// vocabulary, device, threads and precision, Load model, Demo model and Recent (the
// models loaded lately), and the load's state (busy bar, "Loaded ... in N ms"
// or the error).
#pragma once

#include <QGroupBox>

#include "caption/captionworker.h"

class QComboBox;
class QFormLayout;
class QLabel;
class QLayout;
class QLineEdit;
class QProgressBar;
class QSettings;
class QSpinBox;
class ActionButton;
class RecentModels;

class ModelForm : public QGroupBox {
  Q_OBJECT
 public:
  ModelForm(const QString& device, int threads, QWidget* owner);

  // What the fields say, with the device and threads to load it on.
  ModelRequest request() const;
  // Shows the files of a request being loaded in the fields.
  void showRequest(const ModelRequest& request);
  void showLoading();
  // `note`: said after the load's time (e.g. why the last model was not reloaded).
  void showLoaded(const QString& name, double loadMs, const QString& note = QString());
  void showFailed(const QString& error);
  void showNoModel();

  // The models the Recent menu offers (owned by the page).
  void setRecentModels(const RecentModels* recent) { recent_ = recent; }

  void restoreFields(const QSettings& settings);
  void saveFields(QSettings& settings) const;

 signals:
  void loadRequested(const ModelRequest& request);
  void precisionChosen(const QString& precision);  // by the user: the loaded model is loaded again with it

 private:
  void addFileRows(QFormLayout* form);  // config, checkpoint and vocabulary
  QLayout* buildRuntimeRow(const QString& device, int threads);
  QLayout* buildActionRow(QWidget* owner);  // Load model, Demo model, Recent and the load's state
  void setLoading(bool loading);

  QComboBox* config_;
  QLineEdit* checkpoint_;
  QLineEdit* vocab_;
  QComboBox* device_;
  QSpinBox* threads_;
  QComboBox* precision_;
  ActionButton* loadButton_;
  QProgressBar* busy_;
  QLabel* status_;
  const RecentModels* recent_ = nullptr;
};

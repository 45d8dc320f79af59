// State shared by the pages: the runtime (device, threads) and the loaded
// model. Pages read it and listen to its signals; the main window shows it in
// the status bar.
#pragma once

#include <QObject>
#include <QString>

class StudioContext : public QObject {
  Q_OBJECT
 public:
  explicit StudioContext(QObject* parent = nullptr) : QObject(parent) {}

  QString device() const { return device_; }
  int threads() const { return threads_; }
  // Human-readable name of the loaded model, empty when none is loaded.
  QString modelName() const { return modelName_; }

  void setRuntime(const QString& device, int threads);
  void setModelName(const QString& name);

 signals:
  void runtimeChanged();
  void modelChanged();

 private:
  QString device_ = QStringLiteral("cpu");
  int threads_ = 1;
  QString modelName_;
};

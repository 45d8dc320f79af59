// State shared by the pages: the runtime (device, threads, precision) and the loaded
// model. Pages read it and listen to its signals; the main window shows it in
// the status bar.
#pragma once

#include <QObject>
#include <QString>

#include <memory>

namespace expnet {
class Captioner;
}

class StudioContext : public QObject {
  Q_OBJECT
 public:
  explicit StudioContext(QObject* parent = nullptr) : QObject(parent) {}

  QString device() const { return device_; }
  int threads() const { return threads_; }
  // The loaded model's matrix products (fp32, bf16, int8: the effective one).
  QString precision() const { return precision_; }
  // Human-readable name of the loaded model, empty when none is loaded.
  QString modelName() const { return modelName_; }

  void setRuntime(const QString& device, int threads, const QString& precision = QStringLiteral("fp32"));
  void setModelName(const QString& name);

  // The captioner the Caption page loaded, shared with the pages that trace
  // it (its forward passes keep no state, so several worker threads may use
  // it). Set before setModelName(), whose modelChanged() announces it.
  std::shared_ptr<expnet::Captioner> captioner() const { return captioner_; }
  void setCaptioner(std::shared_ptr<expnet::Captioner> captioner) { captioner_ = std::move(captioner); }
  // True while a model is being loaded: pages waiting for one count as busy.
  bool modelLoading() const { return modelLoading_; }
  void setModelLoading(bool loading) { modelLoading_ = loading; }
  // The image selected on the Caption page; the Attention page follows it.
  QString selectedImage() const { return selectedImage_; }
  void setSelectedImage(const QString& path);

 signals:
  void runtimeChanged();
  void modelChanged();
  void imageSelected(const QString& path);

 private:
  QString device_ = QStringLiteral("cpu");
  int threads_ = 1;
  QString precision_ = QStringLiteral("fp32");
  QString modelName_;
  std::shared_ptr<expnet::Captioner> captioner_;
  bool modelLoading_ = false;
  QString selectedImage_;
};

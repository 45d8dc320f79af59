#include "shell/studiocontext.h"

void StudioContext::setRuntime(const QString& device, int threads, const QString& precision) {
  device_ = device;
  threads_ = threads;
  precision_ = precision;
  emit runtimeChanged();
}

void StudioContext::setModelName(const QString& name) {
  modelName_ = name;
  emit modelChanged();
}

void StudioContext::setSelectedImage(const QString& path) {
  if (path == selectedImage_) return;
  selectedImage_ = path;
  emit imageSelected(path);
}

// Captions one image and traces the caption (expnet::trace_caption) off the
// UI thread. The worker lives in its own QThread; the page queues trace()
// calls and hears back through queued signals. The captioner is the one the
// Caption page loaded (shared through StudioContext): its forward passes keep
// no state between calls, so both pages' threads may use it.
#pragma once

#include <QObject>
#include <QString>

#include <atomic>
#include <memory>

#include "attention/attentiontrace.h"

namespace expnet {
class Captioner;
}

class AttentionWorker : public QObject {
  Q_OBJECT
 public:
  using QObject::QObject;

  // Thread-safe: requests older than `request` are abandoned at their next
  // decoding step (a newer image was picked, or the page is closing).
  void supersede(int request) { latest_ = request; }

  // Run in the worker's thread. `request` comes back with the result so the
  // page can drop answers to requests it has since replaced.
  void trace(std::shared_ptr<expnet::Captioner> captioner, const QString& path, int beamSize, int request);

 signals:
  void traced(int request, std::shared_ptr<const AttentionTrace> trace);
  void failed(int request, const QString& error);

 private:
  std::atomic<int> latest_{0};
};

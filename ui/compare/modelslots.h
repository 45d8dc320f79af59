// The Compare page's "Models" box: one AIC slot and one or more PNAIC slots,
// each a built-in name or a checkpoint (with its vocabulary when the file
// carries none), filled at start with the shipped demo models. Each slot loads
// on its own (in the page's worker) and shows its state: loading, what loaded
// ("K = 5, 120 ms") or its error, which leaves the other slots usable.
#pragma once

#include <QGroupBox>
#include <QJsonArray>
#include <QMap>

#include "compare/compareworker.h"

class QComboBox;
class QLineEdit;
class QVBoxLayout;
class HintLabel;

class ModelSlots : public QGroupBox {
  Q_OBJECT
 public:
  // `device`: where the slots' models are loaded (cpu, cuda, cuda:N).
  explicit ModelSlots(const QString& device, QWidget* parent = nullptr);

  // Loads the slots' models again on `device` in `precision` when either
  // differs (the Caption page's model box changed them); slots never asked
  // for stay unloaded.
  void setRuntime(const QString& device, const QString& precision);
  QString device() const { return device_; }
  // Adds a PNAIC slot holding `spec` and returns its id (the AIC slot is 0).
  int addPnaicSlot(const QString& spec);
  void removeSlot(int slot);
  // Sets a slot's fields (an empty vocab clears it) and loads it.
  void setSlot(int slot, const QString& spec, const QString& vocab = QString());
  // Every slot's request (to load them all at start).
  QVector<SlotRequest> requests() const;
  // The slots as remembered: one "spec\tvocab" per slot, the AIC slot first.
  QStringList toSettings() const;
  // Replaces the slots' fields (nothing is loaded; the page loads them).
  void fromSettings(const QStringList& entries);

  void showLoading(int slot);
  void showLoaded(int slot, const QString& file, int groups, double loadMs);
  void showFailed(int slot, const QString& error);
  bool loading() const;
  int loadedPnaicSlots() const;
  bool aicLoaded() const;
  // [{slot, kind, spec, state: loading|loaded|failed|empty, message}].
  QJsonArray describe() const;

 signals:
  void loadRequested(const SlotRequest& request);
  void slotRemoved(int slot);

 private:
  // A slot's model: none chosen, loading, loaded or failed (describe() names them).
  enum class Status { Empty, Loading, Loaded, Failed };
  struct Slot {
    QWidget* row = nullptr;
    QComboBox* spec = nullptr;
    QLineEdit* vocab = nullptr;
    HintLabel* state = nullptr;
    Status status = Status::Empty;
    QString message;
    SlotRequest loaded;  // the request last sent
  };
  int addSlot(bool pnaic, const QString& spec);
  SlotRequest requestOf(int slot) const;
  void requestLoad(int slot, bool force);
  void setState(int slot, Status status, const QString& message);

  QMap<int, Slot> slots_;
  int nextSlot_ = 0;
  QString device_;
  QString precision_ = QStringLiteral("fp32");
  QVBoxLayout* rows_;
};

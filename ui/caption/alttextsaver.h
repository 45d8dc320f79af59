// Captions saved as alt text in the photos' own metadata, off the UI thread:
// one file after another under the rules of `expnet caption --write-alt-text`
// (expnet/metadata/alt_text.h: temporary copy, fsync, rename; a person's alt
// text kept unless replacing is asked for; a sidecar where the image cannot be
// written safely), each file's outcome reported as it ends.
#pragma once

#include <QObject>
#include <QString>
#include <QVector>

#include <atomic>
#include <string>

class QThread;

struct AltTextJob {
  int row = 0;
  QString path;                      // the image (localpath.h: its bytes kept)
  QString caption, modelCaption;     // what is saved (edited or not), and what the model wrote
  QString builtinModel, checkpoint;  // the model that captioned it (name_alt_text_model)
};

struct AltTextChoices {
  bool sidecar = false;    // into sidecars only: the images are never touched
  bool overwrite = false;  // replace alt text a person wrote
  bool keepMtime = false;  // the images keep their modification times
};

struct AltTextTotals {
  int written = 0, sidecars = 0, skipped = 0, failed = 0, left = 0;  // left: not reached (cancelled)
};

class AltTextSaver : public QObject {
  Q_OBJECT
 public:
  using QObject::QObject;
  ~AltTextSaver() override;  // the file being written ends whole; the rest are left

  bool isSaving() const { return thread_ != nullptr; }
  // Starts saving `jobs` in order; ignored while a save runs.
  void save(const QVector<AltTextJob>& jobs, const AltTextChoices& choices);
  void cancel() { cancelled_ = true; }

 signals:
  // action: written, sidecar, skipped or failed (AltTextOutcome); reason as it says.
  void fileSaved(int row, const QString& action, const QString& reason);
  void finished(const AltTextTotals& totals);

 private:
  QThread* thread_ = nullptr;
  std::atomic<bool> cancelled_{false};
  AltTextTotals totals_;  // the thread's, read once it has finished
};

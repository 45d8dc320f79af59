// The Caption page's "Save as alt text": the captions of the selected or of all
// captioned images (as edited, or as the model wrote them) written into the
// photos' own XMP by an AltTextSaver, with the options of `expnet caption
// --write-alt-text` (sidecars only, replace a person's alt text, keep
// modification times), a progress bar and a summary; each file's result goes to
// its row. docs/metadata.md.
#pragma once

#include <QList>
#include <QWidget>

#include <functional>

#include "caption/alttextsaver.h"

class QAction;
class QLabel;
class QProgressBar;
class QToolButton;
class CaptionModel;

class AltTextBar : public QWidget {
  Q_OBJECT
 public:
  // `selectedRows`: the rows the user selected in the page's table.
  AltTextBar(CaptionModel* items, std::function<QList<int>()> selectedRows, QWidget* parent = nullptr);

  bool isSaving() const { return saver_->isSaving(); }
  AltTextChoices choices() const;
  void setChoices(const AltTextChoices& choices);
  QString summary() const;  // what the last save did ("" before any)

 public slots:
  // Saves the captioned rows among `rows` (all captioned rows when empty).
  void saveRows(const QList<int>& rows);
  void saveSelected() { saveRows(selectedRows_()); }
  void saveAll() { saveRows({}); }
  void cancel() { saver_->cancel(); }
  void updateState();  // enabled when a captioned row exists and nothing is being saved

 signals:
  void savingStarted();
  void savingFinished();

 private:
  void fileSaved(int row, const QString& action, const QString& reason);
  void finished(const AltTextTotals& totals);

  CaptionModel* items_;
  std::function<QList<int>()> selectedRows_;
  AltTextSaver* saver_;
  QToolButton* button_;
  QAction *sidecar_, *overwrite_, *keepMtime_;
  QProgressBar* bar_;
  QLabel* summary_;
};

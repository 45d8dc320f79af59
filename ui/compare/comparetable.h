// The Compare page's images: one row per image (thumbnail and file name), one
// column per decoding mode with its caption (groups coloured), steps and
// decode time. Rows hold each mode's ModeCaption, as the worker compared them;
// an image that could not be captioned shows its error on its own row.
#pragma once

#include <QImage>
#include <QJsonArray>
#include <QJsonObject>
#include <QStringList>
#include <QTableWidget>

#include "compare/compareworker.h"
#include "compare/groupcaption.h"

class QLabel;

class CompareTable : public QTableWidget {
  Q_OBJECT
 public:
  explicit CompareTable(QWidget* parent = nullptr);

  // New rows ("Queued" until their entry comes); images already listed are skipped.
  void addImages(const QStringList& images);
  void setThumbnail(const QString& image, const QImage& thumbnail);
  // An image's captions by every mode (modes in their column order).
  void setEntry(const ComparedImage& compared);
  // Every row of `images` still waiting gets `error` (the batch failed);
  // `permanent`: the input itself is unusable (missing file), never captioned again.
  void failImages(const QStringList& images, const QString& error, bool permanent = false);
  // Forgets every caption and mode column; returns the images to caption again.
  QStringList resetCaptions();
  void setShowDeleted(bool show);
  void clearRows();

  int rows() const { return static_cast<int>(rows_.size()); }
  bool hasImage(const QString& image) const;
  // The selected row's captions, empty when none.
  ModeCaptions selectedCaptions() const;
  QStringList modes() const { return modes_; }
  // [{image, modes: {MODE: caption as `expnet compare --json` has it}}] in row order (the screenshot's "rows").
  QJsonArray describeRows() const;

 signals:
  void selectionChangedTo(const ModeCaptions& captions);

 private:
  struct Row {
    QString image;
    ModeCaptions captions;
    QString error;
    bool permanent = false;
  };
  int rowOf(const QString& image) const;
  QLabel* cellLabel(int row, int column);
  void refreshRow(int row);
  void ensureMode(const QString& mode);

  QVector<Row> rows_;
  QStringList modes_;
  bool showDeleted_ = false;
};

// The Compare page's images: one row per image (thumbnail and file name), one
// column per decoding mode with its caption (groups coloured), steps and
// decode time. Rows hold the per_image entries of `expnet compare --json`;
// an image that could not be captioned shows its error on its own row.
#pragma once

#include <QImage>
#include <QJsonArray>
#include <QJsonObject>
#include <QStringList>
#include <QTableWidget>

class QLabel;

class CompareTable : public QTableWidget {
  Q_OBJECT
 public:
  explicit CompareTable(QWidget* parent = nullptr);

  // New rows ("Queued" until their entry comes); images already listed are skipped.
  void addImages(const QStringList& images);
  void setThumbnail(const QString& image, const QImage& thumbnail);
  // {image, captions: {MODE: {text, steps, decode_ms, groups?} or {error}}}.
  // `modes`: their column order.
  void setEntry(const QJsonObject& entry, const QStringList& modes);
  // Every row of `images` still waiting gets `error` (the batch failed);
  // `permanent`: the input itself is unusable (missing file), never captioned again.
  void failImages(const QStringList& images, const QString& error, bool permanent = false);
  // Forgets every caption and mode column; returns the images to caption again.
  QStringList resetCaptions();
  void setShowDeleted(bool show);
  void clearRows();

  int rows() const { return static_cast<int>(rows_.size()); }
  bool hasImage(const QString& image) const;
  // The selected row's captions ({MODE: caption}), empty when none.
  QJsonObject selectedCaptions() const;
  QStringList modes() const { return modes_; }
  // [{image, modes: {MODE: caption}}] in row order (the screenshot's "rows").
  QJsonArray describeRows() const;

 signals:
  void selectionChangedTo(const QJsonObject& captions);

 private:
  struct Row {
    QString image;
    QJsonObject captions;
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

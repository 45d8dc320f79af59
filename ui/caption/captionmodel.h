// The Caption page's items: one row per image with its thumbnail, status,
// caption (growing word by word while decoding; editable once done, the edit
// marked), n-best list with scores, timing split, the decoding settings used
// and what saving it as alt text did. Also the exports (CSV, JSON Lines, COCO
// results), written atomically.
#pragma once

#include <QAbstractTableModel>
#include <QImage>
#include <QJsonArray>
#include <QJsonObject>
#include <QString>
#include <QVector>

#include <functional>

#include "expnet/decode/captioner.h"

struct CaptionItem {
  enum class Status { Queued, Running, Done, Failed, Cancelled };
  QString display;  // as the user named it
  QString path;     // what is opened
  QImage thumbnail;
  Status status = Status::Queued;
  QString partial;     // best hypothesis so far while decoding
  QJsonArray nbest;    // [{text, score, sum_logprob}], best first
  QJsonObject ms;      // {preprocess, encode, decode}
  QJsonObject settings;  // decoding settings used, and the model's name, precision and device
  QString error;
  bool submitted = false;  // handed to the worker
  QString builtinModel, checkpoint;  // the model that captioned it: a built-in one by name, or a checkpoint file
  QString edited;                    // the caption as a person edited it ("" = as the model wrote it)
  QString altText;                   // what the last "Save as alt text" did to the file ("" = not saved)

  QString caption() const;       // the edited caption, else the best one, or the partial one while running
  QString modelCaption() const;  // the model's best caption, edited or not
  QString statusText() const;
  QString madeBy() const;  // "demo (bf16) · beam 3" once submitted, else empty
  QJsonObject toJson() const;
};

class CaptionModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { ImageColumn, CaptionColumn, StatusColumn, ColumnCount };
  using QAbstractTableModel::QAbstractTableModel;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  // A caption edited in place (done rows only); the model's own text again clears the mark.
  bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;

  // Appends queued items; returns the first new row.
  int append(const QVector<CaptionItem>& items);
  void clear();
  const CaptionItem& item(int row) const { return items_.at(row); }
  const QVector<CaptionItem>& items() const { return items_; }
  int pendingCount() const;  // queued or running

  // The row goes to the worker with these decoding settings.
  void setSubmitted(int row, const QJsonObject& settings, const QString& builtinModel, const QString& checkpoint);
  void setRunning(int row, const QImage& thumbnail);
  void setPartial(int row, const QString& caption);
  void setDone(int row, const expnet::CaptionedImage& result);
  void setFailed(int row, const QString& error);
  void setCancelled(int row);
  void setAltText(int row, const QString& result);

  // Exports the captioned items (failed ones too, with their error, in CSV and
  // JSON Lines; COCO results hold captioned images only). Throw
  // std::runtime_error naming the file and the reason.
  void exportCsv(const QString& file) const;
  void exportJsonLines(const QString& file) const;
  void exportCocoResults(const QString& file) const;

  // COCO image id: the number that ends the file name (COCO_val2014_000000391895.jpg
  // -> 391895), else the row number counted from 1.
  static qint64 cocoImageId(const QString& path, int row);

 signals:
  void itemChanged(int row);

 private:
  void update(int row, const std::function<void(CaptionItem&)>& change);
  QVector<CaptionItem> items_;
};

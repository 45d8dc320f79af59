// The Datasets page's grid: the images matching the page's query, laid out
// `columns` to a row of a table (a table view's layout costs nothing per image,
// where a wrapping list lays out every one). Only the pages the view asks for
// are fetched (100 images a page, from the IndexWorker) and only the thumbnails
// it paints are loaded (ThumbnailLoader); until then cells show a placeholder.
// Nothing here touches SQLite or the disk: the view never waits. "Position" is
// an image's place in the query's order (0-based); cells map to positions.
#pragma once

#include <QAbstractTableModel>
#include <QHash>
#include <QImage>
#include <QJsonArray>
#include <QPixmap>
#include <QSet>

#include "datasets/indexworker.h"

class ImageGridModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  static constexpr int kPageSize = 100;
  enum Role { CocoidRole = Qt::UserRole + 1, ScoreRole };

  explicit ImageGridModel(QObject* parent = nullptr);

  // A new query: every row forgotten; `generation` tags the pages that belong to it.
  void reset(int generation, qint64 total);
  int generation() const { return generation_; }
  qint64 total() const { return total_; }
  void addPage(int generation, int page, const QVector<GridItem>& items);
  void setThumbnail(qint64 cocoid, const QImage& thumbnail);
  void setThumbnailError(qint64 cocoid, const QString& reason);
  // Another dataset: its ids mean other images.
  void forgetThumbnails();
  // The loader dropped this request (scrolled past): asked again if painted again.
  void forgetRequest(qint64 cocoid);
  // The item at `row` when its page has arrived.
  const GridItem* item(int position) const;
  // Cells per table row (the page sets it from the view's width).
  void setColumns(int columns);
  int columns() const { return columns_; }
  int positionOf(const QModelIndex& index) const { return index.row() * columns_ + index.column(); }
  QModelIndex indexOf(int position) const { return index(position / columns_, position % columns_); }
  QString thumbnailError(qint64 cocoid) const { return thumbnailErrors_.value(cocoid); }
  // The position's item has come but neither its thumbnail nor its error yet.
  bool thumbnailPending(int position) const;
  // The items at these positions that have come: id, file, split, first reference,
  // the evaluation's caption and scores, the thumbnail's error (the page's describe()).
  QJsonArray describe(const QVector<int>& positions) const;

  int rowCount(const QModelIndex& parent = QModelIndex()) const override;
  int columnCount(const QModelIndex& parent = QModelIndex()) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;  // the cells after the last image: none

 signals:
  void pageWanted(int generation, int page) const;
  void thumbnailWanted(qint64 cocoid) const;

 private:
  QPixmap placeholder(const QString& text) const;

  int generation_ = 0;
  qint64 total_ = 0;
  QHash<int, QVector<GridItem>> pages_;
  mutable QSet<int> pagesAsked_;
  QHash<qint64, QPixmap> thumbnails_;
  QHash<qint64, QString> thumbnailErrors_;
  mutable QSet<qint64> thumbnailsAsked_;
  QHash<qint64, int> positionOf_;  // of the pages arrived
  int columns_ = 4;
  QPixmap loading_, missing_;
};

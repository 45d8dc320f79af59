// The Datasets page's grid: a list model over the images matching the page's
// query, of which only the pages the view asks for are fetched (100 images a
// page, from the IndexWorker) and only the thumbnails it paints are loaded
// (ThumbnailLoader); until then rows show a placeholder. Nothing here touches
// SQLite or the disk: the view never waits.
#pragma once

#include <QAbstractListModel>
#include <QHash>
#include <QImage>
#include <QPixmap>
#include <QSet>

#include "datasets/indexworker.h"

class ImageGridModel : public QAbstractListModel {
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
  const GridItem* item(int row) const;
  QString thumbnailError(qint64 cocoid) const { return thumbnailErrors_.value(cocoid); }
  // The row's item has come but neither its thumbnail nor its error yet.
  bool thumbnailPending(int row) const;

  int rowCount(const QModelIndex& parent = QModelIndex()) const override;
  QVariant data(const QModelIndex& index, int role) const override;

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
  QHash<qint64, int> rowOf_;  // of the pages arrived
  QPixmap loading_, missing_;
};

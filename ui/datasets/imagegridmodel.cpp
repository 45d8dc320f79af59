#include "datasets/imagegridmodel.h"

#include <QJsonObject>
#include <QPainter>

#include "common/theme.h"
#include "datasets/thumbnailloader.h"

ImageGridModel::ImageGridModel(QObject* parent) : QAbstractTableModel(parent) {
  loading_ = placeholder(QString());
  missing_ = placeholder(QStringLiteral("missing"));
}

QPixmap ImageGridModel::placeholder(const QString& text) const {
  const Theme theme = Theme::current();
  QPixmap pixmap(ThumbnailLoader::kSize, ThumbnailLoader::kSize);
  pixmap.fill(theme.imageBackdrop());
  if (!text.isEmpty()) {
    QPainter painter(&pixmap);
    painter.setPen(theme.imageBackdropText());
    QFont font = painter.font();
    font.setPointSize(18);
    painter.setFont(font);
    painter.drawText(pixmap.rect(), Qt::AlignCenter, text);
  }
  return pixmap;
}

void ImageGridModel::reset(int generation, qint64 total) {
  beginResetModel();
  generation_ = generation;
  total_ = total;
  pages_.clear();
  pagesAsked_.clear();
  positionOf_.clear();
  endResetModel();
}

void ImageGridModel::setColumns(int columns) {
  columns = std::max(1, columns);
  if (columns == columns_) return;
  beginResetModel();
  columns_ = columns;
  endResetModel();
}

void ImageGridModel::addPage(int generation, int page, const QVector<GridItem>& items) {
  if (generation != generation_) return;
  pages_.insert(page, items);
  const int first = page * kPageSize;
  for (int i = 0; i < items.size(); ++i) positionOf_.insert(items[i].cocoid, first + i);
  if (items.isEmpty()) return;
  const int last = first + int(items.size()) - 1;
  emit dataChanged(index(first / columns_, 0), index(last / columns_, columns_ - 1));
}

void ImageGridModel::setThumbnail(qint64 cocoid, const QImage& thumbnail) {
  thumbnails_.insert(cocoid, QPixmap::fromImage(thumbnail));
  if (thumbnails_.size() > 20000) forgetThumbnails();  // a bound on memory; the index keeps them on disk
  const int position = positionOf_.value(cocoid, -1);
  if (position >= 0) emit dataChanged(indexOf(position), indexOf(position), {Qt::DecorationRole});
}

void ImageGridModel::forgetThumbnails() {
  thumbnails_.clear();
  thumbnailErrors_.clear();
  thumbnailsAsked_.clear();
}

void ImageGridModel::forgetRequest(qint64 cocoid) {
  thumbnailsAsked_.remove(cocoid);
  const int position = positionOf_.value(cocoid, -1);
  if (position >= 0) emit dataChanged(indexOf(position), indexOf(position), {Qt::DecorationRole});  // repainted if on screen
}

void ImageGridModel::setThumbnailError(qint64 cocoid, const QString& reason) {
  thumbnailErrors_.insert(cocoid, reason);
  const int position = positionOf_.value(cocoid, -1);
  if (position >= 0) emit dataChanged(indexOf(position), indexOf(position), {Qt::DecorationRole, Qt::ToolTipRole});
}

const GridItem* ImageGridModel::item(int position) const {
  if (position < 0) return nullptr;
  const auto it = pages_.constFind(position / kPageSize);
  if (it == pages_.constEnd() || position % kPageSize >= it->size()) return nullptr;
  return &(*it)[position % kPageSize];
}

bool ImageGridModel::thumbnailPending(int position) const {
  const GridItem* it = item(position);
  return it && !thumbnails_.contains(it->cocoid) && !thumbnailErrors_.contains(it->cocoid);
}

int ImageGridModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>((total_ + columns_ - 1) / columns_);
}

int ImageGridModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : columns_; }

Qt::ItemFlags ImageGridModel::flags(const QModelIndex& index) const {
  return index.isValid() && positionOf(index) < total_ ? Qt::ItemIsEnabled | Qt::ItemIsSelectable : Qt::NoItemFlags;
}

QVariant ImageGridModel::data(const QModelIndex& index, int role) const {
  const int position = positionOf(index);
  if (!index.isValid() || position >= total_) return {};
  const GridItem* it = item(position);
  if (!it) {
    // Asked for by the view: the cell is (about to be) on screen.
    const int page = position / kPageSize;
    if (!pagesAsked_.contains(page)) {
      pagesAsked_.insert(page);
      emit pageWanted(generation_, page);
    }
    if (role == Qt::DecorationRole) return loading_;
    if (role == Qt::DisplayRole) return QStringLiteral("…");
    return {};
  }
  switch (role) {
    case Qt::DisplayRole:
      return it->evaluated ? QStringLiteral("%1 · %2").arg(it->name).arg(it->ciderD, 0, 'f', 2) : it->name;
    case Qt::DecorationRole: {
      const auto thumb = thumbnails_.constFind(it->cocoid);
      if (thumb != thumbnails_.constEnd()) return *thumb;
      if (thumbnailErrors_.contains(it->cocoid)) return missing_;
      if (!thumbnailsAsked_.contains(it->cocoid)) {
        thumbnailsAsked_.insert(it->cocoid);
        emit thumbnailWanted(it->cocoid);
      }
      return loading_;
    }
    case Qt::ToolTipRole: {
      QString tip = QStringLiteral("%1 (%2, id %3)").arg(it->file, it->split).arg(it->cocoid);
      if (thumbnailErrors_.contains(it->cocoid)) tip += QStringLiteral("\n") + thumbnailErrors_.value(it->cocoid);
      if (it->evaluated) tip += QStringLiteral("\nCIDEr-D %1 · BLEU-4 %2").arg(it->ciderD, 0, 'f', 3).arg(it->bleu4, 0, 'f', 3);
      return tip;
    }
    case CocoidRole:
      return it->cocoid;
    case ScoreRole:
      return it->evaluated ? QVariant(it->ciderD) : QVariant();
    default:
      return {};
  }
}

QJsonArray ImageGridModel::describe(const QVector<int>& positions) const {
  QJsonArray items;
  for (const int position : positions) {
    const GridItem* item = this->item(position);
    if (!item) continue;
    QJsonObject entry{{"cocoid", item->cocoid},
                      {"file", item->file},
                      {"split", item->split},
                      {"reference", item->references.value(0)}};
    if (item->evaluated) {
      entry.insert(QStringLiteral("caption"), item->caption);
      entry.insert(QStringLiteral("CIDEr-D"), item->ciderD);
      entry.insert(QStringLiteral("Bleu_4"), item->bleu4);
    }
    const QString error = thumbnailError(item->cocoid);
    if (!error.isEmpty()) entry.insert(QStringLiteral("thumbnail_error"), error);
    items.append(entry);
  }
  return items;
}

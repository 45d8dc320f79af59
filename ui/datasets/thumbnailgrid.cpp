#include "datasets/thumbnailgrid.h"

#include <QHeaderView>

#include "datasets/imagegridmodel.h"
#include "datasets/thumbnaildelegate.h"

// A table rather than a wrapping list view: its layout costs nothing per image,
// where a list view lays out all 123,287 of a COCO-sized set at once.
ThumbnailGrid::ThumbnailGrid(ImageGridModel* model) : model_(model), delegate_(new ThumbnailDelegate(this)) {
  setObjectName(QStringLiteral("imageGrid"));
  setModel(model);
  horizontalHeader()->hide();
  verticalHeader()->hide();
  horizontalHeader()->setSectionResizeMode(QHeaderView::Fixed);
  verticalHeader()->setSectionResizeMode(QHeaderView::Fixed);
  setShowGrid(false);
  setSelectionMode(QAbstractItemView::SingleSelection);
  setSelectionBehavior(QAbstractItemView::SelectItems);
  setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  setVerticalScrollMode(QAbstractItemView::ScrollPerPixel);
  setTextElideMode(Qt::ElideMiddle);
  setWordWrap(false);
  setItemDelegate(delegate_);
  setThumbnailSize(112);
}

void ThumbnailGrid::setThumbnailSize(int size) {
  setIconSize(QSize(size, size));
  delegate_->setSizes(QSize(size + 24, size + 30), QSize(size, size));
  fitColumns();
}

void ThumbnailGrid::resizeEvent(QResizeEvent* event) {
  QTableView::resizeEvent(event);
  fitColumns();
}

void ThumbnailGrid::fitColumns() {
  const QSize cell = delegate_->sizeHint({}, {});
  const int width = viewport()->width();
  const int columns = std::max(1, width / cell.width());
  // The cells share the width: no empty band at the right.
  horizontalHeader()->setDefaultSectionSize(std::max(cell.width(), width / columns));
  verticalHeader()->setDefaultSectionSize(cell.height());
  if (columns == model_->columns()) return;
  const int position = currentPosition();
  model_->setColumns(columns);
  if (position >= 0) setCurrentPosition(position);
}

QVector<int> ThumbnailGrid::visiblePositions() const {
  QVector<int> positions;
  const int first = rowAt(0);
  int last = rowAt(viewport()->height() - 1);
  if (first < 0) return positions;
  if (last < 0) last = model_->rowCount() - 1;
  for (int row = first; row <= last; ++row)
    for (int column = 0; column < model_->columns(); ++column) {
      const int position = row * model_->columns() + column;
      if (position < model_->total()) positions << position;
    }
  return positions;
}

int ThumbnailGrid::currentPosition() const {
  return currentIndex().isValid() ? model_->positionOf(currentIndex()) : -1;
}

void ThumbnailGrid::setCurrentPosition(int position) { setCurrentIndex(model_->indexOf(position)); }

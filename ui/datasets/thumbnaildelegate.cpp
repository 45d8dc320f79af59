#include "datasets/thumbnaildelegate.h"

QSize ThumbnailDelegate::sizeHint(const QStyleOptionViewItem&, const QModelIndex&) const { return cell_; }

void ThumbnailDelegate::initStyleOption(QStyleOptionViewItem* option, const QModelIndex& index) const {
  QStyledItemDelegate::initStyleOption(option, index);
  option->decorationPosition = QStyleOptionViewItem::Top;
  option->decorationSize = icon_;  // a pixmap would be drawn at its own (stored) size
  option->decorationAlignment = Qt::AlignHCenter | Qt::AlignVCenter;
  option->displayAlignment = Qt::AlignHCenter | Qt::AlignBottom;
  option->textElideMode = Qt::ElideMiddle;
}

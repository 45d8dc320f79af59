#include "datasets/thumbnaildelegate.h"

#include <algorithm>

QSize ThumbnailDelegate::sizeHint(const QStyleOptionViewItem&, const QModelIndex&) const { return cell_; }

void ThumbnailDelegate::initStyleOption(QStyleOptionViewItem* option, const QModelIndex& index) const {
  QStyledItemDelegate::initStyleOption(option, index);
  option->decorationPosition = QStyleOptionViewItem::Top;
  option->decorationSize = icon_;  // a pixmap would be drawn at its own (stored) size
  option->decorationAlignment = Qt::AlignHCenter | Qt::AlignVCenter;
  option->displayAlignment = Qt::AlignHCenter | Qt::AlignBottom;
  option->textElideMode = Qt::ElideMiddle;
  // "name · score" where the name does not fit: the score whole, the name without its
  // extension and cut at its start, since file names differ at their end (the view cut
  // "shapes_000038.png · 1.40" to "shapes_00... · 1.40": every tile alike).
  const qsizetype dot = option->text.lastIndexOf(QStringLiteral(" · "));
  if (dot < 0) return;
  const QString score = option->text.mid(dot), name = option->text.left(dot);
  const int room = std::max(0, option->rect.width() - 8 - option->fontMetrics.horizontalAdvance(score));
  if (option->fontMetrics.horizontalAdvance(name) <= room) return;
  const qsizetype extension = name.lastIndexOf(QLatin1Char('.'));
  option->text = option->fontMetrics.elidedText(extension > 0 ? name.left(extension) : name, Qt::ElideLeft, room) + score;
}

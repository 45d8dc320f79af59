// Paints a grid cell of the Datasets page: the thumbnail above its name. Its
// size is fixed (the zoom), so laying out 123,287 rows asks no row for data.
#pragma once

#include <QStyledItemDelegate>

class ThumbnailDelegate : public QStyledItemDelegate {
 public:
  using QStyledItemDelegate::QStyledItemDelegate;
  // The cell and the thumbnail drawn in it (thumbnails are stored larger).
  void setSizes(const QSize& cell, const QSize& icon) {
    cell_ = cell;
    icon_ = icon;
  }
  QSize sizeHint(const QStyleOptionViewItem& option, const QModelIndex& index) const override;

 protected:
  void initStyleOption(QStyleOptionViewItem* option, const QModelIndex& index) const override;

 private:
  QSize cell_{132, 138}, icon_{112, 112};
};

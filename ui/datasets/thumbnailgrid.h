// The Datasets page's grid view: a table of thumbnail cells over an
// ImageGridModel, as many cells to a row as its width holds (refitted when it
// is resized or zoomed), the selected image kept when the cells move.
#pragma once

#include <QTableView>
#include <QVector>

class ImageGridModel;
class ThumbnailDelegate;

class ThumbnailGrid : public QTableView {
 public:
  explicit ThumbnailGrid(ImageGridModel* model);

  void setThumbnailSize(int size);
  // The images on screen, by position in the query's order.
  QVector<int> visiblePositions() const;
  // The selected image's position, -1 when none; select one.
  int currentPosition() const;
  void setCurrentPosition(int position);

 protected:
  void resizeEvent(QResizeEvent* event) override;

 private:
  void fitColumns();

  ImageGridModel* model_;
  ThumbnailDelegate* delegate_;
};

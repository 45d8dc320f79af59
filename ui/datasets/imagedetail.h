// The Datasets page's detail panel for the selected image: the image fitted to
// the panel (decoded off the UI thread), its references (the searched words
// highlighted), its metadata, the evaluated model's caption and scores (and a
// second evaluation's, to compare), and "Caption with the loaded model" /
// "Open in Attention page".
#pragma once

#include <QFutureWatcher>
#include <QImage>
#include <QJsonObject>
#include <QWidget>

#include "datasets/indexworker.h"

class QLabel;
class QPushButton;
class QTextBrowser;

class ImageDetail : public QWidget {
  Q_OBJECT
 public:
  explicit ImageDetail(QWidget* parent = nullptr);

  // `words`: the search, highlighted in the references. `other`: the same image
  // in a second evaluation (null: none).
  void showItem(const GridItem& item, const QString& words, const GridItem* other = nullptr);
  void clear();
  void showModelCaption(const QString& caption);  // from "Caption with the loaded model"
  void setCaptionEnabled(bool enabled, const QString& why);
  bool hasItem() const { return !item_.file.isEmpty(); }  // (ids may be 0)
  qint64 cocoid() const { return item_.cocoid; }
  QString file() const { return item_.file; }
  QJsonObject describe() const;

 signals:
  void captionRequested(const QString& file);
  void attentionRequested(const QString& file);

 protected:
  void resizeEvent(QResizeEvent* event) override;

 private:
  void showImage();
  void render();

  GridItem item_;
  GridItem other_;  // !other_.evaluated: no second evaluation
  QString words_;
  QImage image_;
  QString imageError_;
  QString modelCaption_;
  QLabel* picture_;
  QTextBrowser* text_;
  QPushButton* caption_;
  QPushButton* attention_;
  QFutureWatcher<QImage> loading_;
};

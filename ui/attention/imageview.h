// Shows one image scaled to fit its widget, aspect ratio kept, centred on a
// neutral background; a text stands in while there is no image.
#pragma once

#include <QImage>
#include <QPainter>
#include <QWidget>

class ImageView : public QWidget {
 public:
  explicit ImageView(QWidget* parent = nullptr) : QWidget(parent) {
    setMinimumSize(160, 120);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
  }
  void setImage(const QImage& image) {
    image_ = image;
    update();
  }
  void setPlaceholder(const QString& text) {
    placeholder_ = text;
    update();
  }
  const QImage& image() const { return image_; }

 protected:
  void paintEvent(QPaintEvent*) override {
    QPainter painter(this);
    painter.fillRect(rect(), QColor(0x2b, 0x30, 0x36));
    if (image_.isNull()) {
      painter.setPen(QColor(0xc8, 0xd0, 0xd8));
      painter.drawText(rect().adjusted(12, 12, -12, -12), Qt::AlignCenter | Qt::TextWordWrap, placeholder_);
      return;
    }
    const QSize fitted = image_.size().scaled(size(), Qt::KeepAspectRatio);
    const QRect target(QPoint((width() - fitted.width()) / 2, (height() - fitted.height()) / 2), fitted);
    painter.setRenderHint(QPainter::SmoothPixmapTransform);
    painter.drawImage(target, image_);
  }

 private:
  QImage image_;
  QString placeholder_;
};

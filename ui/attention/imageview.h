// Shows one image scaled to fit its widget, aspect ratio kept, centred on a
// neutral background; a text stands in while there is no image.
#pragma once

#include <QImage>
#include <QPainter>
#include <QWidget>

#include "common/theme.h"

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
    const Theme theme = Theme::current();
    painter.fillRect(rect(), theme.imageBackdrop());
    if (image_.isNull()) {
      painter.setPen(theme.imageBackdropText());
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

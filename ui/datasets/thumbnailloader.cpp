#include "datasets/thumbnailloader.h"

#include <QMutexLocker>

#include "expnet/data/dataset_index.h"
#include "expnet/image/image_decode.h"

ThumbnailLoader::ThumbnailLoader() = default;
ThumbnailLoader::~ThumbnailLoader() = default;

void ThumbnailLoader::setIndex(const QString& indexPath) {
  QMutexLocker lock(&mutex_);
  indexPath_ = indexPath;
  queue_.clear();
}

qint64 ThumbnailLoader::request(qint64 cocoid) {
  QMutexLocker lock(&mutex_);
  queue_.push_front(cocoid);
  qint64 dropped = 0;
  if (queue_.size() > kQueue) {
    dropped = queue_.back();
    queue_.pop_back();
  }
  if (!draining_) {
    draining_ = true;
    QMetaObject::invokeMethod(this, &ThumbnailLoader::drain, Qt::QueuedConnection);
  }
  return dropped;
}

void ThumbnailLoader::drain() {
  for (;;) {
    qint64 cocoid = 0;
    QString path;
    {
      QMutexLocker lock(&mutex_);
      if (queue_.empty()) {
        draining_ = false;
        return;
      }
      cocoid = queue_.front();
      queue_.pop_front();
      path = indexPath_;
    }
    try {
      if (path != openedPath_) {
        index_.reset();
        openedPath_ = path;
        if (!path.isEmpty()) index_ = std::make_unique<expnet::DatasetIndex>(path.toStdString());
      }
      if (!index_) continue;
      const auto png = index_->thumbnail(cocoid, kSize, [](const std::string& file) { return expnet::load_image_rgb(file); });
      QImage image;
      if (!image.loadFromData(png.data(), static_cast<int>(png.size()), "PNG"))
        emit failed(cocoid, QStringLiteral("the cached thumbnail cannot be decoded"));
      else
        emit ready(cocoid, image);
    } catch (const std::exception& e) {
      emit failed(cocoid, QString::fromStdString(e.what()));
    }
  }
}

// Thumbnails for the Datasets grid, off the UI thread: each is decoded and
// scaled once, then read back from the index's thumbnails table (on disk).
// Requests are served newest first and old ones are dropped, so after a fast
// scroll the rows now on screen come first. Own thread, own SQLite connection.
#pragma once

#include <QImage>
#include <QMutex>
#include <QObject>
#include <QString>

#include <atomic>
#include <deque>
#include <memory>

namespace expnet {
class DatasetIndex;
}

class ThumbnailLoader : public QObject {
  Q_OBJECT
 public:
  static constexpr int kSize = 192;  // stored size; the view scales down for its zoom

  ThumbnailLoader();
  ~ThumbnailLoader() override;

  // Thread-safe. The index to read (empty: none); pending requests are dropped.
  void setIndex(const QString& indexPath);
  // Thread-safe: asks for a thumbnail (newest first; at most kQueue waiting).
  // Returns the request dropped to make room (0: none), to be asked again if needed.
  qint64 request(qint64 cocoid);

 signals:
  void ready(qint64 cocoid, const QImage& thumbnail);
  void failed(qint64 cocoid, const QString& reason);

 private:
  static constexpr size_t kQueue = 400;
  void drain();  // in the loader's thread

  QMutex mutex_;
  std::deque<qint64> queue_;
  QString indexPath_, openedPath_;
  bool draining_ = false;
  std::unique_ptr<expnet::DatasetIndex> index_;  // used in the loader's thread only
};

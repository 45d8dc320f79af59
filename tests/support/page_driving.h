// Driving a studio page from a test as a user would: dropping files on it and
// running the event loop until its work is done.
#pragma once

#include <QCoreApplication>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QElapsedTimer>
#include <QMimeData>
#include <QTimer>
#include <QUrl>
#include <QWidget>
#include <QtTest>

#include <string>

namespace expnet_test {

// Runs the event loop until `done()` or `ms` pass; false on timeout.
template <typename Done>
bool waitUntil(Done done, int ms = 300000) {
  QElapsedTimer clock;
  clock.start();
  while (!done()) {
    if (clock.elapsed() > ms) return false;
    QTest::qWait(10);
  }
  return true;
}

// The longest the event loop went without turning (a 10 ms timer's gaps), from
// construction until stop(): what a user would feel as a frozen window.
class StallMeter {
 public:
  StallMeter() {
    tick_.setInterval(10);
    QObject::connect(&tick_, &QTimer::timeout, [this] {
      longest_ = std::max(longest_, clock_.elapsed() - last_);
      last_ = clock_.elapsed();
    });
    clock_.start();
    tick_.start();
  }
  void stop() { tick_.stop(); }
  qint64 longestGapMs() const { return longest_; }

 private:
  QElapsedTimer clock_;
  QTimer tick_;
  qint64 last_ = 0, longest_ = 0;
};

// Drags `paths` onto the middle of `target` and drops them; both events must be accepted.
// A file manager's file:// URL of a name given as bytes (%XX kept: a name
// that is not UTF-8 stays exactly that name).
inline QUrl fileUrlOfBytes(const std::string& path) {
  return QUrl::fromEncoded("file://" + QByteArray::fromStdString(path).toPercentEncoding("/"));
}

inline void dropUrls(QWidget& target, const QList<QUrl>& urls) {
  QMimeData mime;
  mime.setUrls(urls);
  const QPointF centre(target.width() / 2.0, target.height() / 2.0);
  QDragEnterEvent enter(centre.toPoint(), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
  QCoreApplication::sendEvent(&target, &enter);
  QVERIFY(enter.isAccepted());
  QDropEvent drop(centre, Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
  QCoreApplication::sendEvent(&target, &drop);
  QVERIFY(drop.isAccepted());
}

inline void dropFiles(QWidget& target, const QStringList& paths) {
  QList<QUrl> urls;
  for (const auto& path : paths) urls << QUrl::fromLocalFile(path);
  dropUrls(target, urls);
}

}  // namespace expnet_test

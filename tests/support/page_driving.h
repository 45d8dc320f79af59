// Driving a studio page from a test as a user would: dropping files on it and
// running the event loop until its work is done.
#pragma once

#include <QCoreApplication>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QElapsedTimer>
#include <QMimeData>
#include <QUrl>
#include <QWidget>
#include <QtTest>

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

// Drags `paths` onto the middle of `target` and drops them; both events must be accepted.
inline void dropFiles(QWidget& target, const QStringList& paths) {
  QMimeData mime;
  QList<QUrl> urls;
  for (const auto& path : paths) urls << QUrl::fromLocalFile(path);
  mime.setUrls(urls);
  const QPointF centre(target.width() / 2.0, target.height() / 2.0);
  QDragEnterEvent enter(centre.toPoint(), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
  QCoreApplication::sendEvent(&target, &enter);
  QVERIFY(enter.isAccepted());
  QDropEvent drop(centre, Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
  QCoreApplication::sendEvent(&target, &drop);
  QVERIFY(drop.isAccepted());
}

}  // namespace expnet_test

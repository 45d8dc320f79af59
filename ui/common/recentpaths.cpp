#include "common/recentpaths.h"

#include <QAction>
#include <QFileInfo>
#include <QMenu>

void RecentPaths::add(const QStringList& paths) {
  for (const QString& path : paths) {
    const QString absolute = QFileInfo(path).absoluteFilePath();
    paths_.removeAll(absolute);
    paths_.prepend(absolute);
  }
  while (paths_.size() > kMax) paths_.removeLast();
}

void RecentPaths::setPaths(const QStringList& paths) {
  paths_ = paths.mid(0, kMax);
}

void RecentPaths::fillMenu(QMenu* menu, const std::function<void(const QString&)>& open) const {
  menu->clear();
  for (const QString& path : paths_) menu->addAction(path, menu, [open, path] { open(path); });
  if (paths_.isEmpty()) menu->addAction(QStringLiteral("(nothing added yet)"))->setEnabled(false);
}

// Files and folders opened lately, newest first, at most kMax: the Caption
// page's Recent button and the File > Recent menu show the same list.
#pragma once

#include <QStringList>

#include <functional>

class QMenu;

class RecentPaths {
 public:
  static constexpr int kMax = 10;

  // Puts each path (made absolute) first, dropping its older entry and the oldest beyond kMax.
  void add(const QStringList& paths);
  void setPaths(const QStringList& paths);
  const QStringList& paths() const { return paths_; }

  // Fills `menu` with one item per path calling `open`, or a disabled "(nothing opened yet)".
  void fillMenu(QMenu* menu, const std::function<void(const QString&)>& open) const;

 private:
  QStringList paths_;
};

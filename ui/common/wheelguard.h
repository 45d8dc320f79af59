// The mouse wheel scrolls the page under the pointer: a combo box, spin box or
// slider takes the wheel only once it has the keyboard focus (clicked or tabbed
// to), as in most desktop programs. Without it, turning the wheel to scroll a
// page changed whatever box passed under the pointer (at QT_SCALE_FACTOR=2 the
// Caption page's Device went to cuda:0). MainWindow installs one on the application.
#pragma once

#include <QObject>

class WheelGuard : public QObject {
  Q_OBJECT

 public:
  explicit WheelGuard(QObject* parent = nullptr);

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;
};

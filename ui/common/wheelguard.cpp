#include "common/wheelguard.h"

#include <QAbstractScrollArea>
#include <QAbstractSlider>
#include <QAbstractSpinBox>
#include <QComboBox>
#include <QCoreApplication>
#include <QEvent>
#include <QScrollBar>
#include <QWidget>

namespace {

bool takesValueByWheel(const QWidget* widget) {
  return qobject_cast<const QComboBox*>(widget) || qobject_cast<const QAbstractSpinBox*>(widget) ||
         (qobject_cast<const QAbstractSlider*>(widget) && !qobject_cast<const QScrollBar*>(widget));
}

}  // namespace

WheelGuard::WheelGuard(QObject* parent) : QObject(parent) {}

bool WheelGuard::eventFilter(QObject* watched, QEvent* event) {
  auto* widget = qobject_cast<QWidget*>(watched);
  if (widget == nullptr || !takesValueByWheel(widget)) return false;
  // Qt gives wheel-focus widgets the focus before they see the turn: click or tab instead.
  if (event->type() == QEvent::Polish && widget->focusPolicy() == Qt::WheelFocus)
    widget->setFocusPolicy(Qt::StrongFocus);
  if (event->type() != QEvent::Wheel || widget->hasFocus()) return false;
  // The turn goes to the scroll area around the box, as if the box were not there.
  for (QWidget* above = widget->parentWidget(); above != nullptr; above = above->parentWidget())
    if (auto* area = qobject_cast<QAbstractScrollArea*>(above)) {
      QCoreApplication::sendEvent(area->viewport(), event);
      return true;
    }
  return true;
}

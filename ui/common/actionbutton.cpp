#include "common/actionbutton.h"

#include <QAction>

ActionButton::ActionButton(const QString& text, const QList<QKeySequence>& keys, const QString& tip, QWidget* owner)
    : QPushButton(text), primary_(keys.value(0)) {
  auto* action = new QAction(text, owner);
  action->setShortcuts(keys);
  action->setShortcutContext(Qt::WidgetWithChildrenShortcut);
  owner->addAction(action);
  // click() does nothing on a disabled button, so the shortcut follows the button's state.
  connect(action, &QAction::triggered, this, &QPushButton::click);
  setTip(tip);
}

void ActionButton::setTip(const QString& tip) {
  setToolTip(QStringLiteral("%1 (%2)").arg(tip, primary_.toString(QKeySequence::NativeText)));
}

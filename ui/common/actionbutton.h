// The pages' command buttons: a push button whose shortcut works anywhere on
// its page (not only when the button has focus) and is named in its tooltip,
// "Load the model (Ctrl+L)". A disabled button ignores its shortcut.
#pragma once

#include <QKeySequence>
#include <QList>
#include <QPushButton>

class ActionButton : public QPushButton {
  Q_OBJECT
 public:
  // `owner` (the page) holds the shortcut; the first of `keys` is the one the tooltip names.
  ActionButton(const QString& text, const QList<QKeySequence>& keys, const QString& tip, QWidget* owner);
  ActionButton(const QString& text, const QKeySequence& key, const QString& tip, QWidget* owner)
      : ActionButton(text, QList<QKeySequence>{key}, tip, owner) {}

  // Replaces the tooltip, keeping the shortcut's name after it.
  void setTip(const QString& tip);

 private:
  QKeySequence primary_;
};

// A plain command button (no shortcut of its own) that calls `slot` of `receiver` when clicked.
template <typename Receiver, typename Slot>
QPushButton* commandButton(const QString& text, const QString& tip, Receiver* receiver, Slot slot) {
  auto* button = new QPushButton(text);
  button->setToolTip(tip);
  QObject::connect(button, &QPushButton::clicked, receiver, slot);
  return button;
}

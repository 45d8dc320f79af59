#include "common/formfields.h"

#include <QComboBox>
#include <QMenu>
#include <QSpinBox>
#include <QToolButton>

QSpinBox* integerField(const QString& name, int low, int high, int value, const QString& special, const QString& tip) {
  auto* box = new QSpinBox;
  box->setObjectName(name);
  box->setRange(low, high);
  box->setValue(value);
  box->setSpecialValueText(special);
  box->setToolTip(tip);
  return box;
}

QComboBox* choiceField(const QString& name, const QStringList& items, const QString& tip) {
  auto* box = new QComboBox;
  box->setObjectName(name);
  box->addItems(items);
  box->setToolTip(tip);
  box->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  return box;
}

QToolButton* menuButton(const QString& name, const QString& text, const QString& tip, int height,
                        const std::function<void(QMenu*)>& fill) {
  auto* button = new QToolButton;
  button->setObjectName(name);
  button->setText(text);
  button->setToolTip(tip);
  button->setPopupMode(QToolButton::InstantPopup);
  button->setMinimumHeight(height);
  auto* menu = new QMenu(button);
  button->setMenu(menu);
  QObject::connect(menu, &QMenu::aboutToShow, button, [menu, fill] { fill(menu); });
  return button;
}

QComboBox* splitField(const QString& name, const QString& current, const QString& tip) {
  QComboBox* box = choiceField(name,
                               {QStringLiteral("train"), QStringLiteral("restval"), QStringLiteral("val"),
                                QStringLiteral("test"), QStringLiteral("all")},
                               tip);
  box->setCurrentText(current);
  return box;
}

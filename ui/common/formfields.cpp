#include "common/formfields.h"

#include <QComboBox>
#include <QSpinBox>

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

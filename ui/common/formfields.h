// Small form controls built the same way on every page: an object name (tests
// and settings find controls by it), its range or items, and a tooltip.
#pragma once

#include <QString>
#include <QStringList>

class QComboBox;
class QSpinBox;

// An integer field; `special` names its minimum ("off", "model's") when not empty.
QSpinBox* integerField(const QString& name, int low, int high, int value, const QString& special, const QString& tip);
// A combo box as wide as its longest item.
QComboBox* choiceField(const QString& name, const QStringList& items, const QString& tip);

// Small form controls built the same way on every page: an object name (tests
// and settings find controls by it), its range or items, and a tooltip.
#pragma once

#include <QString>
#include <QStringList>

#include <functional>

class QComboBox;
class QMenu;
class QSpinBox;
class QToolButton;

// An integer field; `special` names its minimum ("off", "model's") when not empty.
QSpinBox* integerField(const QString& name, int low, int high, int value, const QString& special, const QString& tip);
// A combo box as wide as its longest item.
QComboBox* choiceField(const QString& name, const QStringList& items, const QString& tip);
// A dataset split: train, restval, val, test or all (every image), `current` chosen.
QComboBox* splitField(const QString& name, const QString& current, const QString& tip);
// A button that opens a menu `fill` fills each time it opens (a Recent list), `height` tall.
QToolButton* menuButton(const QString& name, const QString& text, const QString& tip, int height,
                        const std::function<void(QMenu*)>& fill);

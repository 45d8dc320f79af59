// The "…" button beside a path field: a file (or folder) dialog that starts at
// the field's text and writes the choice back into the field.
#pragma once

#include <QToolButton>

#include <functional>

class QComboBox;
class QLineEdit;

class BrowseButton : public QToolButton {
  Q_OBJECT
 public:
  enum class Mode { OpenFile, Folder };
  BrowseButton(QLineEdit* field, const QString& title, const QString& filter = QString(), Mode mode = Mode::OpenFile);
  BrowseButton(QComboBox* field, const QString& title, const QString& filter);

  // The field stretched, this button after it: one row of a form.
  QWidget* row() const { return row_; }

 signals:
  void chosen(const QString& path);

 private:
  BrowseButton(QWidget* field, std::function<QString()> read, std::function<void(const QString&)> write,
               const QString& title, const QString& filter, Mode mode);
  QWidget* row_;
};

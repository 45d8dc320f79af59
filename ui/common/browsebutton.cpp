#include "common/browsebutton.h"

#include <QComboBox>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QLineEdit>

BrowseButton::BrowseButton(QLineEdit* field, const QString& title, const QString& filter, Mode mode)
    : BrowseButton(
          field, [field] { return field->text(); }, [field](const QString& path) { field->setText(path); }, title, filter,
          mode) {}

BrowseButton::BrowseButton(QComboBox* field, const QString& title, const QString& filter)
    : BrowseButton(
          field, [field] { return field->currentText(); },
          [field](const QString& path) { field->setCurrentText(path); }, title, filter, Mode::OpenFile) {}

BrowseButton::BrowseButton(QWidget* field, std::function<QString()> read, std::function<void(const QString&)> write,
                           const QString& title, const QString& filter, Mode mode)
    : row_(new QWidget) {
  setText(QStringLiteral("…"));
  setToolTip(title);
  connect(this, &QToolButton::clicked, this, [this, read, write, title, filter, mode] {
    const QString path = mode == Mode::Folder ? QFileDialog::getExistingDirectory(this, title, read())
                                              : QFileDialog::getOpenFileName(this, title, read(), filter);
    if (path.isEmpty()) return;
    write(path);
    emit chosen(path);
  });
  auto* layout = new QHBoxLayout(row_);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(field, 1);
  layout->addWidget(this);
}

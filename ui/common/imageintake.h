// How a page that takes images gets them, the same way everywhere: the Open
// dialog (Ctrl+O), a drop anywhere on the page, and the clipboard (files,
// paths copied as text, or an image, saved as PNG since the engine reads files).
#pragma once

#include <QObject>
#include <QStringList>
#include <QTemporaryDir>

#include <functional>

class QMimeData;
class QWidget;

class ImageIntake : public QObject {
 public:
  // Drops on `page` are taken through an event filter; `add` gets the paths.
  ImageIntake(QWidget* page, std::function<void(const QStringList&)> add);

  void open();   // the Open dialog
  void paste();  // the clipboard
  bool isPasted(const QString& path) const;  // a file this intake saved from a pasted image (temporary)

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  // Local files and folders of `mime`; an image without a file is saved as pasted-N.png.
  QStringList pathsOf(const QMimeData* mime);

  QWidget* page_;
  std::function<void(const QStringList&)> add_;
  QTemporaryDir pasteDir_;
  int pasted_ = 0;
};

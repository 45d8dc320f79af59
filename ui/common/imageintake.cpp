#include "common/imageintake.h"

#include "common/localpath.h"

#include <QApplication>
#include <QClipboard>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QDir>
#include <QFileInfo>
#include <QImage>
#include <QMimeData>
#include <QUrl>
#include <QWidget>

ImageIntake::ImageIntake(QWidget* page, std::function<void(const QStringList&)> add)
    : QObject(page), page_(page), add_(std::move(add)) {
  page->setAcceptDrops(true);
  page->installEventFilter(this);
}

void ImageIntake::open() {
  // URLs, not names: a native dialog's URL keeps the bytes of a non-UTF-8 name.
  const QList<QUrl> urls = QFileDialog::getOpenFileUrls(
      page_, QStringLiteral("Open images"), QUrl(),
      QStringLiteral("Images (*.png *.jpg *.jpeg *.bmp *.webp *.tif *.tiff *.ppm *.pgm *.pbm *.pnm);;All files (*)"));
  QStringList files;
  for (const QUrl& url : urls)
    if (url.isLocalFile()) files << localPathFromUrl(url);
  if (!files.isEmpty()) add_(files);
}

bool ImageIntake::isPasted(const QString& path) const {
  return pasteDir_.isValid() && path.startsWith(pasteDir_.path() + QLatin1Char('/'));
}

void ImageIntake::paste() {
  const QStringList paths = pathsOf(QApplication::clipboard()->mimeData());
  if (!paths.isEmpty()) add_(paths);
}

bool ImageIntake::eventFilter(QObject* watched, QEvent* event) {
  if (watched == page_ && event->type() == QEvent::DragEnter) {
    auto* enter = static_cast<QDragEnterEvent*>(event);
    if (enter->mimeData()->hasUrls() || enter->mimeData()->hasImage()) enter->acceptProposedAction();
    return true;
  }
  if (watched == page_ && event->type() == QEvent::Drop) {
    auto* drop = static_cast<QDropEvent*>(event);
    const QStringList paths = pathsOf(drop->mimeData());
    if (!paths.isEmpty()) {
      add_(paths);
      drop->acceptProposedAction();
    }
    return true;
  }
  return QObject::eventFilter(watched, event);
}

QStringList ImageIntake::pathsOf(const QMimeData* mime) {
  if (!mime) return {};
  QStringList paths;
  if (mime->hasUrls()) {
    for (const QUrl& url : mime->urls())
      if (url.isLocalFile()) paths << localPathFromUrl(url);  // keeps a non-UTF-8 name's bytes
    if (!paths.isEmpty()) return paths;
  }
  if (mime->hasText()) {
    // Paths or file:// URLs copied as text (a terminal, a file manager's "copy path"),
    // one per line. An absolute path that does not exist is kept, so the page shows an
    // error row naming it; other text (not a path) is ignored.
    for (const QString& line : mime->text().split(QLatin1Char('\n'), Qt::SkipEmptyParts)) {
      const QString text = line.trimmed();
      const QUrl url(text);
      const QString path = url.isLocalFile() ? url.toLocalFile() : text;
      if (!path.isEmpty() && (QFileInfo::exists(path) || QDir::isAbsolutePath(path))) paths << path;
    }
    if (!paths.isEmpty()) return paths;
  }
  if (mime->hasImage() && pasteDir_.isValid()) {
    // PNG is lossless: the engine reads exactly the pixels pasted.
    const QImage image = qvariant_cast<QImage>(mime->imageData());
    const QString file = pasteDir_.filePath(QStringLiteral("pasted-%1.png").arg(++pasted_));
    if (!image.isNull() && image.save(file, "PNG")) paths << file;
  }
  return paths;
}

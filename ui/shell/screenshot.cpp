#include "shell/screenshot.h"

#include <QApplication>
#include <QDeadlineTimer>
#include <QFile>
#include <QJsonDocument>
#include <QPixmap>
#include <QSaveFile>
#include <QThread>

#include <cstdio>

#include "shell/mainwindow.h"
#include "shell/studiocontext.h"
#include "shell/studiopage.h"

namespace {
void processEventsFor(int ms) {
  QDeadlineTimer deadline(ms);
  while (!deadline.hasExpired()) {
    QApplication::processEvents(QEventLoop::AllEvents, 20);
    QThread::msleep(5);
  }
}
}  // namespace

int takeScreenshot(MainWindow& window, const StudioContext& context, const ScreenshotRequest& request) {
  StudioPage* page = window.currentPage();
  QDeadlineTimer deadline(request.timeoutMs);
  bool timedOut = false;
  while (page && page->isBusy()) {
    if (deadline.hasExpired()) {
      timedOut = true;
      break;
    }
    processEventsFor(50);
  }
  processEventsFor(100);  // let the last results paint

  const QPixmap pixmap = window.grab();
  if (!pixmap.save(request.file, "PNG")) {
    std::fprintf(stderr, "error: cannot write screenshot '%s': check the folder exists and is writable\n",
                 qPrintable(request.file));
    return 2;
  }
  QJsonObject description{{"page", page ? page->pageId() : QString()},
                          {"title", page ? page->title() : QString()},
                          {"model", context.modelName().isEmpty() ? QJsonValue() : QJsonValue(context.modelName())},
                          {"device", context.device()},
                          {"threads", context.threads()},
                          {"width", pixmap.width()},
                          {"height", pixmap.height()},
                          {"timed_out", timedOut},
                          // Whether the page fits the window's width or scrolls sideways (its least width is wider).
                          {"page_least_width", page ? page->minimumSizeHint().width() : 0},
                          {"page_shown_width", page && page->parentWidget() ? page->parentWidget()->width() : 0},
                          {"content", page ? page->describe() : QJsonObject()}};
  QSaveFile json(request.file + QStringLiteral(".json"));
  if (!json.open(QIODevice::WriteOnly) || json.write(QJsonDocument(description).toJson()) < 0 || !json.commit()) {
    std::fprintf(stderr, "error: cannot write '%s.json'\n", qPrintable(request.file));
    return 2;
  }
  if (timedOut) std::fprintf(stderr, "warning: page still busy after %d ms; screenshot taken anyway\n", request.timeoutMs);
  return 0;
}

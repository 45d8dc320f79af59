#include "shell/aboutdialog.h"

#include <QApplication>
#include <QDesktopServices>
#include <QDir>
#include <QFileInfo>
#include <QIcon>
#include <QMessageBox>
#include <QUrl>

#include "expnet/system/system.h"

QString documentationFolder() {
  QDir dir(QApplication::applicationDirPath());
  // build/release/app/expnet-studio: the source tree is a few folders up (the install has no docs yet).
  for (int up = 0; up < 5; ++up) {
    if (QFileInfo::exists(dir.filePath(QStringLiteral("docs/studio.md")))) return QDir(dir.filePath(QStringLiteral("docs"))).canonicalPath();
    if (!dir.cdUp()) break;
  }
  return {};
}

QString aboutText() {
  const auto info = expnet::version_info();
  const auto row = [](const char* name, const QString& version) {
    return QStringLiteral("<tr><td>%1</td><td>%2</td></tr>").arg(QString::fromLatin1(name), version.toHtmlEscaped());
  };
  QString html = QStringLiteral("<h3>ExpansionNet Studio</h3><p>Image captioning workbench for ExpansionNet v2.</p><table>");
  html += row("expnet", QString::fromStdString(info.program));
  html += row("LibTorch", QString::fromStdString(info.libtorch));
  html += row("OpenCV", QString::fromStdString(info.opencv));
  html += row("Qt", QString::fromLatin1(qVersion()));
  html += row("SQLite", QString::fromStdString(info.sqlite));
  html += QStringLiteral("</table>");
  const QString docs = documentationFolder();
  if (docs.isEmpty())
    html += QStringLiteral("<p>Documentation: README.md and the docs/ folder of the source distribution "
                           "(docs/studio.md describes the pages).</p>");
  else
    html += QStringLiteral("<p>Documentation: <a href=\"%1\">%2</a> (studio.md describes the pages; the README "
                           "is in the folder above).</p>")
                .arg(QUrl::fromLocalFile(docs).toString(), docs.toHtmlEscaped());
  return html;
}

void showAboutDialog(QWidget* parent) {
  QMessageBox box(parent);
  box.setWindowTitle(QStringLiteral("About ExpansionNet Studio"));
  box.setTextFormat(Qt::RichText);
  box.setTextInteractionFlags(Qt::TextBrowserInteraction);
  box.setText(aboutText());
  box.setIconPixmap(QApplication::windowIcon().pixmap(64, 64));
  box.exec();
}

void openDocumentation(QWidget* parent) {
  const QString docs = documentationFolder();
  if (!docs.isEmpty() && QDesktopServices::openUrl(QUrl::fromLocalFile(docs))) return;
  QMessageBox::information(parent, QStringLiteral("Documentation"),
                           docs.isEmpty() ? QStringLiteral("The documentation is README.md and the docs/ folder of the "
                                                           "source distribution (docs/studio.md describes the pages).")
                                          : QStringLiteral("The documentation is in %1 (studio.md describes the pages).").arg(docs));
}

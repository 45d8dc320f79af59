// The studio's window as a user meets it: every page reachable, screenshots
// rendered, and the --screenshot mode that tests and the README rely on.
#include <QAction>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QListWidget>
#include <QMenu>
#include <QMenuBar>
#include <QProcess>
#include <QImage>
#include <QtTest>

#include "shell/aboutdialog.h"
#include "common/wrappingrow.h"
#include "shell/mainwindow.h"
#include "shell/studiocontext.h"
#include "shell/studiopage.h"
#include "support/fixtures.h"

class TestGuiSmoke : public QObject {
  Q_OBJECT
 private slots:
  void everyPageShowsAndRenders() {
    StudioContext context;
    MainWindow window(&context);
    window.resize(1280, 800);
    window.show();
    const QStringList expected{QStringLiteral("caption"), QStringLiteral("attention"), QStringLiteral("training"),
                               QStringLiteral("datasets"), QStringLiteral("runs"),    QStringLiteral("compare")};
    QCOMPARE(window.pageIds(), expected);
    const QString dir = expnet_test::makeTempDir(QStringLiteral("gui_smoke"));
    for (const QString& id : expected) {
      QVERIFY(window.showPage(id));
      QCOMPARE(window.currentPage()->pageId(), id);
      QVERIFY(!window.currentPage()->describe().isEmpty());
      const QImage shot = window.grab().toImage();
      QVERIFY(shot.width() >= 1280 && shot.height() >= 800);
      QVERIFY(shot.save(dir + QStringLiteral("/%1.png").arg(id)));
    }
    QVERIFY(!window.showPage(QStringLiteral("nope")));
  }
  // A laptop's 1024x640 and 1920x1080 at twice the scale (960x540 logical pixels): the
  // window can be that small on every page (a page larger than that scrolls, every
  // control reachable), and no page ever changes the window's size.
  void theWindowFitsSmallScreens() {
    StudioContext context;
    MainWindow window(&context);
    window.resize(960, 540);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    for (const QString& id : window.pageIds()) {
      QVERIFY(window.showPage(id));
      QTest::qWait(50);
      const QSize least = window.minimumSizeHint();
      QVERIFY2(least.width() <= 960 && least.height() <= 540,
               qPrintable(QStringLiteral("%1: the window cannot be smaller than %2x%3").arg(id).arg(least.width()).arg(least.height())));
      QCOMPARE(window.size(), QSize(960, 540));
      // The page is never squeezed below what it needs: the scroll area around it scrolls instead.
      auto* page = window.currentPage();
      const QSize need = page->minimumSizeHint();
      QVERIFY2(page->width() >= need.width() && page->height() >= need.height(),
               qPrintable(QStringLiteral("%1 is %2x%3, below its least %4x%5").arg(id).arg(page->width()).arg(page->height())
                              .arg(need.width()).arg(need.height())));
      // Nor wider than the window: at 960x540 (1920x1080 at twice the scale) no page scrolls sideways.
      QVERIFY2(need.width() <= page->parentWidget()->width(),
               qPrintable(QStringLiteral("%1 needs %2 px, %3 are shown: it scrolls sideways").arg(id).arg(need.width())
                              .arg(page->parentWidget()->width())));
    }
    // The Caption page's Model and Decoding boxes: one under the other there, side by side on a larger screen.
    QVERIFY(window.showPage(QStringLiteral("caption")));
    auto* boxes = window.findChild<WrappingRow*>(QStringLiteral("modelAndDecoding"));
    QVERIFY(boxes);
    QVERIFY(boxes->stacked());
    window.resize(1440, 900);
    QTRY_VERIFY(!boxes->stacked());
  }

  void navigationClickSwitchesPage() {
    StudioContext context;
    MainWindow window(&context);
    window.show();
    auto* navigation = window.findChild<QListWidget*>(QStringLiteral("navigation"));
    QVERIFY(navigation);
    navigation->setCurrentRow(3);
    QCOMPARE(window.currentPage()->pageId(), QStringLiteral("datasets"));
  }
  void menuBarOffersFileViewAndHelp() {
    StudioContext context;
    MainWindow window(&context);
    window.show();
    QStringList menus;
    for (QAction* action : window.menuBar()->actions()) menus << action->text();
    QCOMPARE(menus, QStringList({QStringLiteral("&File"), QStringLiteral("&View"), QStringLiteral("&Help")}));
    // View: one checkable item per page, Ctrl+1.. in the navigation's order; the page shown is checked.
    const QStringList ids = window.pageIds();
    for (int i = 0; i < ids.size(); ++i) {
      auto* action = window.findChild<QAction*>(QStringLiteral("view_") + ids[i]);
      QVERIFY(action && action->isCheckable());
      QCOMPARE(action->shortcut(), QKeySequence(Qt::CTRL | Qt::Key(Qt::Key_1 + i)));
    }
    QVERIFY(window.findChild<QAction*>(QStringLiteral("view_caption"))->isChecked());
    window.findChild<QAction*>(QStringLiteral("view_training"))->trigger();
    QCOMPARE(window.currentPage()->pageId(), QStringLiteral("training"));
    QVERIFY(window.showPage(QStringLiteral("runs")));
    QVERIFY(window.findChild<QAction*>(QStringLiteral("view_runs"))->isChecked());
    QVERIFY(!window.findChild<QAction*>(QStringLiteral("view_training"))->isChecked());

    // File > Recent: nothing yet, then what the Caption page opened; picking it opens it again there.
    auto* recent = window.findChild<QMenu*>(QStringLiteral("recentMenu"));
    QVERIFY(recent);
    emit recent->aboutToShow();
    QCOMPARE(recent->actions().size(), 1);
    QVERIFY(!recent->actions().first()->isEnabled());
    const QString image = expnet_test::makeTempDir(QStringLiteral("gui_recent")) + QStringLiteral("/seen.png");
    QImage pixels(8, 8, QImage::Format_RGB32);
    pixels.fill(Qt::green);
    QVERIFY(pixels.save(image));  // Recent remembers files that exist
    StudioPage* caption = window.page(QStringLiteral("caption"));
    QVERIFY(QMetaObject::invokeMethod(caption, "addPaths", Q_ARG(QStringList, QStringList{image})));
    emit recent->aboutToShow();
    QCOMPARE(recent->actions().size(), 1);
    QCOMPARE(recent->actions().first()->text(), QFileInfo(image).absoluteFilePath());
    recent->actions().first()->trigger();
    QCOMPARE(window.currentPage()->pageId(), QStringLiteral("caption"));
    QCOMPARE(caption->describe().value(QStringLiteral("items")).toArray().size(), 2);

    // File > Quit is Ctrl+Q; Help > About names what `expnet --version` prints.
    bool quit = false;
    for (QAction* action : window.menuBar()->actions().first()->menu()->actions())
      quit |= action->text() == QStringLiteral("Quit") && action->shortcut() == QKeySequence(Qt::CTRL | Qt::Key_Q);
    QVERIFY(quit);
    const QString about = aboutText();
    for (const QString& part : {QStringLiteral("LibTorch"), QStringLiteral("OpenCV"), QStringLiteral("SQLite"),
                                QStringLiteral("Qt"), QString::fromLatin1(qVersion())})
      QVERIFY2(about.contains(part), qPrintable(about));
  }
  void everyPageIsBuilt() {
    // No page stands in for a capability with a "not built yet" text any more.
    StudioContext context;
    MainWindow window(&context);
    for (const QString& id : window.pageIds())
      QVERIFY2(!window.page(id)->describe().contains(QStringLiteral("meanwhile")), qPrintable(id));
    QVERIFY(window.page(QStringLiteral("runs"))->describe().contains(QStringLiteral("rows")));
  }
  void statusBarShowsModelState() {
    StudioContext context;
    MainWindow window(&context);
    QVERIFY(!window.findChildren<QLabel*>().isEmpty());
    bool found = false;
    for (auto* label : window.findChildren<QLabel*>()) found |= label->text() == QStringLiteral("No model loaded");
    QVERIFY(found);
    context.setModelName(QStringLiteral("demo"));
    found = false;
    for (auto* label : window.findChildren<QLabel*>()) found |= label->text() == QStringLiteral("Model: demo");
    QVERIFY(found);
  }
  void screenshotModeWritesPngAndJson() {
    const QString dir = expnet_test::makeTempDir(QStringLiteral("gui_screenshot"));
    const QString png = dir + QStringLiteral("/training.png");
    const auto r = expnet_test::runProcess(expnet_test::studioPath(),
                                           {QStringLiteral("--screenshot"), png, QStringLiteral("--page"),
                                            QStringLiteral("training"), QStringLiteral("--threads"), QStringLiteral("1")});
    QVERIFY2(r.exitCode == 0, r.err.constData());
    QImage image(png);
    QVERIFY(image.width() >= 1280 && image.height() >= 800);
    QFile json(png + QStringLiteral(".json"));
    QVERIFY(json.open(QIODevice::ReadOnly));
    const QJsonObject doc = QJsonDocument::fromJson(json.readAll()).object();
    QCOMPARE(doc.value(QStringLiteral("page")).toString(), QStringLiteral("training"));
    QCOMPARE(doc.value(QStringLiteral("threads")).toInt(), 1);
    QVERIFY(doc.contains(QStringLiteral("content")));
  }
  // Without any display: --help and --version print and exit 0; a window asks for one
  // in a sentence (Qt itself would abort).
  void helpAndVersionNeedNoDisplay() {
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    for (const char* name : {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"}) env.remove(name);
    p.setProcessEnvironment(env);
    for (const QString& option : {QStringLiteral("--help"), QStringLiteral("--version")}) {
      p.start(expnet_test::studioPath(), {option});
      QVERIFY(p.waitForFinished(30000));
      QCOMPARE(p.exitStatus(), QProcess::NormalExit);
      QCOMPARE(p.exitCode(), 0);
      const QByteArray out = p.readAllStandardOutput();
      QVERIFY2(out.contains(option == "--help" ? "Usage:" : EXPNET_VERSION), out.constData());
    }
    p.start(expnet_test::studioPath(), {});
    QVERIFY(p.waitForFinished(30000));
    QCOMPARE(p.exitStatus(), QProcess::NormalExit);
    QCOMPARE(p.exitCode(), 1);
    QVERIFY2(p.readAllStandardError().contains("needs a display"), "no sentence about the display");
  }

  void unknownPageIsAnError() {
    const auto r = expnet_test::runProcess(expnet_test::studioPath(),
                                           {QStringLiteral("--screenshot"), QStringLiteral("/tmp/x.png"),
                                            QStringLiteral("--page"), QStringLiteral("nope")});
    QVERIFY(r.exitCode != 0);
    QVERIFY(r.err.contains("unknown page"));
  }
};

QTEST_MAIN(TestGuiSmoke)
#include "test_gui_smoke.moc"

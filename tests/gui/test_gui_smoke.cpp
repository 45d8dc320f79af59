// The studio's window as a user meets it: every page reachable, screenshots
// rendered, and the --screenshot mode that tests and the README rely on.
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QListWidget>
#include <QtTest>

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
  void navigationClickSwitchesPage() {
    StudioContext context;
    MainWindow window(&context);
    window.show();
    auto* navigation = window.findChild<QListWidget*>(QStringLiteral("navigation"));
    QVERIFY(navigation);
    navigation->setCurrentRow(3);
    QCOMPARE(window.currentPage()->pageId(), QStringLiteral("datasets"));
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

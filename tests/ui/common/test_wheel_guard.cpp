// WheelGuard (ui/common/wheelguard.h): the wheel over a combo box or spin box
// that does not have the focus scrolls the page around it and leaves its value;
// once clicked or tabbed to, the box takes the wheel as before.
#include <QApplication>
#include <QComboBox>
#include <QScrollArea>
#include <QScrollBar>
#include <QSpinBox>
#include <QVBoxLayout>
#include <QWheelEvent>
#include <QtTest>

#include "common/wheelguard.h"

namespace {

// One notch of the wheel turned towards the user (scrolls down), at the widget's centre.
void turnWheel(QWidget* widget) {
  const QPointF at(widget->width() / 2.0, widget->height() / 2.0);
  QWheelEvent event(at, widget->mapToGlobal(at), QPoint(), QPoint(0, -120), Qt::NoButton, Qt::NoModifier,
                    Qt::NoScrollPhase, false);
  QApplication::sendEvent(widget, &event);
}

}  // namespace

class TestWheelGuard : public QObject {
  Q_OBJECT

 private slots:
  void theWheelScrollsThePageUntilABoxHasTheFocus() {
    WheelGuard guard;
    qApp->installEventFilter(&guard);
    QScrollArea area;
    auto* page = new QWidget;
    auto* layout = new QVBoxLayout(page);
    auto* combo = new QComboBox;
    combo->addItems({"cpu", "cuda:0", "cuda:1"});
    auto* spin = new QSpinBox;
    spin->setRange(1, 20);
    spin->setValue(5);
    auto* other = new QComboBox;  // somewhere to put the focus
    layout->addWidget(other);
    layout->addWidget(combo);
    layout->addWidget(spin);
    layout->addSpacing(2000);  // a page taller than the window
    area.setWidget(page);
    area.setWidgetResizable(true);
    area.resize(300, 200);
    area.show();
    QVERIFY(QTest::qWaitForWindowExposed(&area));
    QCOMPARE(combo->focusPolicy(), Qt::StrongFocus);  // no focus by the wheel alone
    QVERIFY(area.verticalScrollBar()->maximum() > 0);

    turnWheel(combo);
    QCOMPARE(combo->currentIndex(), 0);
    const int scrolled = area.verticalScrollBar()->value();
    QVERIFY2(scrolled > 0, "the page did not scroll");
    turnWheel(spin);
    QCOMPARE(spin->value(), 5);
    QVERIFY(area.verticalScrollBar()->value() > scrolled);

    // Focused (a click or Tab), the box takes the wheel and the page stays.
    area.activateWindow();
    combo->setFocus(Qt::TabFocusReason);
    QTRY_VERIFY(combo->hasFocus());
    const int before = area.verticalScrollBar()->value();
    turnWheel(combo);
    QCOMPARE(combo->currentIndex(), 1);
    QCOMPARE(area.verticalScrollBar()->value(), before);
    qApp->removeEventFilter(&guard);
  }
};

QTEST_MAIN(TestWheelGuard)
#include "test_wheel_guard.moc"

#include <QtTest>
class TestImage : public QObject { Q_OBJECT };
QTEST_GUILESS_MAIN(TestImage)
#include "test_image.moc"

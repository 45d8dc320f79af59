// Our image reading and resize against Pillow itself (Debian's python3-pil,
// run as /usr/bin/python3): tests/image/pillow_peer.py writes inputs and
// Pillow's results; we compare. Skips (reported as skipped by CTest) where
// Pillow is not installed; the Pillow fixtures in test_image always run.
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include <opencv2/core.hpp>

#include "expnet/image/image_decode.h"
#include "expnet/image/pil_resize.h"
#include "support/fixtures.h"

class TestImagePillow : public QObject {
  Q_OBJECT
  QString dir_;
  QJsonArray cases_;

  cv::Mat load(const QString& name, bool exif = true) const {
    expnet::ImageLoadOptions options;
    options.apply_exif = exif;
    const QString path = QDir::isAbsolutePath(name) ? name : dir_ + QLatin1Char('/') + name;
    return expnet::load_image_rgb(path.toStdString(), options);
  }

  QList<QJsonObject> casesOf(const QString& kind) const {
    QList<QJsonObject> out;
    for (const auto& c : cases_)
      if (c.toObject()["kind"].toString() == kind) out << c.toObject();
    return out;
  }

 private slots:
  void initTestCase() {
    EXPNET_FIXTURE(image0, "reference/tiny/image0.png");
    dir_ = expnet_test::makeTempDir(QStringLiteral("image_pillow"));
    const auto r = expnet_test::runProcess(expnet_test::torchPython(),
                                           {QStringLiteral(EXPNET_IMAGE_TEST_DIR "/pillow_peer.py"), dir_, image0});
    if (r.exitCode == 3) QSKIP(r.out.trimmed().constData());  // prints EXPNET_PIL_MISSING
    QVERIFY2(r.exitCode == 0, r.err.constData());
    QFile manifest(dir_ + QStringLiteral("/manifest.json"));
    QVERIFY(manifest.open(QIODevice::ReadOnly));
    cases_ = QJsonDocument::fromJson(manifest.readAll()).object()["cases"].toArray();
    QVERIFY(cases_.size() > 50);
  }

  void resizeEqualsPillow() {
    const auto cases = casesOf(QStringLiteral("resize"));
    QVERIFY(cases.size() >= 50);
    for (const auto& c : cases) {
      const int w = c["width"].toInt(), h = c["height"].toInt();
      const cv::Mat ours = expnet::pil_bilinear_resize(load(c["input"].toString()), w, h);
      const cv::Mat pillow = load(c["expected"].toString());
      QCOMPARE(pillow.cols, w);
      QCOMPARE(pillow.rows, h);
      cv::Mat diff;
      cv::compare(ours.reshape(1), pillow.reshape(1), diff, cv::CMP_NE);
      QVERIFY2(cv::countNonZero(diff) == 0,
               qPrintable(QStringLiteral("%1 -> %2x%3: %4 values differ").arg(c["input"].toString()).arg(w).arg(h).arg(cv::countNonZero(diff))));
    }
  }

  void decodeEqualsPillowConvertRgb() {
    auto cases = casesOf(QStringLiteral("decode")) + casesOf(QStringLiteral("decode_noexif"));
    QVERIFY(cases.size() >= 29);
    for (const auto& c : cases) {
      const bool exif = c["kind"].toString() == QLatin1String("decode");
      const cv::Mat ours = load(c["input"].toString(), exif);
      const cv::Mat pillow = load(c["expected"].toString());
      const QString label = c["input"].toString() + (exif ? QString() : QStringLiteral(" (no exif)"));
      QVERIFY2(ours.size() == pillow.size(), qPrintable(label));
      const double maxDiff = cv::norm(ours, pillow, cv::NORM_INF);
      QVERIFY2(maxDiff <= c["tolerance"].toDouble(), qPrintable(label + QStringLiteral(": max diff %1").arg(maxDiff)));
    }
  }

  void truncationAgreesWithPillow() {
    const auto cases = casesOf(QStringLiteral("loads"));
    QVERIFY(cases.size() >= 12);
    for (const auto& c : cases) {
      QString reason = QStringLiteral("ok");
      try {
        load(c["input"].toString());
      } catch (const expnet::ImageError& e) {
        reason = QString::fromStdString(e.reason());
      }
      const QString label = c["input"].toString() + QStringLiteral(": ours ") + reason;
      if (!c["pillow_ok"].toBool())
        QVERIFY2(reason == QLatin1String("truncated"), qPrintable(label + QStringLiteral(", Pillow refuses")));
      else if (!c["ours_may_refuse"].toBool())
        QVERIFY2(reason == QLatin1String("ok"), qPrintable(label + QStringLiteral(", Pillow reads it")));
    }
  }
};

QTEST_GUILESS_MAIN(TestImagePillow)
#include "test_image_pillow.moc"

// `expnet-studio --screenshot PNG ...` as the tests run it: the studio renders
// offscreen and writes PNG and PNG.json (what the page shows).
#pragma once

#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>

#include "support/fixtures.h"

namespace expnet_test {

inline ProcessResult runStudioScreenshot(const QString& png, const QStringList& args) {
  return runProcess(studioPath(), QStringList{QStringLiteral("--screenshot"), png} + args);
}

// Reads PNG.json into `description`, checking that it opens and that the page
// had finished its work when the picture was taken. Like any QVERIFY in a
// helper, a failure returns from here only: callers check QTest::currentTestFailed().
inline void readScreenshotDescription(const QString& png, QJsonObject* description) {
  QFile json(png + ".json");
  QVERIFY(json.open(QIODevice::ReadOnly));
  const QJsonObject d = QJsonDocument::fromJson(json.readAll()).object();
  QCOMPARE(d.value("timed_out").toBool(), false);
  *description = d;
}

}  // namespace expnet_test

// Reading coco_scorers_small.json in the metrics tests.
#pragma once

#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

inline QJsonObject loadJsonObject(const QString& path) {
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly)) return {};
  return QJsonDocument::fromJson(file.readAll()).object();
}

// Compares |actual - expected| <= tolerance with a message naming the value.
#define EXPECT_NEAR(actual, expected, tolerance, what)                                                    \
  do {                                                                                                    \
    const double a_ = (actual), e_ = (expected);                                                          \
    QVERIFY2(std::fabs(a_ - e_) <= (tolerance),                                                           \
             qPrintable(QStringLiteral("%1: got %2, expected %3").arg(what).arg(a_, 0, 'g', 17).arg(e_, 0, 'g', 17))); \
  } while (0)

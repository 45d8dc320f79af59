// Locating the shared fixtures and the built programs from tests, and the
// error a piece of test code throws.
#pragma once

#include <QString>
#include <QStringList>
#include <QtTest>

#include <exception>

namespace expnet_test {

// ../shared/fixtures, or $EXPNET_FIXTURES.
QString fixturesDir();
bool fixturesRequired();  // EXPNET_REQUIRE_FIXTURES=1
// Absolute path of a fixture, or empty when the file is missing.
QString fixturePath(const QString& relative);
QString cliPath();
QString studioPath();
QString torchPython();  // Debian's /usr/bin/python3 with torch
// A fresh temporary folder per call, kept under the build tree for inspection.
QString makeTempDir(const QString& name);

struct ProcessResult {
  int exitCode = -1;
  QByteArray out, err;
  bool finished = false;
};
ProcessResult runProcess(const QString& program, const QStringList& args, int timeoutMs = 300000);

// The message of the exception `body` throws (any std::exception), or "" when it throws none.
template <typename F>
QString errorOf(F body) {
  try {
    body();
  } catch (const std::exception& e) {
    return QString::fromStdString(e.what());
  }
  return {};
}

}  // namespace expnet_test

// Declares QString VAR = the fixture's path, or skips (fails under
// EXPNET_REQUIRE_FIXTURES=1) the current test function when it is missing.
#define EXPNET_FIXTURE(var, relative)                                                          \
  const QString var = expnet_test::fixturePath(relative);                                      \
  do {                                                                                         \
    if (var.isEmpty()) {                                                                       \
      const QString why = QStringLiteral("EXPNET_FIXTURE_MISSING: %1/%2 (set EXPNET_FIXTURES)") \
                              .arg(expnet_test::fixturesDir(), QString(relative));             \
      if (expnet_test::fixturesRequired()) QFAIL(qPrintable(why));                             \
      QSKIP(qPrintable(why));                                                                  \
    }                                                                                          \
  } while (0)

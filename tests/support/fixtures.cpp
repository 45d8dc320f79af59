#include "support/fixtures.h"

#include <QDir>
#include <QFileInfo>
#include <QProcess>

namespace expnet_test {

QString fixturesDir() {
  const QString overridden = qEnvironmentVariable("EXPNET_FIXTURES");
  return QDir::cleanPath(overridden.isEmpty() ? QStringLiteral(EXPNET_FIXTURES_DEFAULT) : overridden);
}

bool fixturesRequired() { return qEnvironmentVariable("EXPNET_REQUIRE_FIXTURES") == QLatin1String("1"); }

QString fixturePath(const QString& relative) {
  const QString path = fixturesDir() + QLatin1Char('/') + relative;
  return QFileInfo::exists(path) ? path : QString();
}

QString cliPath() { return QStringLiteral(EXPNET_CLI_PATH); }
QString studioPath() { return QStringLiteral(EXPNET_STUDIO_PATH); }
QString torchPython() { return QStringLiteral(EXPNET_TORCH_PYTHON); }

QString makeTempDir(const QString& name) {
  QString root = qEnvironmentVariable("EXPNET_TEST_TMP");
  if (root.isEmpty()) root = QDir::tempPath() + QStringLiteral("/expnet-tests");
  QDir dir(root + QLatin1Char('/') + name);
  dir.removeRecursively();
  QDir().mkpath(dir.path());
  return dir.path();
}

ProcessResult runProcess(const QString& program, const QStringList& args, int timeoutMs) {
  QProcess process;
  process.start(program, args);
  ProcessResult result;
  if (!process.waitForStarted(30000)) return result;
  result.finished = process.waitForFinished(timeoutMs);
  if (!result.finished) process.kill();
  result.out = process.readAllStandardOutput();
  result.err = process.readAllStandardError();
  result.exitCode = process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1;
  return result;
}

}  // namespace expnet_test

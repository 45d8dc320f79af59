// Runs the CLI and measures what a bad input costs it: wall time and peak
// resident memory (GNU time's %M), for the "ends within 5 s and 500 MB" bounds
// of the image and metrics regression tests.
#pragma once

#include <QElapsedTimer>
#include <QFileInfo>
#include <QRegularExpression>
#include <QStringList>

#include "support/fixtures.h"

namespace expnet_test {

struct BoundedRun {
  ProcessResult result;  // err holds the command's stderr, without GNU time's line
  double seconds = 0;
  long peakKb = -1;      // -1 when /usr/bin/time is missing
};

inline BoundedRun runCliBounded(const QStringList& args) {
  BoundedRun run;
  QElapsedTimer timer;
  timer.start();
  const QString time = QStringLiteral("/usr/bin/time");
  if (QFileInfo::exists(time)) {
    run.result = runProcess(time, QStringList{"-f", "EXPNET_PEAK_KB=%M", cliPath()} + args, 60000);
    const auto match = QRegularExpression(QStringLiteral("EXPNET_PEAK_KB=(\\d+)\\n?$")).match(QString::fromUtf8(run.result.err));
    if (match.hasMatch()) {
      run.peakKb = match.captured(1).toLong();
      run.result.err.chop(int(match.capturedLength(0)));
    }
  } else {
    run.result = runProcess(cliPath(), args, 60000);
  }
  run.seconds = timer.elapsed() / 1000.0;
  return run;
}

}  // namespace expnet_test

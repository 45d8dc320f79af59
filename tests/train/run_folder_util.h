// Reading and driving a training run folder in tests (docs/training.md, "Run folder").
#pragma once

#include <QElapsedTimer>
#include <QProcess>
#include <QString>
#include <QtTest>

#include <torch/torch.h>

#include <csignal>
#include <fstream>
#include <iterator>
#include <string>

#include "expnet/checkpoint/pth_file.h"

namespace expnet_test {

// The optimizer step of the checkpoint latest.json points at, -1 when none.
inline int latest_step(const QString& out) {
  std::ifstream in((out + "/checkpoints/latest.json").toStdString());
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto pos = text.find("step-");
  return pos == std::string::npos ? -1 : std::stoi(text.substr(pos + 5, 8));
}

// Waits (2 minutes at most) until the run writing `out` has checkpointed step
// `step`, or has ended.
inline void wait_for_step(const QProcess& run, const QString& out, int step, int poll_ms) {
  QElapsedTimer timer;
  timer.start();
  while (latest_step(out) < step && timer.elapsed() < 120000 && run.state() == QProcess::Running) QTest::qWait(poll_ms);
}

// wait_for_step, then `signal` to the run; false (nothing sent) when the run
// had already ended.
inline bool signal_at_step(QProcess& run, const QString& out, int step, int poll_ms, int signal) {
  wait_for_step(run, out, step, poll_ms);
  if (run.state() != QProcess::Running) return false;
  ::kill(static_cast<pid_t>(run.processId()), signal);
  return true;
}

// Whether two state dicts of the same size hold the same names and bit-identical tensors.
inline bool same_entries(const expnet::NamedTensors& x, const expnet::NamedTensors& y) {
  bool identical = x.size() == y.size();
  for (size_t i = 0; identical && i < x.size(); ++i)
    identical = identical && x[i].first == y[i].first && torch::equal(x[i].second, y[i].second);
  return identical;
}

}  // namespace expnet_test

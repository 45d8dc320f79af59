// Reading a training run folder in tests (docs/training.md, "Run folder").
#pragma once

#include <QString>

#include <fstream>
#include <iterator>
#include <string>

namespace expnet_test {

// The optimizer step of the checkpoint latest.json points at, -1 when none.
inline int latest_step(const QString& out) {
  std::ifstream in((out + "/checkpoints/latest.json").toStdString());
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto pos = text.find("step-");
  return pos == std::string::npos ? -1 : std::stoi(text.substr(pos + 5, 8));
}

}  // namespace expnet_test

// Helpers shared by the LibTorch-free tests (this folder; the normal build runs
// the same sources).
#pragma once

#include <QFile>
#include <QString>

#include <string>

namespace sanitize_test {

// The bytes of a file ("" when it cannot be read).
inline std::string read_file(const QString& path) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  const QByteArray data = f.readAll();
  return std::string(data.constData(), static_cast<size_t>(data.size()));
}

}  // namespace sanitize_test

#include "common/localpath.h"

#include <QUrl>
#include <QUtf8StringView>

namespace {

constexpr char16_t kEscapeBase = 0xDC00;  // U+DC80..U+DCFF stand for the bytes 0x80..0xFF

// Length of the valid UTF-8 sequence at bytes[i], 0 when invalid.
int utf8Length(const QByteArray& bytes, int i) {
  const unsigned char c = static_cast<unsigned char>(bytes[i]);
  const int n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  // Qt's validator refuses overlong forms, surrogates and code points past U+10FFFF.
  return n > 0 && i + n <= bytes.size() && QUtf8StringView(bytes.constData() + i, n).isValidUtf8() ? n : 0;
}

}  // namespace

QString localPathFromBytes(const QByteArray& bytes) {
  QString out;
  out.reserve(bytes.size());
  for (int i = 0; i < bytes.size();) {
    const int n = utf8Length(bytes, i);
    if (n == 0) {
      out += QChar(char16_t(kEscapeBase + static_cast<unsigned char>(bytes[i])));
      ++i;
    } else {
      out += QString::fromUtf8(bytes.constData() + i, n);
      i += n;
    }
  }
  return out;
}

std::string localPathBytes(const QString& path) {
  std::string out;
  out.reserve(static_cast<size_t>(path.size()));
  for (int i = 0; i < path.size(); ++i) {
    const char16_t c = path[i].unicode();
    const bool lone = QChar::isLowSurrogate(c) && (i == 0 || !QChar::isHighSurrogate(path[i - 1].unicode()));
    if (lone && c >= kEscapeBase + 0x80 && c <= kEscapeBase + 0xFF) {
      out += static_cast<char>(c - kEscapeBase);
      continue;
    }
    // A surrogate pair is encoded as one code point.
    const int n = QChar::isHighSurrogate(c) && i + 1 < path.size() && path[i + 1].isLowSurrogate() ? 2 : 1;
    out += QStringView(path).mid(i, n).toUtf8().toStdString();
    i += n - 1;
  }
  return out;
}

QString localPathFromUrl(const QUrl& url) {
  if (!url.isLocalFile()) return {};
  // path(FullyEncoded) keeps the bytes as %XX; toLocalFile() would replace invalid UTF-8.
  return localPathFromBytes(QByteArray::fromPercentEncoding(url.path(QUrl::FullyEncoded).toLatin1()));
}

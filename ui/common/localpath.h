// File names as the system stores them (bytes) carried losslessly in a QString.
// Qt 6 decodes a name that is not valid UTF-8 with U+FFFD replacement
// characters (QFile::decodeName, QUrl::toLocalFile): encodeName() of that is
// another name, and the engine then reports an existing file as missing. Here
// each byte of invalid UTF-8 becomes the lone surrogate U+DC80..U+DCFF (as
// Python's "surrogateescape") and is turned back into the same byte.
#pragma once

#include <QByteArray>
#include <QString>

#include <string>

class QUrl;

// The exact bytes of a file name as a QString (valid UTF-8 decoded as usual).
QString localPathFromBytes(const QByteArray& bytes);
// The bytes to open: the inverse of localPathFromBytes; other text as UTF-8.
std::string localPathBytes(const QString& path);
// The local file a file:// URL names, from its percent-encoded bytes (a drop
// from a file manager), losslessly; empty when the URL is not a local file.
QString localPathFromUrl(const QUrl& url);

#include "common/csvtext.h"

QString csvField(QString value) {
  if (!value.isEmpty() && QStringLiteral("=+-@\t\r").contains(value.front())) value.prepend(QLatin1Char('\''));
  const bool plain = !value.contains(QLatin1Char(',')) && !value.contains(QLatin1Char('"')) &&
                     !value.contains(QLatin1Char('\n')) && !value.contains(QLatin1Char('\r'));
  if (plain) return value;
  return QLatin1Char('"') + value.replace(QStringLiteral("\""), QStringLiteral("\"\"")) + QLatin1Char('"');
}

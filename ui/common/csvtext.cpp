#include "common/csvtext.h"

QString csvField(QString value) {
  if (!value.contains(QLatin1Char(',')) && !value.contains(QLatin1Char('"')) && !value.contains(QLatin1Char('\n')))
    return value;
  return QLatin1Char('"') + value.replace(QStringLiteral("\""), QStringLiteral("\"\"")) + QLatin1Char('"');
}

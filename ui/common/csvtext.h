// CSV as the studio's exports write it (RFC 4180): a field with a comma, a
// quote or a line break is quoted, its quotes doubled.
#pragma once

#include <QString>

QString csvField(QString value);

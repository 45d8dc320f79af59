// CSV as the studio's exports write it (RFC 4180): a field with a comma, a
// quote or a line break is quoted, its quotes doubled. Text that a spreadsheet
// would run as a formula (it starts with =, +, -, @, a tab or a carriage
// return: CSV injection) gets a leading apostrophe, as OWASP recommends, so
// the cell shows the text instead of computing it. For text fields only:
// numbers are written as they are.
#pragma once

#include <QString>

QString csvField(QString value);

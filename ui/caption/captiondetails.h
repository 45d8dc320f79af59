// What the Caption page writes about its rows, as text: the selected row's
// details (n-best list, timings, settings) and the one-line progress summary.
// Pure functions of the items, so they hold no widget.
#pragma once

#include <QString>
#include <QVector>

#include "caption/captionmodel.h"

class Theme;

// HTML for the details pane: the n-best table, or the error, then timings and settings.
QString captionDetailsHtml(const CaptionItem& item, const Theme& theme);
// "3 captioned, 1 failed, 2 to go" (or "waiting for a model"); empty when there are no items.
QString captionProgressText(const QVector<CaptionItem>& items, bool modelLoaded);

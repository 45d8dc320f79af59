// A mode's caption as the Compare page shows it: rich text from the engine's
// ModeCaption (text, steps, PNAIC groups), whole or as it
// stood after a given decoding step. PNAIC groups get one colour each (the
// Theme's groupColour, legible on light and dark backgrounds); groups that
// ended in DEL are struck through or left out. The words added at the step
// shown are underlined, so that AIC's one word per step and PNAIC's K words
// per step can be seen at a glance.
#pragma once

#include <QMap>
#include <QString>

#include "expnet/decode/decoding_comparison.h"

class Theme;

// Each mode's caption of one image, by mode name.
using ModeCaptions = QMap<QString, expnet::ModeCaption>;

// `step`: 1 = after the first decoding step; 0 or less: the complete caption.
QString captionHtml(const expnet::ModeCaption& caption, int step, bool showDeleted, const Theme& theme);

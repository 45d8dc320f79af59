// Pictures and pieces of an AttentionTrace for the Attention page's views:
// heat-map overlays (the engine's own JET overlay), the colour legend, and the
// block of an expansion matrix a selection names. No widgets here.
#pragma once

#include <QImage>
#include <QPixmap>
#include <QString>

#include <vector>

#include "attention/attentiontrace.h"

// Which matrix of an expansion block: the normalised forward/backward weights or the raw scores z.
enum ExpansionDirection { Forward, Backward, Scores };
// Stream a reads relu(z), stream b relu(-z).
enum ExpansionStream { StreamA, StreamB };

// `weights` (one per grid cell) over the trace's image, as the engine's overlay draws it.
QImage attentionOverlay(const AttentionTrace& trace, const std::vector<float>& weights, double alpha);
// The heat map's colour scale: the JET colormap the overlay uses, 0 on the left.
QPixmap jetLegend(int width, int height);
const TraceMatrix& expansionMatrix(const TraceExpansion& expansion, int direction, int stream);
// "forward, stream a", "scores z".
QString directionName(int direction, int stream);
// The first slot of a Static Expansion group.
int groupStart(const AttentionTrace& trace, int group);

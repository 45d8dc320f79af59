// Smoothing of noisy training curves, shared by the Training page's charts and
// the Runs page's overlay so that both draw the same line for the same run.
#pragma once

#include <QVector>

// Exponential moving average as TensorBoard draws it: ema = w * ema + (1 - w) * v,
// divided by 1 - w^k after k values so that the start is not pulled towards 0.
// One output per input, at the same position: a non-finite input adds nothing
// to the average and its output repeats the average so far (NaN before the
// first finite value). weight 0 returns the finite values unchanged.
QVector<double> smoothCurve(const QVector<double>& values, double weight);
// The same, started afresh wherever `stages` (one per value) changes: an XE loss
// and the SCST loss after it are different quantities, not one line to average.
QVector<double> smoothCurve(const QVector<double>& values, double weight, const QVector<qint64>& stages);

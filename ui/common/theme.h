// The studio's colours, derived from the application's palette so that a dark
// desktop theme is followed: every page asks here instead of writing hex
// literals. Data colours (chart series, colour maps) stay recognisable in both
// light and dark, only their lightness adapts to the background.
#pragma once

#include <QColor>
#include <QPalette>
#include <QString>
#include <QVector>

class QCustomPlot;

class Theme {
 public:
  // The series of the Training page's charts.
  enum class Series { LossRaw, LossSmoothed, LearningRate, CiderD, Bleu4, Throughput };

  explicit Theme(const QPalette& palette);
  // The theme of the application's palette now (QApplication::palette()).
  static Theme current();
  // A dark palette for `expnet-studio --theme dark` (Fusion style's roles).
  static QPalette darkPalette();

  bool isDark() const { return dark_; }
  QColor text() const;
  QColor mutedText() const;      // hints and captions of controls
  QColor errorText() const;
  QColor successText() const;    // a run that is running
  QColor warningText() const;    // a run that was interrupted
  QColor panelBackground() const;  // the dashed "what to do" panels
  QColor panelBorder() const;
  QColor navigationBackground() const;
  QColor navigationText() const;
  QColor navigationSelected() const;
  QColor navigationSelectedText() const;
  QColor accent() const;         // the selected word of a caption
  QColor accentText() const;
  QColor imageBackdrop() const;  // behind images, in both modes a neutral dark grey
  QColor imageBackdropText() const;
  QColor plotBackground() const;
  QColor plotForeground() const;  // axes, ticks, labels
  QColor plotGrid() const;
  QColor plotEmptyArea() const;   // a colour map's area before it has data
  QColor legendBackground() const;
  QColor series(Series series) const;
  // The i-th run of an overlay of several runs' curves (10 hues, then again).
  QColor runColour(int i) const;
  // The g-th PNAIC word group (8 hues, then again), also the Compare charts' modes.
  QColor groupColour(int group) const;

  // Colour maps of matrices: perceptually uniform (viridis) for non-negative
  // values and blue-white-red for signed ones; the same in both modes.
  static QVector<QColor> sequentialMap();
  static QVector<QColor> divergingMap();

  // "#rrggbb" (or rgba(...) when translucent), for style sheets and rich text.
  static QString css(const QColor& colour);
  // Axes, grid, labels and background of a QCustomPlot in this theme.
  void applyTo(QCustomPlot* plot) const;

 private:
  QPalette palette_;
  bool dark_;
};

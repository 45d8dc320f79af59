#include "common/theme.h"

#include <QApplication>
#include <qcustomplot.h>

namespace {
// a * (1 - t) + b * t per channel: greys between the palette's text and background.
QColor mix(const QColor& a, const QColor& b, double t) {
  return QColor::fromRgbF(float(a.redF() * (1 - t) + b.redF() * t), float(a.greenF() * (1 - t) + b.greenF() * t),
                          float(a.blueF() * (1 - t) + b.blueF() * t));
}
}  // namespace

Theme::Theme(const QPalette& palette)
    : palette_(palette), dark_(palette.color(QPalette::Window).lightnessF() < 0.5) {}

Theme Theme::current() { return Theme(QApplication::palette()); }

QPalette Theme::darkPalette() {
  QPalette p;
  const QColor window(0x2d, 0x31, 0x36), base(0x1f, 0x23, 0x27), text(0xe6, 0xe9, 0xec);
  const QColor disabled(0x7d, 0x84, 0x8b);
  p.setColor(QPalette::Window, window);
  p.setColor(QPalette::WindowText, text);
  p.setColor(QPalette::Base, base);
  p.setColor(QPalette::AlternateBase, QColor(0x27, 0x2b, 0x30));
  p.setColor(QPalette::ToolTipBase, QColor(0x3a, 0x3f, 0x45));
  p.setColor(QPalette::ToolTipText, text);
  p.setColor(QPalette::PlaceholderText, disabled);
  p.setColor(QPalette::Text, text);
  p.setColor(QPalette::Button, QColor(0x38, 0x3d, 0x43));
  p.setColor(QPalette::ButtonText, text);
  p.setColor(QPalette::BrightText, Qt::red);
  p.setColor(QPalette::Light, QColor(0x4a, 0x50, 0x57));
  p.setColor(QPalette::Midlight, QColor(0x40, 0x45, 0x4b));
  p.setColor(QPalette::Mid, QColor(0x25, 0x29, 0x2d));
  p.setColor(QPalette::Dark, QColor(0x1a, 0x1d, 0x20));
  p.setColor(QPalette::Shadow, QColor(0x10, 0x12, 0x14));
  p.setColor(QPalette::Link, QColor(0x6c, 0xb4, 0xff));
  p.setColor(QPalette::Highlight, QColor(0x3d, 0x7a, 0xb8));
  p.setColor(QPalette::HighlightedText, Qt::white);
  for (auto role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
    p.setColor(QPalette::Disabled, role, disabled);
  return p;
}

QColor Theme::text() const { return palette_.color(QPalette::WindowText); }
QColor Theme::mutedText() const { return mix(text(), palette_.color(QPalette::Window), 0.4); }
QColor Theme::errorText() const { return dark_ ? QColor(0xff, 0x7b, 0x72) : QColor(0xb0, 0x20, 0x20); }
QColor Theme::successText() const { return dark_ ? QColor(0x6f, 0xd3, 0x8a) : QColor(0x1f, 0x80, 0x3a); }
QColor Theme::warningText() const { return dark_ ? QColor(0xf0, 0xb0, 0x50) : QColor(0xa8, 0x5a, 0x00); }
QColor Theme::panelBackground() const {
  return mix(palette_.color(QPalette::Base), palette_.color(QPalette::Window), 0.5);
}
QColor Theme::panelBorder() const { return mix(text(), palette_.color(QPalette::Window), 0.65); }
// The navigation column is dark in both modes; in a dark one, darker than the pages.
QColor Theme::navigationBackground() const {
  return dark_ ? palette_.color(QPalette::Window).darker(135) : QColor(0x2b, 0x34, 0x40);
}
QColor Theme::navigationText() const { return QColor(0xe8, 0xed, 0xf2); }
QColor Theme::navigationSelected() const { return palette_.color(QPalette::Highlight); }
QColor Theme::navigationSelectedText() const { return Qt::white; }
QColor Theme::accent() const { return QColor(0xd9, 0x62, 0x2b); }
QColor Theme::accentText() const { return Qt::white; }
QColor Theme::imageBackdrop() const { return QColor(0x2b, 0x30, 0x36); }
QColor Theme::imageBackdropText() const { return QColor(0xc8, 0xd0, 0xd8); }
QColor Theme::plotBackground() const { return palette_.color(QPalette::Base); }
QColor Theme::plotForeground() const { return palette_.color(QPalette::Text); }
QColor Theme::plotGrid() const { return mix(palette_.color(QPalette::Text), palette_.color(QPalette::Base), 0.8); }
QColor Theme::plotEmptyArea() const { return mix(palette_.color(QPalette::Text), palette_.color(QPalette::Base), 0.94); }
QColor Theme::legendBackground() const {
  QColor c = palette_.color(QPalette::Base);
  c.setAlpha(210);
  return c;
}

QColor Theme::runColour(int i) const {
  // Tableau 10: distinct hues that stay apart for colour-blind readers; lighter on dark.
  static const QColor hues[] = {{31, 119, 180}, {255, 127, 14}, {44, 160, 44},  {214, 39, 40},  {148, 103, 189},
                                {140, 86, 75},  {227, 119, 194}, {127, 127, 127}, {188, 189, 34}, {23, 190, 207}};
  const QColor c = hues[((i % 10) + 10) % 10];
  return dark_ ? c.lighter(125) : c;
}

QColor Theme::groupColour(int group) const {
  // Tableau-like hues: darker ones on light backgrounds, lighter on dark, each
  // at a contrast of at least 4.5:1 against the page's background.
  static const QColor light[] = {{0x1f, 0x5f, 0xa8}, {0xb8, 0x26, 0x2a}, {0x23, 0x7a, 0x2b}, {0x7a, 0x46, 0xb0},
                                 {0xa8, 0x5a, 0x00}, {0x0c, 0x7a, 0x85}, {0x7d, 0x4a, 0x33}, {0xa8, 0x33, 0x6f}};
  static const QColor dark[] = {{0x7c, 0xb8, 0xff}, {0xff, 0x8a, 0x80}, {0x7b, 0xd8, 0x8f}, {0xc9, 0xa6, 0xff},
                                {0xff, 0xb7, 0x4d}, {0x5f, 0xd7, 0xe0}, {0xd9, 0xa5, 0x8a}, {0xf5, 0x9a, 0xd7}};
  const int i = ((group % 8) + 8) % 8;
  return dark_ ? dark[i] : light[i];
}

QColor Theme::series(Series series) const {
  // Light: mid-dark hues on white; dark: the same hues lighter, so both stand out.
  switch (series) {
    case Series::LossRaw: return dark_ ? QColor(80, 110, 150) : QColor(150, 180, 215);
    case Series::LossSmoothed: return dark_ ? QColor(110, 170, 245) : QColor(30, 90, 170);
    case Series::LearningRate: return dark_ ? QColor(240, 150, 60) : QColor(200, 110, 20);
    case Series::CiderD: return dark_ ? QColor(90, 200, 120) : QColor(40, 140, 70);
    case Series::Bleu4: return dark_ ? QColor(205, 130, 220) : QColor(150, 60, 160);
    case Series::Throughput: return dark_ ? QColor(180, 180, 180) : QColor(90, 90, 90);
  }
  return text();
}

QVector<QColor> Theme::sequentialMap() {
  // Matplotlib's viridis at ten evenly spaced stops: readable in grey scale and
  // for the common colour-vision deficiencies, unlike jet.
  return {QColor(0x44, 0x01, 0x54), QColor(0x48, 0x28, 0x78), QColor(0x3e, 0x49, 0x89), QColor(0x31, 0x68, 0x8e),
          QColor(0x26, 0x82, 0x8e), QColor(0x1f, 0x9e, 0x89), QColor(0x35, 0xb7, 0x79), QColor(0x6e, 0xce, 0x58),
          QColor(0xb5, 0xde, 0x2b), QColor(0xfd, 0xe7, 0x25)};
}

QVector<QColor> Theme::divergingMap() {
  return {QColor(0x21, 0x66, 0xac), QColor(0x92, 0xc5, 0xde), QColor(0xf7, 0xf7, 0xf7), QColor(0xf4, 0xa5, 0x82),
          QColor(0xb2, 0x18, 0x2b)};
}

QString Theme::css(const QColor& colour) {
  if (colour.alpha() == 255) return colour.name(QColor::HexRgb);
  return QStringLiteral("rgba(%1, %2, %3, %4)").arg(colour.red()).arg(colour.green()).arg(colour.blue()).arg(colour.alpha());
}

void Theme::applyTo(QCustomPlot* plot) const {
  plot->setBackground(plotBackground());
  const QColor fg = plotForeground();
  const auto style = [&](QCPAxis* axis) {
    axis->setBasePen(QPen(fg));
    axis->setTickPen(QPen(fg));
    axis->setSubTickPen(QPen(fg));
    axis->setTickLabelColor(fg);
    axis->setLabelColor(fg);
    axis->grid()->setPen(QPen(plotGrid(), 0, Qt::DotLine));
  };
  for (QCPAxis* axis : plot->axisRect()->axes()) style(axis);
  for (QCPLayoutElement* element : plot->plotLayout()->elements(true)) {
    if (auto* title = qobject_cast<QCPTextElement*>(element)) title->setTextColor(fg);
    if (auto* scale = qobject_cast<QCPColorScale*>(element)) style(scale->axis());
  }
  plot->legend->setTextColor(fg);
  plot->legend->setBorderPen(QPen(plotGrid()));
  plot->legend->setBrush(legendBackground());
}

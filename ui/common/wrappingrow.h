// Widgets side by side where the row is wide enough for all of them, one under
// the other where it is not (a laptop screen, 2x scaling): the page scrolls down
// rather than sideways.
#pragma once

#include <QWidget>

#include <QList>

class QBoxLayout;

// A plain row of `widgets` as one widget (a group a WrappingRow keeps together); the
// widget at `stretchAt`, if any, takes the room left.
QWidget* widgetRow(const QList<QWidget*>& widgets, int stretchAt = -1);

class WrappingRow : public QWidget {
 public:
  explicit WrappingRow(QWidget* parent = nullptr);
  void addWidget(QWidget* widget, int stretch = 0);
  bool stacked() const;
  QSize minimumSizeHint() const override;  // as narrow as its widest widget

 protected:
  void resizeEvent(QResizeEvent* event) override;

 private:
  int sideBySideWidth() const;
  QBoxLayout* layout_;
};

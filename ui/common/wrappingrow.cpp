#include "common/wrappingrow.h"

#include <QBoxLayout>
#include <QResizeEvent>

#include <algorithm>

QWidget* widgetRow(const QList<QWidget*>& widgets, int stretchAt) {
  auto* row = new QWidget;
  auto* layout = new QHBoxLayout(row);
  layout->setContentsMargins(0, 0, 0, 0);
  for (int i = 0; i < widgets.size(); ++i) layout->addWidget(widgets[i], i == stretchAt ? 1 : 0);
  return row;
}

WrappingRow::WrappingRow(QWidget* parent) : QWidget(parent), layout_(new QBoxLayout(QBoxLayout::LeftToRight, this)) {
  layout_->setContentsMargins(0, 0, 0, 0);
}

void WrappingRow::addWidget(QWidget* widget, int stretch) { layout_->addWidget(widget, stretch); }

bool WrappingRow::stacked() const { return layout_->direction() == QBoxLayout::TopToBottom; }

int WrappingRow::sideBySideWidth() const {
  int width = 0, shown = 0;
  for (int i = 0; i < layout_->count(); ++i)
    if (QWidget* w = layout_->itemAt(i)->widget(); w && !w->isHidden()) {
      width += std::max(w->minimumSizeHint().width(), w->minimumWidth());
      ++shown;
    }
  return width + std::max(0, shown - 1) * layout_->spacing();
}

QSize WrappingRow::minimumSizeHint() const {
  int width = 0;
  for (int i = 0; i < layout_->count(); ++i)
    if (QWidget* w = layout_->itemAt(i)->widget(); w && !w->isHidden())
      width = std::max(width, std::max(w->minimumSizeHint().width(), w->minimumWidth()));
  return {width, layout_->minimumSize().height()};
}

// Only the width decides, so a scroll bar that appears with the taller stack cannot flip it back.
void WrappingRow::resizeEvent(QResizeEvent* event) {
  const auto direction = event->size().width() >= sideBySideWidth() ? QBoxLayout::LeftToRight : QBoxLayout::TopToBottom;
  if (direction != layout_->direction()) {
    layout_->setDirection(direction);
    updateGeometry();
  }
  QWidget::resizeEvent(event);
}

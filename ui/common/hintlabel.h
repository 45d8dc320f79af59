// The grey explanatory texts of the pages, in one of two forms: a caption
// beside a control ("Layer:") or a short hint, and the dashed panel that tells
// an empty page what to do first. Colours come from the Theme.
#pragma once

#include <QLabel>

class HintLabel : public QLabel {
  Q_OBJECT
 public:
  enum class Kind { Inline, Panel };
  explicit HintLabel(const QString& text = QString(), Kind kind = Kind::Inline, QWidget* parent = nullptr);

  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

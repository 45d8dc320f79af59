// The grey explanatory texts of the pages, in one of three forms: a caption
// beside a control ("Layer:") or a short hint; the dashed panel that tells
// an empty page what to do first; and a notice beside a page's results
// (framed, an accent bar on its left, in the text colour) that a user must
// not miss. Colours come from the Theme.
#pragma once

#include <QLabel>

class HintLabel : public QLabel {
  Q_OBJECT
 public:
  enum class Kind { Inline, Panel, Notice };
  explicit HintLabel(const QString& text = QString(), Kind kind = Kind::Inline, QWidget* parent = nullptr);

  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

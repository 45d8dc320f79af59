// The grey explanatory texts of the pages, in one of three forms: a caption
// beside a control ("Layer:") or a short hint; the dashed panel that tells
// an empty page what to do first; and a notice beside a page's results
// (framed, an accent bar on its left, in the text colour) that a user must
// not miss. A page's status line is one too: Status (the text colour) while
// all is well, Error (the error colour) when its last action failed, so that
// no page writes the error style itself. Colours come from the Theme.
#pragma once

#include <QLabel>

class HintLabel : public QLabel {
  Q_OBJECT
 public:
  enum class Kind { Inline, Panel, Notice, Status, Error };
  explicit HintLabel(const QString& text = QString(), Kind kind = Kind::Inline, QWidget* parent = nullptr);
  // A page's or dialog's status line: Status kind, wrapped, its text selectable (to copy an error).
  static HintLabel* statusLine(const QString& objectName);

  Kind kind() const { return kind_; }
  // Restyles a line between Inline, Status and Error (a status that failed, or
  // recovered); Panel and Notice also lay the label out, so they stay as built.
  void setKind(Kind kind);

 private:
  void applyStyle();

  Kind kind_;
};

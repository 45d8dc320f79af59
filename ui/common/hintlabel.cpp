#include "common/hintlabel.h"

#include "common/theme.h"

HintLabel* HintLabel::statusLine(const QString& objectName) {
  auto* line = new HintLabel(QString(), Kind::Status);
  line->setObjectName(objectName);
  line->setWordWrap(true);
  line->setTextInteractionFlags(Qt::TextSelectableByMouse);
  return line;
}

HintLabel::HintLabel(const QString& text, Kind kind, QWidget* parent) : QLabel(text, parent), kind_(kind) {
  if (kind == Kind::Panel || kind == Kind::Notice) {
    setWordWrap(true);
    setTextFormat(Qt::RichText);
  }
  if (kind == Kind::Notice) setTextInteractionFlags(Qt::TextSelectableByMouse);
  if (kind == Kind::Panel) {
    setAlignment(Qt::AlignCenter);
    setMargin(40);
  }
  applyStyle();
}

void HintLabel::setKind(Kind kind) {
  Q_ASSERT(kind != Kind::Panel && kind != Kind::Notice && kind_ != Kind::Panel && kind_ != Kind::Notice);
  if (kind == kind_) return;  // a style sheet repolishes the label: only when it changes
  kind_ = kind;
  applyStyle();
}

void HintLabel::applyStyle() {
  const Theme theme = Theme::current();
  switch (kind_) {
    case Kind::Inline:
      setStyleSheet(QStringLiteral("color: %1;").arg(Theme::css(theme.mutedText())));
      return;
    case Kind::Status:
      setStyleSheet(QString());  // the palette's text colour, like any label
      return;
    case Kind::Error:
      setStyleSheet(QStringLiteral("color: %1;").arg(Theme::css(theme.errorText())));
      return;
    case Kind::Notice:
      setStyleSheet(QStringLiteral("QLabel { color: %1; background: %2; border: 1px solid %3; "
                                   "border-left: 4px solid %4; border-radius: 4px; padding: 6px 10px; }")
                        .arg(Theme::css(theme.text()), Theme::css(theme.panelBackground()),
                             Theme::css(theme.panelBorder()), Theme::css(theme.accent())));
      return;
    case Kind::Panel:
      setStyleSheet(QStringLiteral("QLabel { color: %1; border: 2px dashed %2; border-radius: 8px; background: %3; "
                                   "font-size: 11pt; }")
                        .arg(Theme::css(theme.text()), Theme::css(theme.panelBorder()),
                             Theme::css(theme.panelBackground())));
      return;
  }
}

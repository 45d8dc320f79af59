#include "common/hintlabel.h"

#include "common/theme.h"

HintLabel::HintLabel(const QString& text, Kind kind, QWidget* parent) : QLabel(text, parent), kind_(kind) {
  const Theme theme = Theme::current();
  if (kind == Kind::Inline) {
    setStyleSheet(QStringLiteral("color: %1;").arg(Theme::css(theme.mutedText())));
    return;
  }
  setWordWrap(true);
  setTextFormat(Qt::RichText);
  if (kind == Kind::Notice) {
    setTextInteractionFlags(Qt::TextSelectableByMouse);
    setStyleSheet(QStringLiteral("QLabel { color: %1; background: %2; border: 1px solid %3; border-left: 4px solid %4; "
                                 "border-radius: 4px; padding: 6px 10px; }")
                      .arg(Theme::css(theme.text()), Theme::css(theme.panelBackground()), Theme::css(theme.panelBorder()),
                           Theme::css(theme.accent())));
    return;
  }
  setAlignment(Qt::AlignCenter);
  setMargin(40);
  setStyleSheet(QStringLiteral("QLabel { color: %1; border: 2px dashed %2; border-radius: 8px; background: %3; "
                               "font-size: 11pt; }")
                    .arg(Theme::css(theme.text()), Theme::css(theme.panelBorder()), Theme::css(theme.panelBackground())));
}

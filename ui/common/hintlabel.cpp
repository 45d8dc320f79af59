#include "common/hintlabel.h"

#include "common/theme.h"

HintLabel::HintLabel(const QString& text, Kind kind, QWidget* parent) : QLabel(text, parent), kind_(kind) {
  const Theme theme = Theme::current();
  if (kind == Kind::Inline) {
    setStyleSheet(QStringLiteral("color: %1;").arg(Theme::css(theme.mutedText())));
    return;
  }
  setWordWrap(true);
  setAlignment(Qt::AlignCenter);
  setTextFormat(Qt::RichText);
  setMargin(40);
  setStyleSheet(QStringLiteral("QLabel { color: %1; border: 2px dashed %2; border-radius: 8px; background: %3; "
                               "font-size: 11pt; }")
                    .arg(Theme::css(theme.text()), Theme::css(theme.panelBorder()), Theme::css(theme.panelBackground())));
}

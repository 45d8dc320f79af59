#include "compare/groupcaption.h"

#include <QStringList>

#include "common/theme.h"

namespace {
QStringList wordsOf(const QString& text) { return text.split(QLatin1Char(' '), Qt::SkipEmptyParts); }

// `shown` words of `words`, the last `fresh` of them underlined.
QString wordsHtml(const QStringList& words, qsizetype shown, qsizetype fresh) {
  QStringList out;
  for (qsizetype i = 0; i < shown && i < words.size(); ++i) {
    const QString word = words[i].toHtmlEscaped();
    out << (i >= shown - fresh ? QStringLiteral("<u>%1</u>").arg(word) : word);
  }
  return out.join(QLatin1Char(' '));
}
}  // namespace

QString captionHtml(const expnet::ModeCaption& caption, int step, bool showDeleted, const Theme& theme) {
  if (!caption.error.empty())
    return QStringLiteral("<span style=\"color:%1\">%2</span>")
        .arg(Theme::css(theme.errorText()), QString::fromStdString(caption.error).toHtmlEscaped());
  const bool whole = step <= 0;
  const auto& groups = caption.groups;
  if (groups.empty()) {  // AIC: one word per step
    const QStringList words = wordsOf(QString::fromStdString(caption.text));
    const qsizetype shown = whole ? words.size() : std::min<qsizetype>(step, words.size());
    return wordsHtml(words, shown, whole || step > words.size() ? 0 : 1);
  }
  // PNAIC: every unfinished group adds one word per step.
  QStringList parts;
  for (int g = 0; g < int(groups.size()); ++g) {
    const QStringList words = wordsOf(QString::fromStdString(caption.group_texts.at(size_t(g))));
    const bool deleted = groups[size_t(g)].end == expnet::GroupEnd::del;
    // A group's DEL is decided at the step after its last word.
    const bool deletedYet = deleted && (whole || step > words.size());
    if (deletedYet && !showDeleted) continue;
    const qsizetype shown = whole ? words.size() : std::min<qsizetype>(step, words.size());
    if (shown == 0) continue;
    const QString text = wordsHtml(words, shown, whole || step > words.size() ? 0 : 1);
    parts << QStringLiteral("<span style=\"color:%1%2\">%3</span>")
                 .arg(Theme::css(theme.groupColour(g)),
                      deletedYet ? QStringLiteral("; text-decoration: line-through") : QString(), text);
  }
  return parts.join(QStringLiteral(" <span style=\"color:%1\">|</span> ").arg(Theme::css(theme.mutedText())));
}

#include "caption/captiondetails.h"

#include <QJsonArray>
#include <QJsonObject>
#include <QStringList>

#include "common/theme.h"

QString captionDetailsHtml(const CaptionItem& item, const Theme& theme) {
  QString html = QStringLiteral("<p><b>%1</b></p>").arg(item.display.toHtmlEscaped());
  if (item.status == CaptionItem::Status::Failed)
    return html + QStringLiteral("<p style='color:%1'>%2</p>").arg(Theme::css(theme.errorText()), item.error.toHtmlEscaped());
  if (!item.nbest.isEmpty()) {
    html += QStringLiteral("<table cellspacing=0 cellpadding=3><tr><th align=left>#</th><th align=left>Caption</th>"
                           "<th align=right>Score</th><th align=right>log p</th></tr>");
    int rank = 0;
    for (const auto& value : item.nbest) {
      const QJsonObject h = value.toObject();
      html += QStringLiteral("<tr><td>%1</td><td>%2</td><td align=right>%3</td><td align=right>%4</td></tr>")
                  .arg(++rank)
                  .arg(h.value(QStringLiteral("text")).toString().toHtmlEscaped())
                  .arg(h.value(QStringLiteral("score")).toDouble(), 0, 'f', 3)
                  .arg(h.value(QStringLiteral("sum_logprob")).toDouble(), 0, 'f', 3);
    }
    html += QStringLiteral("</table>");
    if (!item.edited.isEmpty())
      html += QStringLiteral("<p><b>Edited</b>: <i>%1</i></p>").arg(item.edited.toHtmlEscaped());
  } else {
    html += QStringLiteral("<p>%1</p>").arg((item.caption().isEmpty() ? item.statusText() : item.caption()).toHtmlEscaped());
  }
  if (!item.altText.isEmpty()) html += QStringLiteral("<p><b>Alt text</b>: %1</p>").arg(item.altText.toHtmlEscaped());
  if (!item.ms.isEmpty())
    html += QStringLiteral("<p><b>Time</b>: preprocess %1 ms, encode %2 ms, decode %3 ms</p>")
                .arg(item.ms.value(QStringLiteral("preprocess")).toDouble(), 0, 'f', 1)
                .arg(item.ms.value(QStringLiteral("encode")).toDouble(), 0, 'f', 1)
                .arg(item.ms.value(QStringLiteral("decode")).toDouble(), 0, 'f', 1);
  if (!item.settings.isEmpty()) {
    const auto& s = item.settings;
    if (s.contains(QStringLiteral("model")))
      html += QStringLiteral("<p><b>Model</b>: %1, %2 on %3</p>")
                  .arg(s.value(QStringLiteral("model")).toString().toHtmlEscaped(), s.value(QStringLiteral("precision")).toString(),
                       s.value(QStringLiteral("device")).toString());
    const auto offOr = [&s](const char* key) {
      const int value = s.value(QLatin1String(key)).toInt();
      return value == 0 ? QStringLiteral("off") : QString::number(value);
    };
    html += QStringLiteral("<p><b>Settings</b>: %1, beam %2, n-best %3, max length %4, length penalty %5, "
                           "no-repeat n-gram %6, max word run %7</p>")
                .arg(s.value(QStringLiteral("search")).toString())
                .arg(s.value(QStringLiteral("beam_size")).toInt())
                .arg(s.value(QStringLiteral("n_best")).toInt())
                .arg(s.value(QStringLiteral("max_length")).toInt())
                .arg(s.value(QStringLiteral("length_penalty")).toDouble())
                .arg(offOr("no_repeat_ngram_size"), offOr("max_word_run"));
    QStringList carried;
    for (const auto& key : s.value(QStringLiteral("from_checkpoint")).toArray()) carried << key.toString();
    if (!carried.isEmpty())
      html += QStringLiteral("<p>From the checkpoint: %1</p>").arg(carried.join(QStringLiteral(", ")).toHtmlEscaped());
  }
  return html;
}

QString captionProgressText(const QVector<CaptionItem>& items, bool modelLoaded) {
  if (items.isEmpty()) return {};
  int done = 0, failed = 0, pending = 0;
  for (const auto& item : items) {
    done += item.status == CaptionItem::Status::Done;
    failed += item.status == CaptionItem::Status::Failed;
    pending += item.status == CaptionItem::Status::Queued || item.status == CaptionItem::Status::Running;
  }
  QString text = QStringLiteral("%1 captioned").arg(done);
  if (failed) text += QStringLiteral(", %1 failed").arg(failed);
  if (pending) text += modelLoaded ? QStringLiteral(", %1 to go").arg(pending)
                                   : QStringLiteral(", %1 waiting for a model").arg(pending);
  return text;
}

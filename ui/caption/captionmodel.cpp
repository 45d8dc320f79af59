#include "caption/captionmodel.h"

#include <QBrush>
#include <QFileInfo>
#include <QFont>
#include <QJsonDocument>
#include <QPainter>
#include <QPixmap>
#include <QRegularExpression>

#include "common/csvtext.h"
#include "common/theme.h"
#include "expnet/system/atomic_file.h"

namespace {
// Thumbnails centred in a fixed square, so file names line up whatever the
// image's shape (and rows without a thumbnail keep the same indent).
QPixmap squareThumbnail(const QImage& thumbnail) {
  constexpr int side = 72;
  QPixmap square(side, side);
  square.fill(Qt::transparent);
  if (thumbnail.isNull()) return square;
  const QImage fitted = thumbnail.width() > side || thumbnail.height() > side
                            ? thumbnail.scaled(side, side, Qt::KeepAspectRatio, Qt::SmoothTransformation)
                            : thumbnail;
  QPainter painter(&square);
  painter.drawImage((side - fitted.width()) / 2, (side - fitted.height()) / 2, fitted);
  return square;
}

void writeAtomic(const QString& file, const QByteArray& bytes) {
  expnet::write_file_atomic(file.toStdString(), bytes.toStdString());
}
}  // namespace

QString CaptionItem::caption() const {
  if (!edited.isEmpty()) return edited;
  return modelCaption();
}

QString CaptionItem::modelCaption() const {
  if (!nbest.isEmpty()) return nbest.first().toObject().value(QStringLiteral("text")).toString();
  return partial;
}

QString CaptionItem::statusText() const {
  switch (status) {
    case Status::Queued: return QStringLiteral("Queued");
    case Status::Running: return QStringLiteral("Captioning…");
    case Status::Failed: return QStringLiteral("Error");
    case Status::Cancelled: return QStringLiteral("Cancelled");
    case Status::Done: {
      double total = 0;
      for (const auto& v : ms) total += v.toDouble();
      return QStringLiteral("Done · %1 ms").arg(total, 0, 'f', 1) +
             (edited.isEmpty() ? QString() : QStringLiteral(" · edited"));
    }
  }
  return {};
}

QString CaptionItem::madeBy() const {
  const QString model = settings.value(QStringLiteral("model")).toString();
  if (model.isEmpty()) return {};
  const QString search = settings.value(QStringLiteral("search")).toString();
  return search == QLatin1String("beam") ? QStringLiteral("%1 · beam %2").arg(model).arg(settings.value(QStringLiteral("beam_size")).toInt())
                                         : QStringLiteral("%1 · %2").arg(model, search);
}

QJsonObject CaptionItem::toJson() const {
  QJsonObject out{{"image", display}};
  if (status == Status::Failed) {
    out.insert(QStringLiteral("error"), error);
    return out;
  }
  out.insert(QStringLiteral("caption"), caption());
  if (!edited.isEmpty()) out.insert(QStringLiteral("model_caption"), modelCaption());
  out.insert(QStringLiteral("status"), statusText());
  if (!altText.isEmpty()) out.insert(QStringLiteral("alt_text"), altText);
  if (!nbest.isEmpty()) out.insert(QStringLiteral("nbest"), nbest);
  if (!ms.isEmpty()) out.insert(QStringLiteral("ms"), ms);
  if (!settings.isEmpty()) out.insert(QStringLiteral("settings"), settings);
  return out;
}

int CaptionModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(items_.size()); }
int CaptionModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant CaptionModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= items_.size()) return {};
  const CaptionItem& item = items_.at(index.row());
  const bool failed = item.status == CaptionItem::Status::Failed;
  switch (index.column()) {
    case ImageColumn:
      if (role == Qt::DisplayRole) return QFileInfo(item.display).fileName();
      if (role == Qt::DecorationRole) return squareThumbnail(item.thumbnail);
      if (role == Qt::ToolTipRole) return item.display;
      break;
    case CaptionColumn:
      if (role == Qt::DisplayRole) return failed ? item.error : item.caption();
      if (role == Qt::EditRole) return item.caption();
      if (role == Qt::ForegroundRole && failed) return QBrush(Theme::current().errorText());
      if (role == Qt::ForegroundRole && item.status == CaptionItem::Status::Running) return QBrush(Theme::current().mutedText());
      if (role == Qt::FontRole && !item.edited.isEmpty()) {  // an edit is marked: italic, and said in the status
        QFont font;
        font.setItalic(true);
        return font;
      }
      if (role == Qt::ToolTipRole && !item.edited.isEmpty())
        return QStringLiteral("Edited; the model wrote: %1").arg(item.modelCaption());
      if (role == Qt::ToolTipRole)
        return failed ? item.error
                      : item.caption() + (item.status == CaptionItem::Status::Done
                                              ? QStringLiteral("\n(double-click or F2 to edit)")
                                              : QString());
      break;
    case StatusColumn:
      if (role == Qt::DisplayRole) {  // a long model name is cut here (the column sizes to it); the tooltip has it whole
        const QString by = item.madeBy();
        const QString status = by.isEmpty()
                                   ? item.statusText()
                                   : item.statusText() + QLatin1Char('\n') +
                                         (by.size() > 40 ? by.left(18) + QStringLiteral("…") + by.right(21) : by);
        return item.altText.isEmpty()
                   ? status
                   : status + QStringLiteral("\nAlt text: ") + item.altText.section(QLatin1Char(':'), 0, 0);
      }
      if (role == Qt::ToolTipRole && !item.altText.isEmpty()) return QStringLiteral("Alt text: %1").arg(item.altText);
      if (role == Qt::ToolTipRole && !item.madeBy().isEmpty()) return QStringLiteral("Captioned by %1").arg(item.madeBy());
      if (role == Qt::ForegroundRole && failed) return QBrush(Theme::current().errorText());
      break;
  }
  return {};
}

QVariant CaptionModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case ImageColumn: return QStringLiteral("Image");
    case CaptionColumn: return QStringLiteral("Caption");
    case StatusColumn: return QStringLiteral("Status");
  }
  return {};
}

Qt::ItemFlags CaptionModel::flags(const QModelIndex& index) const {
  Qt::ItemFlags flags = QAbstractTableModel::flags(index);
  if (index.isValid() && index.column() == CaptionColumn && index.row() < items_.size() &&
      items_.at(index.row()).status == CaptionItem::Status::Done)
    flags |= Qt::ItemIsEditable;
  return flags;
}

bool CaptionModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  if (role != Qt::EditRole || !(flags(index) & Qt::ItemIsEditable)) return false;
  const QString text = value.toString().simplified();  // one line, as alt text is
  if (text.isEmpty()) return false;                    // an empty caption is not an edit
  update(index.row(), [&](CaptionItem& item) {
    const QString edit = text == item.modelCaption() ? QString() : text;
    if (edit != item.edited) item.altText.clear();  // what was saved is no longer what is shown
    item.edited = edit;
  });
  return true;
}

int CaptionModel::append(const QVector<CaptionItem>& items) {
  const int first = int(items_.size());
  if (items.isEmpty()) return first;
  beginInsertRows({}, first, first + int(items.size()) - 1);
  items_ += items;
  endInsertRows();
  return first;
}

void CaptionModel::clear() {
  beginResetModel();
  items_.clear();
  endResetModel();
}

int CaptionModel::pendingCount() const {
  int n = 0;
  for (const auto& item : items_)
    n += item.status == CaptionItem::Status::Queued || item.status == CaptionItem::Status::Running;
  return n;
}

// Every change of a row goes through here: bounds checked, views and the page told.
void CaptionModel::update(int row, const std::function<void(CaptionItem&)>& change) {
  if (row < 0 || row >= items_.size()) return;
  change(items_[row]);
  emit dataChanged(index(row, 0), index(row, ColumnCount - 1));
  emit itemChanged(row);
}

void CaptionModel::setSubmitted(int row, const QJsonObject& settings, const QString& builtinModel,
                                const QString& checkpoint) {
  update(row, [&](CaptionItem& item) {
    item.submitted = true;
    item.settings = settings;
    item.builtinModel = builtinModel;
    item.checkpoint = checkpoint;
  });
}

void CaptionModel::setRunning(int row, const QImage& thumbnail) {
  update(row, [&](CaptionItem& item) {
    item.status = CaptionItem::Status::Running;
    item.thumbnail = thumbnail;
  });
}

void CaptionModel::setPartial(int row, const QString& caption) {
  update(row, [&](CaptionItem& item) { item.partial = caption; });
}

void CaptionModel::setDone(int row, const expnet::CaptionedImage& result) {
  update(row, [&](CaptionItem& item) {
    item.status = CaptionItem::Status::Done;
    item.nbest = QJsonArray();
    for (size_t i = 0; i < result.captions.size(); ++i)
      item.nbest.append(QJsonObject{{"text", QString::fromStdString(result.texts.at(i))},
                                    {"score", result.captions[i].score},
                                    {"sum_logprob", result.captions[i].sum_logprob}});
    item.ms = QJsonObject{{"preprocess", result.ms.preprocess}, {"encode", result.ms.encode}, {"decode", result.ms.decode}};
    item.partial.clear();
  });
}

void CaptionModel::setFailed(int row, const QString& error) {
  update(row, [&](CaptionItem& item) {
    item.status = CaptionItem::Status::Failed;
    item.error = error;
  });
}

void CaptionModel::setCancelled(int row) {
  update(row, [](CaptionItem& item) { item.status = CaptionItem::Status::Cancelled; });
}

void CaptionModel::setAltText(int row, const QString& result) {
  update(row, [&](CaptionItem& item) { item.altText = result; });
}

qint64 CaptionModel::cocoImageId(const QString& path, int row) {
  static const QRegularExpression trailingDigits(QStringLiteral("(\\d+)$"));
  const auto match = trailingDigits.match(QFileInfo(path).completeBaseName());
  bool ok = false;
  const qint64 id = match.hasMatch() ? match.captured(1).toLongLong(&ok) : 0;
  return ok ? id : row + 1;
}

void CaptionModel::exportCsv(const QString& file) const {
  // The model's columns come last: scripts reading the first seven by position keep working.
  QString out = QStringLiteral("image,caption,score,preprocess_ms,encode_ms,decode_ms,error,model,precision,device,search,beam_size\n");
  for (const auto& item : items_) {
    if (item.status != CaptionItem::Status::Done && item.status != CaptionItem::Status::Failed) continue;
    const QJsonObject best = item.nbest.isEmpty() ? QJsonObject() : item.nbest.first().toObject();
    const auto number = [](const QJsonValue& v) { return v.isUndefined() ? QString() : QString::number(v.toDouble(), 'g', 8); };
    out += QStringList{csvField(item.display), csvField(item.caption()), number(best.value(QStringLiteral("score"))),
                       number(item.ms.value(QStringLiteral("preprocess"))), number(item.ms.value(QStringLiteral("encode"))),
                       number(item.ms.value(QStringLiteral("decode"))), csvField(item.error),
                       csvField(item.settings.value(QStringLiteral("model")).toString()),
                       item.settings.value(QStringLiteral("precision")).toString(),
                       item.settings.value(QStringLiteral("device")).toString(),
                       item.settings.value(QStringLiteral("search")).toString(),
                       item.settings.contains(QStringLiteral("beam_size"))
                           ? QString::number(item.settings.value(QStringLiteral("beam_size")).toInt())
                           : QString()}
               .join(QLatin1Char(','));
    out += QLatin1Char('\n');
  }
  writeAtomic(file, out.toUtf8());
}

void CaptionModel::exportJsonLines(const QString& file) const {
  QByteArray out;
  for (const auto& item : items_) {
    if (item.status != CaptionItem::Status::Done && item.status != CaptionItem::Status::Failed) continue;
    out += QJsonDocument(item.toJson()).toJson(QJsonDocument::Compact) + '\n';
  }
  writeAtomic(file, out);
}

void CaptionModel::exportCocoResults(const QString& file) const {
  QJsonArray results;
  for (int row = 0; row < items_.size(); ++row) {
    const auto& item = items_.at(row);
    if (item.status != CaptionItem::Status::Done) continue;
    results.append(QJsonObject{{"image_id", cocoImageId(item.display, row)}, {"caption", item.caption()}});
  }
  writeAtomic(file, QJsonDocument(results).toJson(QJsonDocument::Compact) + '\n');
}

#include "runs/runstablemodel.h"

#include <QDateTime>
#include <QFileInfo>

#include <cmath>

#include "common/theme.h"

RunsTableModel::RunsTableModel(QObject* parent)
    : RowTableModel<RunRow>({QStringLiteral("Name"), QStringLiteral("Status"), QStringLiteral("Host"), QStringLiteral("Recipe"),
                             QStringLiteral("Model"), QStringLiteral("Best CIDEr-D"), QStringLiteral("Best at"),
                             QStringLiteral("Steps"), QStringLiteral("Images/s"), QStringLiteral("Wall time"),
                             QStringLiteral("Started"), QStringLiteral("Tags"), QStringLiteral("Notes"),
                             QStringLiteral("Folder")},
                            parent) {}

QString RunsTableModel::formatDuration(double seconds) {
  if (!(seconds > 0)) return QStringLiteral("—");
  const qint64 s = qint64(std::llround(seconds));
  if (s < 60) return QStringLiteral("%1 s").arg(s);
  if (s < 3600) return QStringLiteral("%1 min %2 s").arg(s / 60).arg(s % 60);
  return QStringLiteral("%1 h %2 min").arg(s / 3600).arg((s % 3600) / 60);
}

namespace {

QColor statusColour(const QString& status) {
  const Theme theme = Theme::current();
  if (status == QLatin1String("running")) return theme.successText();
  if (status == QLatin1String("failed")) return theme.errorText();
  if (status == QLatin1String("interrupted")) return theme.warningText();
  return {};
}

QString startedText(const std::string& createdAt) {
  const QDateTime utc = QDateTime::fromString(QString::fromStdString(createdAt), Qt::ISODate);
  return utc.isValid() ? utc.toLocalTime().toString(QStringLiteral("yyyy-MM-dd HH:mm")) : QString::fromStdString(createdAt);
}

}  // namespace

QVariant RunsTableModel::data(const QModelIndex& index, int role) const {
  const RunRow* r = rowAt(index);
  if (!r) return {};
  const auto& info = r->info;
  const int column = index.column();
  if (role == KeyRole) return r->key();
  if (role == Qt::DisplayRole || role == Qt::EditRole || role == SortRole) {
    const bool sort = role == SortRole;
    switch (column) {
      case Name: return QString::fromStdString(info.name);
      case Status: return r->status;
      case Host: return r->host.isEmpty() ? QStringLiteral("this computer") : r->host;
      case Recipe: return r->recipe;
      case Model: return r->modelSize;
      case BestCider:
        if (!info.best_cider) return sort ? QVariant(-1.0) : QVariant(QStringLiteral("—"));
        return sort ? QVariant(*info.best_cider) : QVariant(QString::number(*info.best_cider, 'f', 3));
      case BestAt:
        if (!info.best_cider) return sort ? QVariant(-1) : QVariant(QStringLiteral("—"));
        return sort ? QVariant(qlonglong(info.best_stage * 100000 + info.best_epoch))
                    : QVariant(QStringLiteral("stage %1 · epoch %2").arg(info.best_stage + 1).arg(info.best_epoch + 1));
      case Steps: return sort ? QVariant(qlonglong(info.last_step)) : QVariant(QString::number(info.last_step));
      case ImagesPerS:
        return sort ? QVariant(info.images_per_s)
                    : QVariant(info.images_per_s > 0 ? QString::number(info.images_per_s, 'f', 1) : QStringLiteral("—"));
      case WallTime: return sort ? QVariant(info.wall_s) : QVariant(formatDuration(info.wall_s));
      case Started: return sort ? QVariant(QString::fromStdString(info.created_at)) : QVariant(startedText(info.created_at));
      case Tags: return QString::fromStdString(info.tags);
      case Notes: return QString::fromStdString(info.notes);
      case Folder: return QString::fromStdString(info.out_dir);
      default: return {};
    }
  }
  if (role == Qt::ForegroundRole && column == Status) {
    const QColor colour = statusColour(r->status);
    return colour.isValid() ? QVariant(colour) : QVariant();
  }
  if (role == Qt::DecorationRole && column == Name) {
    const auto it = colours_.find(r->key());
    if (it != colours_.end()) return *it;
  }
  if (role == Qt::ToolTipRole) {
    if (column == Status && !info.error.empty()) return QString::fromStdString(info.error);
    if (column == Folder || column == Name || column == Host)
      return r->host.isEmpty() ? QStringLiteral("%1\nstore: %2").arg(QString::fromStdString(info.out_dir), r->storePath)
                               : QStringLiteral("%1 on %2\nmirrored by expnet runs mirror into %3")
                                     .arg(QString::fromStdString(info.out_dir), r->host, r->storePath);
    if (column == Notes) return QString::fromStdString(info.notes);
  }
  if (role == Qt::TextAlignmentRole && (column == BestCider || column == Steps || column == ImagesPerS))
    return int(Qt::AlignRight | Qt::AlignVCenter);
  return {};
}

Qt::ItemFlags RunsTableModel::flags(const QModelIndex& index) const {
  Qt::ItemFlags f = RowTableModel<RunRow>::flags(index);
  if (index.column() == Name || index.column() == Tags || index.column() == Notes) f |= Qt::ItemIsEditable;
  return f;
}

bool RunsTableModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  const RunRow* r = rowAt(index);
  if (!r || role != Qt::EditRole) return false;
  const QString text = value.toString().trimmed();
  if (text == data(index, Qt::EditRole).toString()) return false;
  emit editRequested(r->key(), index.column(), text);
  return false;  // shown once the store says so (the listing is re-read)
}

void RunsTableModel::updateRows(std::vector<RunRow> fresh) {
  bool sameRuns = fresh.size() == rows().size();
  for (size_t i = 0; sameRuns && i < fresh.size(); ++i) sameRuns = fresh[i].key() == rows()[i].key();
  if (!sameRuns) {
    setRows(std::move(fresh));
    return;
  }
  replaceRowsInPlace(std::move(fresh));
  if (!rows().empty()) emit dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1));
}

int RunsTableModel::rowOfKey(const QString& key) const {
  for (size_t i = 0; i < rows().size(); ++i)
    if (rows()[i].key() == key) return int(i);
  return -1;
}

void RunsTableModel::setColours(const QHash<QString, QColor>& colours) {
  // Only the rows whose swatch changed: a change notification makes the filter
  // proxy look at the row again, which can change the view's selection.
  const QHash<QString, QColor> before = std::exchange(colours_, colours);
  for (size_t i = 0; i < rows().size(); ++i) {
    const QString key = rows()[i].key();
    if (before.value(key) != colours_.value(key))
      emit dataChanged(index(int(i), Name), index(int(i), Name), {Qt::DecorationRole});
  }
}

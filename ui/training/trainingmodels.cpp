#include "training/trainingmodels.h"

#include <QFileInfo>

namespace {
QString str(const std::string& s) { return QString::fromStdString(s); }
}  // namespace

RunListModel::RunListModel(QObject* parent)
    : RowTableModel({QStringLiteral("Run"), QStringLiteral("Status"), QStringLiteral("Steps"),
                     QStringLiteral("Best CIDEr-D"), QStringLiteral("Updated (UTC)")},
                    parent) {}

QVariant RunListModel::data(const QModelIndex& index, int role) const {
  const expnet::RunInfo* run = rowAt(index);
  if (!run) return {};
  if (role == Qt::ToolTipRole) return QStringLiteral("%1\n%2").arg(str(run->name), str(run->out_dir));
  if (role == Qt::TextAlignmentRole && index.column() >= StepsColumn && index.column() != UpdatedColumn)
    return int(Qt::AlignRight | Qt::AlignVCenter);
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case NameColumn: return str(run->name);
    case StatusColumn: return str(run->status);
    case StepsColumn: return qlonglong(run->steps);
    case BestCiderColumn: return run->best_cider ? QString::number(*run->best_cider, 'f', 3) : QStringLiteral("–");
    case UpdatedColumn: return str(run->updated_at).replace(QLatin1Char('T'), QLatin1Char(' ')).remove(QLatin1Char('Z'));
  }
  return {};
}

int RunListModel::rowOf(const QString& name) const {
  for (size_t i = 0; i < rows().size(); ++i)
    if (str(rows()[i].name) == name) return int(i);
  return -1;
}

SampleModel::SampleModel(QObject* parent)
    : RowTableModel({QStringLiteral("Image"), QStringLiteral("Caption (model)"), QStringLiteral("Reference")}, parent) {}

QVariant SampleModel::data(const QModelIndex& index, int role) const {
  const expnet::SampleCaption* sample = rowAt(index);
  if (!sample) return {};
  if (role == Qt::ToolTipRole)
    return index.column() == ImageColumn ? str(sample->image)
           : index.column() == CaptionColumn ? str(sample->caption) : str(sample->reference);
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case ImageColumn: return QFileInfo(str(sample->image)).fileName();
    case CaptionColumn: return str(sample->caption);
    case ReferenceColumn: return str(sample->reference);
  }
  return {};
}

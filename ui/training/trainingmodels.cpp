#include "training/trainingmodels.h"

#include <QFileInfo>

namespace {
QString str(const std::string& s) { return QString::fromStdString(s); }
}  // namespace

QVariant RunListModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const auto& run = runs_[size_t(index.row())];
  if (role == Qt::ToolTipRole) return QStringLiteral("%1\n%2").arg(str(run.name), str(run.out_dir));
  if (role == Qt::TextAlignmentRole && index.column() >= StepsColumn && index.column() != UpdatedColumn)
    return int(Qt::AlignRight | Qt::AlignVCenter);
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case NameColumn: return str(run.name);
    case StatusColumn: return str(run.status);
    case StepsColumn: return qlonglong(run.steps);
    case BestCiderColumn: return run.best_cider ? QString::number(*run.best_cider, 'f', 3) : QStringLiteral("–");
    case UpdatedColumn: return str(run.updated_at).replace(QLatin1Char('T'), QLatin1Char(' ')).remove(QLatin1Char('Z'));
  }
  return {};
}

QVariant RunListModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* names[] = {"Run", "Status", "Steps", "Best CIDEr-D", "Updated (UTC)"};
  return section < ColumnCount ? QString::fromLatin1(names[section]) : QVariant();
}

void RunListModel::setRuns(std::vector<expnet::RunInfo> runs) {
  beginResetModel();
  runs_ = std::move(runs);
  endResetModel();
}

int RunListModel::rowOf(const QString& name) const {
  for (size_t i = 0; i < runs_.size(); ++i)
    if (str(runs_[i].name) == name) return int(i);
  return -1;
}

QVariant SampleModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const auto& sample = samples_[size_t(index.row())];
  if (role == Qt::ToolTipRole)
    return index.column() == ImageColumn ? str(sample.image)
           : index.column() == CaptionColumn ? str(sample.caption) : str(sample.reference);
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case ImageColumn: return QFileInfo(str(sample.image)).fileName();
    case CaptionColumn: return str(sample.caption);
    case ReferenceColumn: return str(sample.reference);
  }
  return {};
}

QVariant SampleModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* names[] = {"Image", "Caption (model)", "Reference"};
  return section < ColumnCount ? QString::fromLatin1(names[section]) : QVariant();
}

void SampleModel::setSamples(std::vector<expnet::SampleCaption> samples) {
  beginResetModel();
  samples_ = std::move(samples);
  endResetModel();
}

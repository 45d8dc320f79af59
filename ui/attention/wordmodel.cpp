#include "attention/wordmodel.h"

#include <cmath>

void WordModel::setTrace(std::shared_ptr<const AttentionTrace> trace) {
  beginResetModel();
  trace_ = std::move(trace);
  endResetModel();
}

int WordModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() || !trace_ ? 0 : trace_->wordCount();
}

QVariant WordModel::data(const QModelIndex& index, int role) const {
  if (!trace_ || !index.isValid() || index.row() >= rowCount()) return {};
  const int k = index.row();
  if (role == Qt::DisplayRole) return trace_->word(k);
  if (role == Qt::ToolTipRole) {
    const double logp = trace_->logprobs.value(k);
    return QStringLiteral("Word %1 \"%2\": log p = %3 (p = %4). Click, or step with Left/Right.")
        .arg(k + 1)
        .arg(trace_->word(k))
        .arg(logp, 0, 'f', 3)
        .arg(std::exp(logp), 0, 'f', 3);
  }
  return {};
}

// The words of the traced caption, one row each (generated word k = token
// k + 1; EOS has no row). Shown as the clickable caption on the Attention
// page; the tooltip carries the word's log-probability.
#pragma once

#include <QAbstractListModel>

#include <memory>

#include "attention/attentiontrace.h"

class WordModel : public QAbstractListModel {
  Q_OBJECT
 public:
  using QAbstractListModel::QAbstractListModel;

  void setTrace(std::shared_ptr<const AttentionTrace> trace);
  int rowCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;

 private:
  std::shared_ptr<const AttentionTrace> trace_;
};

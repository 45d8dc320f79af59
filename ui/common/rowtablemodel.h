// A read-only table model over a vector of rows that is replaced as a whole
// (views reset): subclasses say what each column of a row shows.
#pragma once

#include <QAbstractTableModel>
#include <QStringList>

#include <utility>
#include <vector>

template <typename Row>
class RowTableModel : public QAbstractTableModel {
 public:
  RowTableModel(QStringList headers, QObject* parent) : QAbstractTableModel(parent), headers_(std::move(headers)) {}

  int rowCount(const QModelIndex& parent = {}) const override { return parent.isValid() ? 0 : int(rows_.size()); }
  int columnCount(const QModelIndex& parent = {}) const override { return parent.isValid() ? 0 : int(headers_.size()); }
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    return headers_.value(section);
  }

  void setRows(std::vector<Row> rows) {
    beginResetModel();
    rows_ = std::move(rows);
    endResetModel();
  }
  const std::vector<Row>& rows() const { return rows_; }

 protected:
  // Same rows in the same order with new values: no reset, so views keep their
  // selection and scroll position; the caller emits dataChanged.
  void replaceRowsInPlace(std::vector<Row> rows) { rows_ = std::move(rows); }
  const Row* rowAt(const QModelIndex& index) const {
    return index.isValid() && index.row() < int(rows_.size()) ? &rows_[size_t(index.row())] : nullptr;
  }

 private:
  QStringList headers_;
  std::vector<Row> rows_;
};

// Qt models of the Training page: the runs of a run store and the sample
// captions of the latest validation.
#pragma once

#include <QAbstractTableModel>

#include <vector>

#include "expnet/train/run_store.h"

class RunListModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { NameColumn, StatusColumn, StepsColumn, BestCiderColumn, UpdatedColumn, ColumnCount };
  using QAbstractTableModel::QAbstractTableModel;
  int rowCount(const QModelIndex& parent = {}) const override { return parent.isValid() ? 0 : int(runs_.size()); }
  int columnCount(const QModelIndex& parent = {}) const override { return parent.isValid() ? 0 : ColumnCount; }
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;
  void setRuns(std::vector<expnet::RunInfo> runs);
  const std::vector<expnet::RunInfo>& runs() const { return runs_; }
  int rowOf(const QString& name) const;

 private:
  std::vector<expnet::RunInfo> runs_;
};

class SampleModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { ImageColumn, CaptionColumn, ReferenceColumn, ColumnCount };
  using QAbstractTableModel::QAbstractTableModel;
  int rowCount(const QModelIndex& parent = {}) const override { return parent.isValid() ? 0 : int(samples_.size()); }
  int columnCount(const QModelIndex& parent = {}) const override { return parent.isValid() ? 0 : ColumnCount; }
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;
  void setSamples(std::vector<expnet::SampleCaption> samples);
  const std::vector<expnet::SampleCaption>& samples() const { return samples_; }

 private:
  std::vector<expnet::SampleCaption> samples_;
};

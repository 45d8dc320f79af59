// Qt models of the Training page: the runs of a run store and the sample
// captions of the latest validation.
#pragma once

#include "common/rowtablemodel.h"
#include "expnet/train/run_store.h"

class RunListModel : public RowTableModel<expnet::RunInfo> {
  Q_OBJECT
 public:
  enum Column { NameColumn, StatusColumn, StepsColumn, BestCiderColumn, UpdatedColumn };
  explicit RunListModel(QObject* parent = nullptr);
  QVariant data(const QModelIndex& index, int role) const override;
  int rowOf(const QString& name) const;
};

class SampleModel : public RowTableModel<expnet::SampleCaption> {
  Q_OBJECT
 public:
  enum Column { ImageColumn, CaptionColumn, ReferenceColumn };
  explicit SampleModel(QObject* parent = nullptr);
  QVariant data(const QModelIndex& index, int role) const override;
};

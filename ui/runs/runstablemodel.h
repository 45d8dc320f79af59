// The Runs page's table: one row per run (runslisting.h). Name, tags and notes
// are edited in place; the edit is handed to the page (editRequested), which
// writes it to the run's store off the UI thread and re-reads the listing.
#pragma once

#include <QColor>
#include <QHash>

#include "common/rowtablemodel.h"
#include "runs/runslisting.h"

class RunsTableModel : public RowTableModel<RunRow> {
  Q_OBJECT
 public:
  enum Column { Name, Status, Host, Recipe, Model, BestCider, BestAt, Steps, ImagesPerS, WallTime, Started, Tags, Notes, Folder, ColumnCount };
  static constexpr int SortRole = Qt::UserRole + 1;  // numbers sort as numbers
  static constexpr int KeyRole = Qt::UserRole + 2;

  explicit RunsTableModel(QObject* parent = nullptr);

  QVariant data(const QModelIndex& index, int role) const override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  bool setData(const QModelIndex& index, const QVariant& value, int role) override;

  // Keeps the view's selection: rows are replaced in place when the same runs
  // come back (the common case of a live refresh), reset otherwise.
  void updateRows(std::vector<RunRow> rows);
  int rowOfKey(const QString& key) const;
  const RunRow* row(int index) const { return index >= 0 && index < int(rows().size()) ? &rows()[size_t(index)] : nullptr; }

  // The curve colour of each selected run, shown as a swatch beside its name.
  void setColours(const QHash<QString, QColor>& colours);

  static QString formatDuration(double seconds);

 signals:
  void editRequested(const QString& key, int column, const QString& value);

 private:
  QHash<QString, QColor> colours_;
};

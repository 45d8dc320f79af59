#include "training/snapshottabs.h"

#include <QHeaderView>
#include <QJsonObject>
#include <QLabel>
#include <QTableView>
#include <QVBoxLayout>

#include "training/trainingmodels.h"

SamplesPanel::SamplesPanel(QWidget* parent) : QWidget(parent), samples_(new SampleModel(this)) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  title_ = new QLabel(QStringLiteral("No validation yet"));
  layout->addWidget(title_);
  view_ = new QTableView;
  view_->setObjectName(QStringLiteral("samples"));
  view_->setModel(samples_);
  view_->verticalHeader()->hide();
  view_->verticalHeader()->setDefaultSectionSize(22);
  view_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  view_->horizontalHeader()->setSectionResizeMode(SampleModel::ImageColumn, QHeaderView::ResizeToContents);
  view_->setWordWrap(false);
  layout->addWidget(view_, 1);
}

void SamplesPanel::show(const RunSnapshot& snapshot) {
  const auto& rows = samples_->rows();
  const auto& next = snapshot.samples;
  if (next.size() != rows.size() || (!next.empty() && (next.front().epoch != rows.front().epoch ||
                                                       next.front().stage != rows.front().stage)))
    samples_->setRows(next);
  if (next.empty()) {
    title_->setText(QStringLiteral("No validation yet: sample captions appear after the first epoch"));
    return;
  }
  const auto& first = next.front();
  const QString stage = snapshot.stageNames.value(int(first.stage), QString::number(first.stage));
  title_->setText(QStringLiteral("Latest validation: stage %1, epoch %2 (%3 of the validation images)")
                      .arg(stage)
                      .arg(first.epoch + 1)
                      .arg(next.size()));
}

void SamplesPanel::clear() { samples_->setRows({}); }

QJsonArray SamplesPanel::describe() const {
  QJsonArray samples;
  for (const auto& s : samples_->rows())
    samples << QJsonObject{{"image", QString::fromStdString(s.image)},
                           {"caption", QString::fromStdString(s.caption)},
                           {"reference", QString::fromStdString(s.reference)}};
  return samples;
}

StoreRunsPanel::StoreRunsPanel(QWidget* parent) : QWidget(parent), runs_(new RunListModel(this)) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  view_ = new QTableView;
  view_->setObjectName(QStringLiteral("runs"));
  view_->setModel(runs_);
  view_->setSelectionBehavior(QAbstractItemView::SelectRows);
  view_->setSelectionMode(QAbstractItemView::SingleSelection);
  view_->verticalHeader()->hide();
  view_->verticalHeader()->setDefaultSectionSize(22);
  view_->horizontalHeader()->setStretchLastSection(true);
  view_->setToolTip(QStringLiteral("Runs of the followed run store; click one to show it (finished or running)"));
  view_->setMinimumHeight(90);
  connect(view_, &QTableView::clicked, this, [this](const QModelIndex& index) {
    emit runClicked(QString::fromStdString(runs_->rows().at(size_t(index.row())).name));
  });
  layout->addWidget(view_, 1);
}

void StoreRunsPanel::show(const RunSnapshot& snapshot) {
  const auto& runs = snapshot.runs;
  bool changed = runs.size() != runs_->rows().size();
  for (size_t i = 0; !changed && i < runs.size(); ++i)
    changed = runs[i].id != runs_->rows()[i].id || runs[i].name != runs_->rows()[i].name ||
              runs[i].status != runs_->rows()[i].status || runs[i].steps != runs_->rows()[i].steps;
  if (!changed) return;
  runs_->setRows(runs);
  view_->resizeColumnsToContents();
  const int row = runs_->rowOf(QString::fromStdString(snapshot.run.name));
  if (row >= 0) view_->selectRow(row);
}

QJsonArray StoreRunsPanel::describe() const {
  QJsonArray runs;
  for (const auto& r : runs_->rows())
    runs << QJsonObject{{"name", QString::fromStdString(r.name)}, {"status", QString::fromStdString(r.status)}, {"steps", qint64(r.steps)}};
  return runs;
}

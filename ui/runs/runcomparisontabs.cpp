#include "runs/runcomparisontabs.h"

#include <QComboBox>
#include <QHeaderView>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QMap>
#include <QTableWidget>
#include <QVBoxLayout>

#include <set>
#include <string>
#include <vector>

#include "common/hintlabel.h"
#include "expnet/train/config_diff.h"

namespace {

QTableWidget* makeTable() {
  auto* table = new QTableWidget;
  table->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table->setSelectionBehavior(QAbstractItemView::SelectRows);
  table->setWordWrap(true);
  table->verticalHeader()->hide();
  table->horizontalHeader()->setStretchLastSection(true);
  table->setAlternatingRowColors(true);
  return table;
}

QTableWidgetItem* cell(const QString& text) {
  auto* item = new QTableWidgetItem(text);
  item->setToolTip(text);
  return item;
}

}  // namespace

ConfigDiffView::ConfigDiffView(QWidget* parent) : QWidget(parent), summary_(new HintLabel), table_(makeTable()) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addWidget(summary_);
  layout->addWidget(table_, 1);
  setRuns({});
}

void ConfigDiffView::setRuns(const QVector<RunColumn>& runs) {
  std::vector<std::string> configs;
  QStringList headers{QStringLiteral("Key")};
  for (const auto& run : runs) {
    const QJsonObject config = run.details ? run.details->config : QJsonObject();
    configs.push_back(QJsonDocument(config).toJson(QJsonDocument::Compact).toStdString());
    headers << run.label;
  }
  const auto differences = expnet::diff_configs(configs);
  table_->clear();
  table_->setColumnCount(headers.size());
  table_->setHorizontalHeaderLabels(headers);
  table_->setRowCount(int(differences.size()));
  for (int r = 0; r < int(differences.size()); ++r) {
    const auto& difference = differences[size_t(r)];
    table_->setItem(r, 0, cell(QString::fromStdString(difference.key)));
    for (int c = 0; c < int(difference.values.size()); ++c)
      table_->setItem(r, c + 1, cell(QString::fromStdString(difference.values[size_t(c)])));
  }
  table_->resizeColumnToContents(0);
  if (runs.size() < 2)
    summary_->setText(QStringLiteral("Select two or more runs (Ctrl+click) to see the configuration keys on which they differ."));
  else if (differences.empty())
    summary_->setText(QStringLiteral("The %1 selected runs have the same configuration.").arg(runs.size()));
  else
    summary_->setText(QStringLiteral("%1 configuration keys differ between the %2 selected runs (only those are listed).")
                          .arg(differences.size())
                          .arg(runs.size()));
}

QJsonArray ConfigDiffView::describe() const {
  QJsonArray out;
  for (int r = 0; r < table_->rowCount(); ++r) {
    QJsonArray values;
    for (int c = 1; c < table_->columnCount(); ++c) values.append(table_->item(r, c) ? table_->item(r, c)->text() : QString());
    out.append(QJsonObject{{QStringLiteral("key"), table_->item(r, 0)->text()}, {QStringLiteral("values"), values}});
  }
  return out;
}

SampleCaptionsView::SampleCaptionsView(QWidget* parent)
    : QWidget(parent), validation_(new QComboBox), summary_(new HintLabel), table_(makeTable()) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  auto* bar = new QHBoxLayout;
  bar->addWidget(new HintLabel(QStringLiteral("Validation:")));
  validation_->setToolTip(QStringLiteral("The validation whose sample captions are shown (stage and epoch)"));
  validation_->setMinimumContentsLength(18);
  bar->addWidget(validation_);
  bar->addWidget(summary_, 1);
  layout->addLayout(bar);
  layout->addWidget(table_, 1);
  connect(validation_, &QComboBox::currentIndexChanged, this, [this] { fill(); });
  setRuns({});
}

void SampleCaptionsView::setRuns(const QVector<RunColumn>& runs) {
  runs_ = runs;
  const QString previous = validation_->currentText();
  std::set<std::pair<qint64, qint64>> keys;
  for (const auto& run : runs)
    if (run.details)
      for (const auto& sample : run.details->samples) keys.insert({sample.stage, sample.epoch});
  QSignalBlocker block(validation_);
  validation_->clear();
  keys_.clear();
  for (const auto& [stage, epoch] : keys) {
    validation_->addItem(QStringLiteral("stage %1 · epoch %2").arg(stage + 1).arg(epoch + 1));
    keys_.append({stage, epoch});
  }
  // Stay on the validation shown, else the newest (what a live run just logged).
  const int kept = validation_->findText(previous);
  validation_->setCurrentIndex(kept >= 0 ? kept : validation_->count() - 1);
  fill();
}

QStringList SampleCaptionsView::validations() const {
  QStringList out;
  for (int i = 0; i < validation_->count(); ++i) out << validation_->itemText(i);
  return out;
}

void SampleCaptionsView::showValidation(int index) { validation_->setCurrentIndex(index); }

void SampleCaptionsView::fill() {
  QStringList headers{QStringLiteral("Image"), QStringLiteral("Reference")};
  for (const auto& run : runs_) headers << run.label;
  table_->clear();
  table_->setColumnCount(headers.size());
  table_->setHorizontalHeaderLabels(headers);
  const int current = validation_->currentIndex();
  if (current < 0 || current >= keys_.size()) {
    table_->setRowCount(0);
    summary_->setText(runs_.isEmpty() ? QStringLiteral("Select runs to see the captions they wrote at each validation.")
                                      : QStringLiteral("The selected runs have logged no sample captions yet."));
    return;
  }
  const auto [stage, epoch] = keys_[current];
  // Rows by image, in the order the first run that has them logged them.
  QStringList images;
  QMap<QString, QString> references;
  QVector<QMap<QString, QString>> captions(runs_.size());
  for (int r = 0; r < runs_.size(); ++r) {
    if (!runs_[r].details) continue;
    for (const auto& sample : runs_[r].details->samples) {
      if (sample.stage != stage || sample.epoch != epoch) continue;
      const QString image = QString::fromStdString(sample.image);
      if (!references.contains(image)) {
        images << image;
        references.insert(image, QString::fromStdString(sample.reference));
      }
      captions[r].insert(image, QString::fromStdString(sample.caption));
    }
  }
  table_->setRowCount(images.size());
  for (int i = 0; i < images.size(); ++i) {
    table_->setItem(i, 0, cell(images[i].section(QLatin1Char('/'), -1)));
    table_->item(i, 0)->setToolTip(images[i]);
    table_->setItem(i, 1, cell(references.value(images[i])));
    for (int r = 0; r < runs_.size(); ++r)
      table_->setItem(i, r + 2, cell(captions[r].value(images[i], QStringLiteral("—"))));
  }
  table_->resizeColumnToContents(0);
  summary_->setText(QStringLiteral("%1 images captioned at this validation.").arg(images.size()));
}

QJsonObject SampleCaptionsView::describe() const {
  QJsonArray rows;
  for (int i = 0; i < table_->rowCount(); ++i) {
    QJsonArray captions;
    for (int c = 2; c < table_->columnCount(); ++c) captions.append(table_->item(i, c)->text());
    rows.append(QJsonObject{{QStringLiteral("image"), table_->item(i, 0)->text()},
                            {QStringLiteral("reference"), table_->item(i, 1)->text()},
                            {QStringLiteral("captions"), captions}});
  }
  return {{QStringLiteral("validation"), validation_->currentText()}, {QStringLiteral("rows"), rows}};
}

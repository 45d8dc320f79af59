#include "datasets/datasetstats.h"

#include <QGridLayout>
#include <QHBoxLayout>
#include <QJsonArray>
#include <QLabel>
#include <QSpinBox>
#include <QVBoxLayout>
#include <qcustomplot.h>

#include "common/formfields.h"
#include "common/hintlabel.h"
#include "common/theme.h"

namespace {
const QStringList kSplits = {QStringLiteral("train"), QStringLiteral("restval"), QStringLiteral("val"),
                             QStringLiteral("test")};

QJsonObject countsJson(const std::map<std::string, size_t>& counts) {
  QJsonObject out;
  for (const auto& [key, value] : counts) out.insert(QString::fromStdString(key), static_cast<qint64>(value));
  return out;
}

// What the page shows and describes: {images, captions, images_per_split, captions_per_split,
// length_histogram: {tokens: captions}, top_words: [[word, count]], vocabulary_by_min_count:
// {min_count: size}, mean_caption_length, training_coverage, eval_coverage}.
QJsonObject statsJson(const expnet::DatasetStats& stats) {
  QJsonObject histogram, byMinCount;
  for (const auto& [length, count] : stats.caption_length_histogram)
    histogram.insert(QString::number(length), static_cast<qint64>(count));
  QJsonArray top;
  for (const auto& [word, count] : stats.top_words) top.append(QJsonArray{QString::fromStdString(word), static_cast<qint64>(count)});
  for (const auto& [m, size] : stats.vocabulary_size_by_min_count) byMinCount.insert(QString::number(m), static_cast<qint64>(size));
  return {{"images", static_cast<qint64>(stats.images)},
          {"captions", static_cast<qint64>(stats.captions)},
          {"images_per_split", countsJson(stats.images_per_split)},
          {"captions_per_split", countsJson(stats.captions_per_split)},
          {"length_histogram", histogram},
          {"mean_caption_length", stats.mean_caption_length},
          {"top_words", top},
          {"vocabulary_by_min_count", byMinCount},
          {"training_coverage", stats.training_coverage},
          {"eval_coverage", stats.eval_coverage}};
}

QCPBars* bars(QCustomPlot* plot, QCPAxis* keys, QCPAxis* values, const QColor& colour, const QString& name) {
  auto* b = new QCPBars(keys, values);
  b->setName(name);
  b->setPen(QPen(colour));
  b->setBrush(colour);
  return b;
}
}  // namespace

DatasetStats::DatasetStats() {
  summary_ = new HintLabel;
  summary_->setObjectName(QStringLiteral("statsSummary"));
  minCount_ = integerField(QStringLiteral("statsMinCount"), 1, 20, 5, QString(),
                           QStringLiteral("Vocabulary: words seen at least this often in train + restval captions"));
  vocabulary_ = new QLabel;
  vocabulary_->setObjectName(QStringLiteral("statsVocabulary"));
  auto* bar = new QHBoxLayout;
  bar->addWidget(summary_, 1);
  bar->addWidget(new HintLabel(QStringLiteral("Min count:")));
  bar->addWidget(minCount_);
  bar->addWidget(vocabulary_);
  splits_ = makePlot(QStringLiteral("Images and captions per split"));
  lengths_ = makePlot(QStringLiteral("Caption length (words)"));
  words_ = makePlot(QStringLiteral("Most frequent training words"));
  auto* grid = new QGridLayout;
  grid->addWidget(splits_, 0, 0);
  grid->addWidget(lengths_, 1, 0);
  grid->addWidget(words_, 0, 1, 2, 1);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(bar);
  layout->addLayout(grid, 1);
  connect(minCount_, &QSpinBox::valueChanged, this, &DatasetStats::showVocabulary);
}

QCustomPlot* DatasetStats::makePlot(const QString& title) {
  auto* plot = new QCustomPlot;
  plot->setMinimumSize(240, 160);
  plot->plotLayout()->insertRow(0);
  plot->plotLayout()->addElement(0, 0, new QCPTextElement(plot, title, QFont(font().family(), 10, QFont::Bold)));
  Theme::current().applyTo(plot);
  return plot;
}

void DatasetStats::showMessage(const QString& message) { summary_->setText(message); }

void DatasetStats::setStats(const expnet::DatasetStats& engineStats) {
  stats_ = statsJson(engineStats);
  const QJsonObject& stats = stats_;
  const Theme theme = Theme::current();
  for (auto* plot : {splits_, lengths_, words_}) plot->clearPlottables();
  summary_->setText(QStringLiteral("%1 images · %2 captions · %3 words per caption on average")
                        .arg(stats["images"].toInteger())
                        .arg(stats["captions"].toInteger())
                        .arg(stats["mean_caption_length"].toDouble(), 0, 'f', 1));

  // Per split: images and captions side by side (captions on the right axis: 5x more).
  auto splitTicks = QSharedPointer<QCPAxisTickerText>::create();
  auto* images = bars(splits_, splits_->xAxis, splits_->yAxis, theme.series(Theme::Series::LossSmoothed), QStringLiteral("images"));
  auto* captions = bars(splits_, splits_->xAxis, splits_->yAxis2, theme.series(Theme::Series::CiderD), QStringLiteral("captions (right axis)"));
  images->setWidth(0.35);
  captions->setWidth(0.35);
  double maxImages = 0, maxCaptions = 0;
  for (int i = 0; i < kSplits.size(); ++i) {
    const double n = stats["images_per_split"].toObject()[kSplits[i]].toDouble();
    const double c = stats["captions_per_split"].toObject()[kSplits[i]].toDouble();
    images->addData(i + 0.8, n);
    captions->addData(i + 1.2, c);
    splitTicks->addTick(i + 1, kSplits[i]);
    maxImages = std::max(maxImages, n);
    maxCaptions = std::max(maxCaptions, c);
  }
  splits_->xAxis->setTicker(splitTicks);
  splits_->xAxis->setRange(0.4, kSplits.size() + 0.6);
  splits_->yAxis->setRange(0, maxImages * 1.15 + 1);
  splits_->yAxis2->setVisible(true);
  splits_->yAxis2->setRange(0, maxCaptions * 1.15 + 1);
  splits_->yAxis->setLabel(QStringLiteral("images"));
  splits_->yAxis2->setLabel(QStringLiteral("captions"));
  theme.applyTo(splits_);
  splits_->legend->setVisible(true);

  auto* histogram = bars(lengths_, lengths_->xAxis, lengths_->yAxis, theme.series(Theme::Series::LossSmoothed), QString());
  histogram->setWidth(0.8);
  double maxLength = 0, maxCount = 0;
  const QJsonObject lengths = stats["length_histogram"].toObject();
  for (auto it = lengths.begin(); it != lengths.end(); ++it) {
    histogram->addData(it.key().toDouble(), it.value().toDouble());
    maxLength = std::max(maxLength, it.key().toDouble());
    maxCount = std::max(maxCount, it.value().toDouble());
  }
  lengths_->xAxis->setRange(0, maxLength + 1);
  lengths_->yAxis->setRange(0, maxCount * 1.15 + 1);
  lengths_->xAxis->setLabel(QStringLiteral("words"));
  lengths_->yAxis->setLabel(QStringLiteral("captions"));

  // Words top to bottom, most frequent first.
  const QJsonArray top = stats["top_words"].toArray();
  auto wordTicks = QSharedPointer<QCPAxisTickerText>::create();
  auto* counts = bars(words_, words_->yAxis, words_->xAxis, theme.series(Theme::Series::Bleu4), QString());
  counts->setWidth(0.7);
  double maxWord = 0;
  for (int i = 0; i < top.size(); ++i) {
    const QJsonArray entry = top[i].toArray();
    const double position = top.size() - i;
    counts->addData(position, entry[1].toDouble());
    wordTicks->addTick(position, entry[0].toString());
    maxWord = std::max(maxWord, entry[1].toDouble());
  }
  words_->yAxis->setTicker(wordTicks);
  words_->yAxis->setRange(0.3, top.size() + 0.7);
  words_->xAxis->setRange(0, maxWord * 1.1 + 1);
  words_->xAxis->setLabel(QStringLiteral("occurrences in train + restval"));
  for (auto* plot : {splits_, lengths_, words_}) plot->replot();
  showVocabulary();
}

void DatasetStats::showVocabulary() {
  const QJsonValue size = stats_["vocabulary_by_min_count"].toObject()[QString::number(minCount_->value())];
  vocabulary_->setText(size.isUndefined() ? QString()
                                          : QStringLiteral("vocabulary: %1 words").arg(size.toInteger()));
}

QJsonObject DatasetStats::describe() const {
  QJsonObject out = stats_;
  out.insert(QStringLiteral("min_count"), minCount_->value());
  out.insert(QStringLiteral("vocabulary_size"),
             stats_["vocabulary_by_min_count"].toObject()[QString::number(minCount_->value())]);
  return out;
}

#include "datasets/indexworker.h"

#include <QElapsedTimer>

#include "common/csvtext.h"
#include "expnet/system/atomic_file.h"

IndexWorker::~IndexWorker() = default;

void IndexWorker::open(const QString& dataset) {
  index_.reset();
  QElapsedTimer clock;
  clock.start();
  try {
    expnet::IndexBuildControl control;
    control.progress = [this](int64_t done, int64_t total) { emit buildProgress(done, total); };
    control.cancelled = [this] { return cancelled_.load(); };
    bool built = false;
    const std::string path = expnet::ensure_dataset_index(dataset.toStdString(), control, &built);
    index_ = std::make_unique<expnet::DatasetIndex>(path);
    emit opened({dataset, QString::fromStdString(path), QString::fromStdString(index_->meta("format")), built,
                 clock.elapsed() / 1000.0, index_->split_counts()});
  } catch (const expnet::IndexBuildCancelled&) {
    emit openCancelled(dataset);
  } catch (const std::exception& e) {
    emit openFailed(dataset, QString::fromStdString(e.what()));
  }
}

expnet::IndexQuery toIndexQuery(const GridQuery& query, int page, int pageSize, bool countTotal) {
  expnet::IndexQuery q;
  q.split = query.split.toStdString();
  q.text = query.text.toStdString();
  q.page = page + 1;
  q.page_size = pageSize;
  q.count_total = countTotal;
  q.sort = query.sort;
  q.evaluation_db = query.evaluationDb.toStdString();
  q.evaluation_id = query.evaluationId;
  return q;
}

void IndexWorker::fetch(int generation, const GridQuery& query, int page, int pageSize, bool countTotal) {
  if (!index_) return;
  try {
    const expnet::IndexPage result = index_->query(toIndexQuery(query, page, pageSize, countTotal));
    QVector<GridItem> items;
    items.reserve(static_cast<int>(result.images.size()));
    for (const auto& image : result.images) {
      GridItem item;
      item.cocoid = image.cocoid;
      item.file = QString::fromStdString(index_->image_path(image));
      item.name = QString::fromStdString(image.filename);
      item.split = QString::fromStdString(image.split);
      item.width = image.width;
      item.height = image.height;
      for (const auto& c : image.captions) item.references << QString::fromStdString(c);
      item.evaluated = image.evaluated;
      item.caption = QString::fromStdString(image.model_caption);
      item.ciderD = image.cider_d;
      item.bleu4 = image.bleu4;
      items << item;
    }
    emit pageReady(generation, page, items, result.total);
  } catch (const std::exception& e) {
    emit fetchFailed(generation, QString::fromStdString(e.what()));
  }
}


void IndexWorker::exportCsv(const GridQuery& query, const QString& file) {
  if (!index_) return emit exported(file, 0, QStringLiteral("no dataset is open"));
  try {
    QString out = QStringLiteral("cocoid,file,split,caption,CIDEr-D,Bleu_4\n");
    qint64 rows = 0;
    constexpr int kChunk = 2000;
    for (int page = 0;; ++page) {
      const auto result = index_->query(toIndexQuery(query, page, kChunk, false));
      for (const auto& image : result.images) {
        out += QStringList{QString::number(image.cocoid), csvField(QString::fromStdString(index_->image_path(image))),
                           QString::fromStdString(image.split), csvField(QString::fromStdString(image.model_caption)),
                           image.evaluated ? QString::number(image.cider_d, 'g', 8) : QString(),
                           image.evaluated ? QString::number(image.bleu4, 'g', 8) : QString()}
                   .join(QLatin1Char(','));
        out += QLatin1Char('\n');
        ++rows;
      }
      if (result.images.size() < static_cast<size_t>(kChunk)) break;
    }
    expnet::write_file_atomic(file.toStdString(), out.toStdString());
    emit exported(file, rows, QString());
  } catch (const std::exception& e) {
    emit exported(file, 0, QString::fromStdString(e.what()));
  }
}

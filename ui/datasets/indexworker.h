// The Datasets page's index work, off the UI thread: opening a dataset (its
// cached SQLite index built first when missing or stale, with progress and
// Cancel) and answering the grid's page queries. Lives in its own QThread; the
// page calls it through queued functors and hears back through queued signals.
#pragma once

#include <QObject>
#include <QString>
#include <QVector>

#include <atomic>
#include <memory>
#include <utility>
#include <vector>

#include "expnet/data/dataset_index.h"

// What the grid shows of one image.
struct GridItem {
  qint64 cocoid = 0;
  QString file;       // ROOT/filepath/filename
  QString name;       // filename
  QString split;
  int width = 0, height = 0;
  QStringList references;  // raw, in file order
  bool evaluated = false;
  QString caption;    // the evaluation's, when evaluated
  double ciderD = 0, bleu4 = 0;
};

// The grid's filter and order (an IndexQuery without the page).
struct GridQuery {
  QString split;  // "" = all
  QString text;
  expnet::IndexSort sort = expnet::IndexSort::id;
  QString evaluationDb;
  qint64 evaluationId = 0;
};

expnet::IndexQuery toIndexQuery(const GridQuery& query, int page, int pageSize, bool countTotal);

// A dataset's index, opened: what the page shows of it.
struct OpenedIndex {
  QString dataset, indexPath;
  QString format;       // the dataset's format (karpathy, coco, csv, jsonl)
  bool built = false;   // indexed now, not found in the cache
  double seconds = 0;   // to open (and build) it
  std::vector<std::pair<std::string, int64_t>> splits;  // images per split
};

class IndexWorker : public QObject {
  Q_OBJECT
 public:
  ~IndexWorker() override;
  // Thread-safe: stops an index build at its next check.
  void cancelBuild() { cancelled_ = true; }
  void armBuild() { cancelled_ = false; }

  // Run in the worker's thread.
  void open(const QString& dataset);
  // Page `page` (0-based, `pageSize` items) of the images matching `query`;
  // `generation` is echoed so the page can drop answers to older queries.
  void fetch(int generation, const GridQuery& query, int page, int pageSize, bool countTotal);
  // Every image matching `query`, in its order, as CSV (written atomically):
  // cocoid,file,split,caption,CIDEr-D,Bleu_4.
  void exportCsv(const GridQuery& query, const QString& file);

 signals:
  void buildProgress(qint64 done, qint64 total);
  void opened(const OpenedIndex& index);
  void openFailed(const QString& dataset, const QString& error);
  void openCancelled(const QString& dataset);
  void pageReady(int generation, int page, const QVector<GridItem>& items, qint64 total);
  void fetchFailed(int generation, const QString& error);
  void exported(const QString& file, qint64 rows, const QString& error);

 private:
  std::unique_ptr<expnet::DatasetIndex> index_;
  std::atomic<bool> cancelled_{false};
};

Q_DECLARE_METATYPE(GridItem)
Q_DECLARE_METATYPE(OpenedIndex)

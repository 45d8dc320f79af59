// The Datasets page: open a captioning dataset (its SQLite index built in the
// background when missing or stale), browse it in a virtualised thumbnail grid
// (split filter, full-text search, sort, zoom), see one image in detail, its
// statistics, and per-sample evaluations of a model sorted worst first. The
// index work runs in an IndexWorker, thumbnails in a ThumbnailLoader, the
// statistics and evaluations in an AnalysisWorker, each on its own thread.
#pragma once

#include <QJsonArray>
#include <QJsonObject>
#include <QThread>
#include <QTimer>

#include "datasets/indexworker.h"
#include "shell/studiopage.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSlider;
class QStackedWidget;
class QTabWidget;
class AnalysisWorker;
class DatasetStats;
class EvaluationPanel;
class HintLabel;
class ImageDetail;
class ImageGridModel;
class StudioContext;
class ThumbnailGrid;
class ThumbnailLoader;

class DatasetsPage : public StudioPage {
  Q_OBJECT
 public:
  explicit DatasetsPage(StudioContext* context, QWidget* parent = nullptr);
  // Stops the workers' threads (an index build or evaluation is cancelled first).
  ~DatasetsPage() override;
  QJsonObject describe() const override;
  bool isBusy() const override;
  QString pageId() const override { return QStringLiteral("datasets"); }
  QString title() const override { return QStringLiteral("Datasets"); }
  // The last dataset (opened again when the page is first shown), split, sort and zoom.
  void restoreSettings() override;
  void saveSettings() const override;

  ImageGridModel* grid() const { return model_; }
  // The rows on screen and their thumbnails (or their errors) have come.
  bool gridFilled() const;
  QString indexPath() const { return dataset_.indexPath; }
  QString evaluationDb() const;

 public slots:
  // A dataset file or folder: its index is opened, or built first.
  void openDataset(const QString& path);
  void openDatasetDialog();
  void cancelIndexing();
  void setSplit(const QString& split);  // "" or "all" = every split
  void setSearch(const QString& words);
  void setSort(expnet::IndexSort sort);
  // Runs a per-sample evaluation of `model` (built-in name or checkpoint) on `split`.
  void evaluate(const QString& model, const QString& split, int limit);
  void exportEvaluationCsv(const QString& file);

 signals:
  void attentionRequested(const QString& file);
  void datasetOpened();

 protected:
  void showEvent(QShowEvent* event) override;  // opens the remembered dataset, once
  // A dataset file or folder dropped anywhere on the page opens it.
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;

 private:
  void runQuery();
  QWidget* buildTopBar();
  QWidget* buildBrowse();
  void wireIndexing();
  void wireStatistics();
  void wireEvaluation();
  void wireEvaluationPanel();
  void wireDetail();
  void onOpened(const OpenedIndex& opened);
  void onPage(int generation, int page, const QVector<GridItem>& items, qint64 total);
  void showSelected();
  void updateCaptionButton();  // enabled with the Caption page's model, else says to load one
  void startEvaluation();
  void updateState();
  GridQuery query() const;
  void requestEvaluations();  // the store's list, for the evaluation panel
  void showEvaluated(qint64 id);

  StudioContext* context_;
  QThread indexThread_, thumbThread_, analysisThread_;
  IndexWorker* indexWorker_;
  ThumbnailLoader* thumbnails_;
  AnalysisWorker* analysis_;
  ImageGridModel* model_;

  // The dataset opened, or being opened, and what its index said.
  struct Dataset {
    QString path;       // absolute; empty before the first open
    QString indexPath;  // empty until the index is open
    QString error;      // why opening it, or the last query, failed
    bool opening = false;
    qint64 indexDone = 0, indexTotal = 0;  // images indexed so far (total 0: not known yet)
    bool built = false;                    // indexed now, not found in the cache
    double openSeconds = 0;
    QString format;          // the dataset's format, from its index
    QJsonArray splitCounts;  // [{name, images}], as describe() gives them
  } dataset_;
  // Answers asked for and not yet come: the page is busy while any is.
  struct Pending {
    bool stats = false;
    bool firstPage = false;   // the current query's count
    bool evaluation = false;  // asked for before the dataset was open: runs once it is
    int lists = 0;            // evaluation lists
  } pending_;
  int generation_ = 0;  // of the grid's query: pages of an older one are dropped
  QString remembered_;  // the dataset of the last session, opened at the first show
  QString search_, split_;
  expnet::IndexSort sort_ = expnet::IndexSort::id;
  QHash<qint64, GridItem> compared_;  // the compared evaluation's items, by cocoid
  QTimer searchDebounce_;

  QLineEdit* path_;
  QComboBox* splitBox_;
  QLineEdit* searchBox_;
  QComboBox* sortBox_;
  QSlider* zoom_;
  QLabel* count_;
  QProgressBar* indexProgress_;
  QPushButton* cancelIndex_;
  HintLabel* status_;
  QTabWidget* tabs_;
  QStackedWidget* centre_;
  HintLabel* hint_;
  ThumbnailGrid* view_;
  ImageDetail* detail_;
  EvaluationPanel* evaluation_;
  DatasetStats* stats_;
};

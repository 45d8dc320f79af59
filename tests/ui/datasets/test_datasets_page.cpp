// The Datasets page as a user drives it: open a shapes set (its index built in
// the background, in a private cache), page through the grid, search captions,
// evaluate the demo model per sample and sort worst first (scores equal to
// `expnet score` on the same captions), cancel and resume an evaluation, a
// broken dataset file and a missing image, and the screenshot.
#include <QStandardItemModel>
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTableView>
#include <QPushButton>
#include <QScrollBar>
#include <QSettings>
#include <QComboBox>
#include <QSpinBox>
#include <QTabWidget>
#include <QTextBrowser>
#include <QTemporaryDir>
#include <QtTest>

#include "datasets/datasetspage.h"
#include "datasets/evaluationpanel.h"
#include "expnet/decode/captioner.h"
#include "datasets/imagegridmodel.h"
#include "datasets/thumbnaildelegate.h"
#include "shell/studiocontext.h"
#include "expnet/metadata/alt_text.h"
#include "support/fixtures.h"
#include "support/page_driving.h"
#include "support/studio_screenshot.h"
#include "support/tiny_reference.h"

namespace {
bool waitIdle(const DatasetsPage& page) {
  return expnet_test::waitUntil([&] { return !page.isBusy(); });
}

// The CSV rows (cocoid -> caption, CIDEr-D) an export wrote.
QMap<QString, QStringList> readExport(const QString& file) {
  QMap<QString, QStringList> rows;
  QFile f(file);
  if (!f.open(QIODevice::ReadOnly)) return rows;
  const QStringList lines = QString::fromUtf8(f.readAll()).split('\n', Qt::SkipEmptyParts);
  for (int i = 1; i < lines.size(); ++i) {
    const QStringList fields = lines[i].split(',');  // shapes captions and paths have no commas
    rows.insert(fields.value(0), fields);
  }
  return rows;
}
// initStyleOption, which the view calls, made callable.
class TileProbe : public ThumbnailDelegate {
 public:
  using ThumbnailDelegate::initStyleOption;
};

}  // namespace

class TestDatasetsPage : public QObject {
  Q_OBJECT
 private:
  QString dir_, shapes_;
  expnet_test::ProcessResult cli(const QStringList& args) const { return expnet_test::runProcess(expnet_test::cliPath(), args); }

  // Shows `page` at a fixed size and opens the shapes set in it.
  bool openShapes(DatasetsPage& page) const {
    page.resize(1200, 800);
    page.show();
    page.openDataset(shapes_);
    return waitIdle(page);
  }

 private slots:
  // A tile's "name · score" too long for its cell keeps the score and the name's end (what
  // tells shapes_000038.png from shapes_000056.png), not the shared start.
  void tileNamesKeepTheirEndAndScore() {
    QStandardItemModel model;
    model.appendRow(new QStandardItem(QStringLiteral("shapes_000038.png · 1.40")));
    model.appendRow(new QStandardItem(QStringLiteral("a.png · 0.25")));
    TileProbe probe;
    QStyleOptionViewItem option;
    option.fontMetrics = QFontMetrics(QFont(QStringLiteral("DejaVu Sans"), 9));
    const int fullWidth = option.fontMetrics.horizontalAdvance(QStringLiteral("shapes_000038.png · 1.40"));
    option.rect = QRect(0, 0, fullWidth - 20, 138);  // too narrow by a little, whatever the font
    probe.initStyleOption(&option, model.index(0, 0));
    QVERIFY2(option.text.startsWith(QStringLiteral("…")) && option.text.endsWith(QStringLiteral("000038 · 1.40")),
             qPrintable(option.text));
    probe.initStyleOption(&option, model.index(1, 0));
    QCOMPARE(option.text, QStringLiteral("a.png · 0.25"));  // fits: as it is
  }

  void initTestCase() {
    dir_ = expnet_test::makeTempDir("datasets_page");
    qputenv("XDG_CACHE_HOME", (dir_ + "/cache").toUtf8());  // the indexes and stores of this test only
    shapes_ = dir_ + "/shapes";
    const auto r = cli({"dataset", "make-shapes", "--out", shapes_, "--images", "240", "--seed", "515"});
    QVERIFY2(r.exitCode == 0, r.err.constData());
  }

  // Opening builds the index once; the grid counts every image, pages through
  // them on demand, filters by split and by caption words.
  void openPageAndSearch() {
    StudioContext context;
    DatasetsPage page(&context);
    QVERIFY(openShapes(page));
    QJsonObject d = page.describe();
    QVERIFY2(d["error"].toString().isEmpty(), qPrintable(d["error"].toString()));
    QCOMPARE(d["built"].toBool(), true);
    QCOMPARE(d["total"].toInteger(), 240);
    QVERIFY(!d["items"].toArray().isEmpty());
    QVERIFY(QFileInfo(page.indexPath()).absoluteFilePath().startsWith(dir_ + "/cache/expnet/"));
    // Only the pages looked at are fetched: the last row comes after scrolling there.
    auto* view = page.findChild<QTableView*>("imageGrid");
    QVERIFY(page.grid()->item(239) == nullptr);
    view->scrollToBottom();
    QVERIFY(expnet_test::waitUntil([&] { return page.grid()->item(239) != nullptr; }, 10000));
    // Split filter and search equal the index's own query (expnet dataset query).
    page.setSplit("val");
    QVERIFY(waitIdle(page));
    const auto val = cli({"dataset", "query", "--db", page.indexPath(), "--split", "val", "--page-size", "1000", "--json"});
    QCOMPARE(page.describe()["total"].toInteger(), qint64(val.out.trimmed().split('\n').size()));
    page.setSplit("all");
    page.setSearch("red circle");
    QVERIFY(waitIdle(page));
    const auto red = cli({"dataset", "query", "--db", page.indexPath(), "--text", "red circle", "--page-size", "1000", "--json"});
    const qint64 expected = red.out.trimmed().isEmpty() ? 0 : red.out.trimmed().split('\n').size();
    QVERIFY(expected > 0);
    QCOMPARE(page.describe()["total"].toInteger(), expected);
    for (const auto& item : page.describe()["items"].toArray()) QVERIFY(item.toObject()["cocoid"].toInteger() > 0);
    // Statistics: the numbers of `expnet dataset stats`.
    page.findChild<QTabWidget*>("datasetTabs")->setCurrentIndex(1);
    QVERIFY(waitIdle(page));
    const auto stats = cli({"dataset", "stats", "--dataset", shapes_, "--json"});
    const QJsonObject expectedStats = QJsonDocument::fromJson(stats.out.trimmed()).object();
    const QJsonObject shownStats = page.describe()["statistics"].toObject();
    QCOMPARE(shownStats["images"].toInteger(), expectedStats["images"].toInteger());
    QCOMPARE(shownStats["captions"].toInteger(), expectedStats["captions"].toInteger());
    QCOMPARE(shownStats["images_per_split"].toObject(), expectedStats["images_per_split"].toObject());
    QCOMPARE(shownStats["vocabulary_size"].toInteger(), expectedStats["vocabulary_size"].toInteger());
    QVERIFY(page.grab().save(dir_ + "/statistics.png"));
    page.findChild<QTabWidget*>("datasetTabs")->setCurrentIndex(0);
    // Reopened: the cached index is used as it is.
    DatasetsPage again(&context);
    QVERIFY(openShapes(again));
    QCOMPARE(again.describe()["built"].toBool(), false);
  }

  // A folder of photos whose alt text a person wrote opens as a dataset: every image in
  // the grid, its text found by search; a caption saved since rebuilds the index.
  void aFolderOfCaptionedPhotosIsBrowsed() {
    const QString photos = dir_ + "/photos";
    QDir().mkpath(photos + "/trip");
    for (const char* name : {"shapes_000001.png", "shapes_000002.png", "shapes_000003.png"})
      QVERIFY(
          QFile::copy(shapes_ + "/images/" + name, photos + (QString(name).endsWith("3.png") ? "/trip/" : "/") + name));
    expnet::AltTextOptions options;
    options.model_name = "demo";
    // As the Caption page saves an edited caption: the person's text, the model's words recorded beside it.
    const auto saved = expnet::write_alt_text((photos + "/shapes_000001.png").toStdString(),
                                              "a hand written caption of two shapes", options, "a red circle");
    QCOMPARE(QString::fromStdString(saved.action), QString("written"));
    StudioContext context;
    DatasetsPage page(&context);
    page.resize(1200, 800);
    page.show();
    page.openDataset(photos);
    QVERIFY(waitIdle(page));
    QJsonObject d = page.describe();
    QVERIFY2(d["error"].toString().isEmpty(), qPrintable(d["error"].toString()));
    QCOMPARE(d["total"].toInteger(), 3);
    page.setSearch("hand written");
    QVERIFY(waitIdle(page));
    QCOMPARE(page.describe()["total"].toInteger(), 1);
    const auto again = expnet::write_alt_text((photos + "/trip/shapes_000003.png").toStdString(),
                                              "another hand written caption", options, "a blue square");
    QCOMPARE(QString::fromStdString(again.action), QString("written"));
    DatasetsPage reopened(&context);
    reopened.resize(1200, 800);
    reopened.show();
    reopened.openDataset(photos);
    QVERIFY(waitIdle(reopened));
    QCOMPARE(reopened.describe()["built"].toBool(), true);  // the folder changed: a new index
    reopened.setSearch("hand written");
    QVERIFY(waitIdle(reopened));
    QCOMPARE(reopened.describe()["total"].toInteger(), 2);
  }

  // A per-sample evaluation: sorted worst first, and its per-image scores are
  // A PNAIC model decodes greedily: the evaluation's beam is 1 and disabled, saying why.
  void aPnaicModelEvaluatesGreedily() {
    StudioContext context;
    DatasetsPage page(&context);
    auto* model = page.findChild<QComboBox*>("evalModel");
    auto* beam = page.findChild<QSpinBox*>("evalBeam");
    QVERIFY(model && beam && beam->isEnabled());
    model->setCurrentText("pnaic-demo-k5");
    QVERIFY(!beam->isEnabled());
    QCOMPARE(beam->value(), 1);
    QVERIFY(beam->toolTip().contains("PNAIC"));
    model->setCurrentText("demo");
    QVERIFY(beam->isEnabled());
  }

  // `expnet score`'s on the same captions; cancelled, it resumes.
  void evaluationSortsWorstFirstAndResumes() {
    StudioContext context;
    DatasetsPage page(&context);
    QVERIFY(openShapes(page));
    page.evaluate("demo", "all", 0);
    // Cancel after a few images, then run it again: the captioned ones are kept.
    QVERIFY(expnet_test::waitUntil([&] {
      const QString state = page.describe()["evaluation"].toObject()["state"].toString();
      return state.contains(" / ") && state.section(' ', 0, 0).toInt() >= 3;
    }, 60000));
    page.findChild<QPushButton*>("evalCancel")->click();
    QVERIFY(waitIdle(page));
    QVERIFY(page.describe()["evaluation"].toObject()["state"].toString().startsWith("Cancelled"));
    page.evaluate("demo", "all", 0);
    QVERIFY(waitIdle(page));
    const QString state = page.describe()["evaluation"].toObject()["state"].toString();
    QVERIFY2(state.contains("resumed") && !state.contains("(0 resumed)"), qPrintable(state));
    const QJsonObject d = page.describe();
    QCOMPARE(d["sort"].toString(), QString("score: worst first"));
    const QJsonArray items = d["items"].toArray();
    QVERIFY(items.size() > 3);
    for (int i = 1; i < items.size(); ++i)
      QVERIFY(items[i - 1].toObject()["CIDEr-D"].toDouble() <= items[i].toObject()["CIDEr-D"].toDouble());
    // Export the sorted list; score its captions with `expnet score` and compare per image.
    const QString csv = dir_ + "/evaluation.csv";
    page.exportEvaluationCsv(csv);
    QVERIFY(expnet_test::waitUntil([&] { return QFile::exists(csv); }, 10000));
    const auto rows = readExport(csv);
    QCOMPARE(rows.size(), 240);
    QJsonObject references, candidates;
    QFile dataset(shapes_ + "/dataset_coco.json");
    QVERIFY(dataset.open(QIODevice::ReadOnly));
    for (const auto& image : QJsonDocument::fromJson(dataset.readAll()).object()["images"].toArray()) {
      const QString id = QString::number(image.toObject()["cocoid"].toInteger());
      QJsonArray refs;
      for (const auto& s : image.toObject()["sentences"].toArray()) refs.append(s.toObject()["raw"]);
      references.insert(id, refs);
      candidates.insert(id, rows.value(id).value(3));
    }
    QFile r(dir_ + "/refs.json"), c(dir_ + "/cands.json");
    QVERIFY(r.open(QIODevice::WriteOnly) && c.open(QIODevice::WriteOnly));
    r.write(QJsonDocument(references).toJson());
    c.write(QJsonDocument(candidates).toJson());
    r.close();
    c.close();
    const auto scored = cli({"score", "--references", r.fileName(), "--candidates", c.fileName(), "--json"});
    QVERIFY2(scored.exitCode == 0, scored.err.constData());
    const QJsonObject perImage = QJsonDocument::fromJson(scored.out.trimmed()).object()["per_image"].toObject();
    for (auto it = rows.begin(); it != rows.end(); ++it)
      QVERIFY2(qAbs(perImage[it.key()].toObject()["CIDEr"].toDouble() - it.value().value(4).toDouble()) < 1e-6,
               qPrintable(it.key()));
  }

  // Two evaluations of one split (greedy and beam 3) side by side for an image;
  // "Caption with the loaded model" captions it as `expnet caption` does.
  void compareEvaluationsAndCaptionOneImage() {
    StudioContext context;
    DatasetsPage page(&context);
    QVERIFY(openShapes(page));
    page.findChild<QSpinBox*>("evalBeam")->setValue(1);
    page.evaluate("demo", "val", 0);
    QVERIFY(waitIdle(page));
    page.findChild<QSpinBox*>("evalBeam")->setValue(3);
    page.evaluate("demo", "val", 0);
    QVERIFY(waitIdle(page));
    const QJsonArray evaluations = page.describe()["evaluation"].toObject()["evaluations"].toArray();
    QVERIFY(evaluations.size() >= 2);
    auto* compared = page.findChild<QComboBox*>("evalCompared");
    const qint64 greedy = [&] {
      for (const auto& e : evaluations)
        if (e.toObject()["options"].toString().contains("\"search\":\"greedy\"")) return e.toObject()["id"].toInteger();
      return qint64(0);
    }();
    QVERIFY2(greedy != 0, "no greedy evaluation listed");
    compared->setCurrentIndex(compared->findData(greedy));
    emit compared->activated(compared->currentIndex());
    const bool shown = expnet_test::waitUntil([&] {
      return page.findChild<QTextBrowser*>("imageDetailText")->toPlainText().contains("Compared evaluation");
    }, 20000);
    QVERIFY2(shown, qPrintable(page.describe()["sort"].toString() + " shown " +
                               QString::number(page.describe()["evaluation"].toObject()["shown"].toInteger()) + " " +
                               QJsonDocument(page.describe()["items"].toArray()).toJson().left(600) +
                               page.findChild<QTextBrowser*>("imageDetailText")->toPlainText()));
    // The selected image captioned with the model the Caption page would have loaded.
    context.setCaptioner(expnet::Captioner::load({"demo", "", ""}));
    context.setModelName("built-in demo model");
    const QString file = page.describe()["detail"].toObject()["file"].toString();
    page.findChild<QPushButton*>("captionImage")->click();
    QVERIFY(expnet_test::waitUntil([&] {
      const QString c = page.describe()["detail"].toObject()["loaded_model_caption"].toString();
      return !c.isEmpty() && c != "captioning…";
    }, 60000));
    const auto cli = expnet_test::runProcess(expnet_test::cliPath(), {"caption", "--model", "demo", "--json", file});
    const QString expected = QJsonDocument::fromJson(cli.out.trimmed()).object()["captions"].toArray()[0].toObject()["text"].toString();
    QCOMPARE(page.describe()["detail"].toObject()["loaded_model_caption"].toString(), expected);
  }

  // An authors'-format checkpoint with its config and vocabulary: the captions
  // are `expnet caption --model CONFIG --checkpoint C --vocab V`'s.
  void evaluatesAnAuthorsCheckpoint() {
    QString model, checkpoint, vocab, image;
    EXPNET_TINY_REFERENCE(model, checkpoint, vocab, image);
    StudioContext context;
    DatasetsPage page(&context);
    QVERIFY(openShapes(page));
    page.findChild<EvaluationPanel*>("evaluationPanel")->setReferenceFiles(model, vocab);
    page.findChild<QSpinBox*>("evalBeam")->setValue(1);
    page.evaluate(checkpoint, "test", 3);
    QVERIFY(waitIdle(page));
    const QString state = page.describe()["evaluation"].toObject()["state"].toString();
    QVERIFY2(state.startsWith("Evaluation #"), qPrintable(state));
    const QJsonArray items = page.describe()["items"].toArray();
    int checked = 0;
    for (const auto& item : items) {
      const QJsonObject i = item.toObject();
      if (!i.contains("caption")) continue;
      const auto r = cli({"caption", "--model", model, "--checkpoint", checkpoint, "--vocab", vocab, "--search", "greedy",
                          "--json", i["file"].toString()});
      QVERIFY2(r.exitCode == 0, r.err.constData());
      QCOMPARE(i["caption"].toString(),
               QJsonDocument::fromJson(r.out.trimmed()).object()["captions"].toArray()[0].toObject()["text"].toString());
      ++checked;
    }
    QCOMPARE(checked, 3);
  }

  // The last dataset, split and sort come back (QSettings) and the dataset opens at the first show.
  void settingsComeBack() {
    QCoreApplication::setOrganizationName("expnet-test");  // not the user's settings
    QSettings().clear();
    {
      StudioContext context;
      DatasetsPage page(&context);
      QVERIFY(openShapes(page));
      page.setSplit("val");
      page.setSort(expnet::IndexSort::caption_length);
      QVERIFY(waitIdle(page));
      page.saveSettings();
    }
    StudioContext context;
    DatasetsPage page(&context);
    page.restoreSettings();
    QVERIFY(page.indexPath().isEmpty());  // nothing opened before the page is shown
    page.show();
    QVERIFY(waitIdle(page));
    const QJsonObject d = page.describe();
    QCOMPARE(d["dataset"].toString(), QFileInfo(shapes_).absoluteFilePath());
    QCOMPARE(d["split"].toString(), QString("val"));
    QCOMPARE(d["sort"].toString(), QString("caption length"));
    QVERIFY(d["total"].toInteger() > 0);

    // Sorted by an evaluation's scores: the evaluation comes back with the sort; when it
    // is gone from the store, the sort falls back to id instead of claiming a score order.
    const QJsonArray evaluations = d["evaluation"].toObject()["evaluations"].toArray();
    QVERIFY2(!evaluations.isEmpty(), "the earlier test's evaluation is not in the store");
    const qint64 id = evaluations[0].toObject()["id"].toInteger();
    for (const qint64 shown : {id, qint64(999999)}) {
      QSettings().setValue("datasets/sort", int(expnet::IndexSort::score_ascending));
      QSettings().setValue("datasets/evaluation", shown);
      StudioContext again;
      DatasetsPage restored(&again);
      restored.restoreSettings();
      restored.show();
      QVERIFY(expnet_test::waitUntil([&] { return !restored.isBusy() && restored.describe()["total"].toInteger() > 0; }));
      QVERIFY(waitIdle(restored));
      const QJsonObject r = restored.describe();
      QCOMPARE(r["evaluation"].toObject()["shown"].toInteger(), shown == id ? id : 0);
      QCOMPARE(r["sort"].toString(), shown == id ? QString("score: worst first") : QString("id"));
    }
    QSettings().clear();
  }

  // A broken dataset file says where and why; a missing image gets a placeholder with the reason.
  void badInputIsShownAndTheRestWorks() {
    const QString broken = dir_ + "/broken/dataset_coco.json";
    QDir().mkpath(dir_ + "/broken");
    QFile f(broken);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("{\"images\": [\n  {\"cocoid\": 1, \"filename\": \"a.png\",\n   \"sentences\": [ oops ]}\n]}\n");
    f.close();
    StudioContext context;
    DatasetsPage page(&context);
    page.show();
    page.openDataset(broken);
    QVERIFY(waitIdle(page));
    const QString error = page.describe()["error"].toString();
    QVERIFY2(error.contains(broken) && error.contains(":3"), qPrintable(error));
    // A copy of the shapes set with one image gone.
    const QString copy = dir_ + "/missing";
    QVERIFY(QDir().mkpath(copy + "/images"));
    QVERIFY(QFile::copy(shapes_ + "/dataset_coco.json", copy + "/dataset_coco.json"));
    for (const auto& name : QDir(shapes_ + "/images").entryList(QDir::Files))
      if (name != "shapes_000000.png") QFile::copy(shapes_ + "/images/" + name, copy + "/images/" + name);
    page.openDataset(copy);
    QVERIFY(waitIdle(page));
    const QJsonArray items = page.describe()["items"].toArray();
    QVERIFY(!items.isEmpty());
    const QJsonObject first = items[0].toObject();
    QVERIFY(first["file"].toString().endsWith("shapes_000000.png"));
    QVERIFY2(!first["thumbnail_error"].toString().isEmpty(), "no placeholder reason for the missing image");
    QVERIFY(items[1].toObject()["thumbnail_error"].toString().isEmpty());
  }

  // `expnet-studio --screenshot F --page datasets --dataset D --eval demo`: the visible items with captions and scores.
  void screenshotDescribesItems() {
    const QString png = dir_ + "/datasets.png";
    const auto r = expnet_test::runStudioScreenshot(
        png, {"--page", "datasets", "--dataset", shapes_, "--split", "val", "--eval", "demo", "--theme", "dark"});
    QVERIFY2(r.exitCode == 0, r.err.constData());
    QJsonObject d;
    expnet_test::readScreenshotDescription(png, &d);
    if (QTest::currentTestFailed()) return;
    const QJsonObject content = d["content"].toObject();
    QVERIFY(content["total"].toInteger() > 0);
    const QJsonArray items = content["items"].toArray();
    QVERIFY(!items.isEmpty());
    for (const auto& item : items) {
      const QJsonObject i = item.toObject();
      QCOMPARE(i["split"].toString(), QString("val"));
      QVERIFY(!i["reference"].toString().isEmpty());
      QVERIFY(!i["caption"].toString().isEmpty());
      QVERIFY(i.contains("CIDEr-D"));
    }
  }
};

QTEST_MAIN(TestDatasetsPage)
#include "test_datasets_page.moc"

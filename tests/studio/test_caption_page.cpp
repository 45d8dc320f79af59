// The Caption page as a user drives it: drop files, watch captions arrive,
// compare them with the engine's own captions for the same image and settings,
// see a bad file fail on its row only, keep the UI responsive, export.
#include <QClipboard>
#include <QComboBox>
#include <QDir>
#include <QGuiApplication>
#include <QPushButton>
#include <QDoubleSpinBox>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMimeData>
#include <QSpinBox>
#include <QTimer>
#include <QUrl>
#include <QtTest>

#include "shell/studiocontext.h"
#include "caption/captionmodel.h"
#include "caption/captionpage.h"
#include "expnet/decode/captioner.h"
#include "support/fixtures.h"
#include "support/studio_screenshot.h"
#include "support/tiny_reference.h"

namespace {
constexpr int kWaitMs = 300000;

void dropFiles(QWidget& target, const QStringList& paths) {
  QMimeData mime;
  QList<QUrl> urls;
  for (const auto& path : paths) urls << QUrl::fromLocalFile(path);
  mime.setUrls(urls);
  const QPointF centre(target.width() / 2.0, target.height() / 2.0);
  QDragEnterEvent enter(centre.toPoint(), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
  QCoreApplication::sendEvent(&target, &enter);
  QVERIFY(enter.isAccepted());
  QDropEvent drop(centre, Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
  QCoreApplication::sendEvent(&target, &drop);
  QVERIFY(drop.isAccepted());
}

// The engine's sampling with the page's fixed seed: what the Decoding box's "Sampling" asks for.
expnet::DecodingOptions samplingOptions(int samples, int maxLength) {
  expnet::DecodingOptions options;
  options.search = expnet::SearchKind::Sampling;
  options.beam_size = 1;
  options.num_hypotheses = samples;
  options.max_length = maxLength;
  options.seed = 0;
  return options;
}

QString writeFile(const QString& path, const QByteArray& bytes) {
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly)) return {};
  f.write(bytes);
  return path;
}
}  // namespace

class TestCaptionPage : public QObject {
  Q_OBJECT
 private:
  QString model_, checkpoint_, vocab_, image_;

  // The engine's own captions of `image`, called directly (not through the page).
  std::vector<expnet::CaptionedImage> engineCaptions(const QString& image, const expnet::DecodingOptions& options) const {
    auto captioner = expnet::Captioner::load({model_.toStdString(), checkpoint_.toStdString(), vocab_.toStdString()});
    return captioner->caption_files({image.toStdString()}, options);
  }

  bool loadInto(CaptionPage& page) {
    page.loadModel({model_, checkpoint_, vocab_});
    QElapsedTimer clock;
    clock.start();
    while (page.isBusy() && clock.elapsed() < kWaitMs) QTest::qWait(20);
    return page.modelLoaded();
  }

 private slots:
  void initTestCase() { EXPNET_TINY_REFERENCE(model_, checkpoint_, vocab_, image_); }

  void noModelSaysHowToLoadOne() {
    StudioContext context;
    CaptionPage page(&context);
    QVERIFY(!page.modelLoaded());
    const QJsonObject d = page.describe();
    QCOMPARE(d.value("model_loaded").toBool(), true == false);
    QVERIFY(d.value("message").toString().contains("No model loaded"));
  }

  void droppedImagesGetTheEngineCaptionsAndBadFilesFailAlone() {
    StudioContext context;
    CaptionPage page(&context);
    page.resize(1000, 700);
    page.show();
    QVERIFY(loadInto(page));
    QVERIFY(context.modelName().contains("checkpoint.pth"));
    // Settings chosen through the widgets a user touches.
    page.findChild<QSpinBox*>("beam")->setValue(3);
    page.findChild<QSpinBox*>("nbest")->setValue(2);
    page.findChild<QSpinBox*>("maxLength")->setValue(12);
    page.findChild<QDoubleSpinBox*>("lengthPenalty")->setValue(0.5);
    page.findChild<QSpinBox*>("noRepeat")->setValue(2);

    const QString dir = expnet_test::makeTempDir("caption_drop");
    const QString good = dir + "/good.png";
    QVERIFY(QFile::copy(image_, good));
    const QString bad = writeFile(dir + "/bad.png", "this is not a PNG");
    QVERIFY(!bad.isEmpty());
    QStringList partials;  // what the caption cell showed while decoding
    connect(page.model(), &CaptionModel::itemChanged, this, [&](int row) {
      const CaptionItem& item = page.model()->item(row);
      if (item.status == CaptionItem::Status::Running && !item.partial.isEmpty()) partials << item.partial;
    });
    dropFiles(page, {bad, good});
    QVERIFY(page.isBusy() || page.model()->pendingCount() == 0);
    QTRY_VERIFY_WITH_TIMEOUT(!page.isBusy(), kWaitMs);

    const CaptionModel& items = *page.model();
    QCOMPARE(items.rowCount(), 2);
    const CaptionItem& failed = items.item(0);
    QCOMPARE(int(failed.status), int(CaptionItem::Status::Failed));
    QVERIFY2(failed.error.contains("bad.png"), qPrintable(failed.error));
    QCOMPARE(items.data(items.index(0, CaptionModel::CaptionColumn), Qt::DisplayRole).toString(), failed.error);
    const CaptionItem& done = items.item(1);
    QCOMPARE(int(done.status), int(CaptionItem::Status::Done));

    // The engine, called directly with the same settings.
    expnet::DecodingOptions options;
    options.beam_size = 3;
    options.num_hypotheses = 2;
    options.max_length = 12;
    options.length_penalty = 0.5;
    options.no_repeat_ngram_size = 2;
    const auto expected = engineCaptions(good, options);
    QVERIFY(expected.at(0).error.empty());
    QCOMPARE(done.nbest.size(), qsizetype(expected.at(0).texts.size()));
    for (int i = 0; i < done.nbest.size(); ++i) {
      const QJsonObject h = done.nbest.at(i).toObject();
      QCOMPARE(h.value("text").toString(), QString::fromStdString(expected.at(0).texts.at(i)));
      QVERIFY(qAbs(h.value("score").toDouble() - expected.at(0).captions.at(i).score) < 1e-5);
    }
    QCOMPARE(done.caption(), QString::fromStdString(expected.at(0).texts.at(0)));
    QVERIFY2(!partials.isEmpty(), "no words streamed before the caption was final");
    QCOMPARE(done.settings.value("beam_size").toInt(), 3);
    QCOMPARE(done.settings.value("max_length").toInt(), 12);
    for (const char* part : {"preprocess", "encode", "decode"}) QVERIFY(done.ms.value(part).toDouble() > 0);
    QVERIFY(!done.thumbnail.isNull());

    const QJsonArray described = page.describe().value("items").toArray();
    QCOMPARE(described.size(), 2);
    QCOMPARE(described.at(1).toObject().value("caption").toString(), done.caption());
    QVERIFY(described.at(0).toObject().contains("error"));

    // Exports: valid files with the same captions.
    const QString csv = dir + "/out.csv", jsonl = dir + "/out.jsonl", coco = dir + "/out.json";
    items.exportCsv(csv);
    items.exportJsonLines(jsonl);
    items.exportCocoResults(coco);
    QFile csvFile(csv);
    QVERIFY(csvFile.open(QIODevice::ReadOnly));
    const QStringList lines = QString::fromUtf8(csvFile.readAll()).split('\n', Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), 3);
    QCOMPARE(lines.at(0), QString("image,caption,score,preprocess_ms,encode_ms,decode_ms,error"));
    QVERIFY(lines.at(2).startsWith(good + "," + done.caption() + ","));
    QFile jsonlFile(jsonl);
    QVERIFY(jsonlFile.open(QIODevice::ReadOnly));
    const QList<QByteArray> records = jsonlFile.readAll().split('\n');
    QCOMPARE(records.size(), 3);  // two lines and the final newline
    QJsonParseError error;
    const QJsonObject second = QJsonDocument::fromJson(records.at(1), &error).object();
    QCOMPARE(error.error, QJsonParseError::NoError);
    QCOMPARE(second.value("caption").toString(), done.caption());
    QCOMPARE(second.value("nbest").toArray().size(), 2);
    QVERIFY(QJsonDocument::fromJson(records.at(0), &error).object().contains("error"));
    QFile cocoFile(coco);
    QVERIFY(cocoFile.open(QIODevice::ReadOnly));
    const QJsonArray results = QJsonDocument::fromJson(cocoFile.readAll(), &error).array();
    QCOMPARE(error.error, QJsonParseError::NoError);
    QCOMPARE(results.size(), 1);
    QCOMPARE(results.at(0).toObject().value("caption").toString(), done.caption());
    QCOMPARE(results.at(0).toObject().value("image_id").toInteger(), 2);  // no digits in "good": row number
    QCOMPARE(CaptionModel::cocoImageId("x/COCO_val2014_000000391895.jpg", 0), 391895);
  }

  void pastedPathIsCaptionedWithSamplingAsTheEngineDoes() {
    StudioContext context;
    CaptionPage page(&context);
    page.resize(1000, 700);
    page.show();
    page.findChild<QSpinBox*>("threads")->setValue(1);  // applied by the load, shown to every page
    QVERIFY(loadInto(page));
    QCOMPARE(context.threads(), 1);
    page.findChild<QComboBox*>("search")->setCurrentIndex(2);  // sampling
    page.findChild<QSpinBox*>("nbest")->setValue(2);
    page.findChild<QSpinBox*>("maxLength")->setValue(10);
    // A path copied as text (not as a URL list), as from a terminal.
    QGuiApplication::clipboard()->setText(image_ + "\n");
    page.pasteFromClipboard();
    QTRY_VERIFY_WITH_TIMEOUT(page.model()->rowCount() == 1 && !page.isBusy(), kWaitMs);
    const CaptionItem& done = page.model()->item(0);
    QCOMPARE(int(done.status), int(CaptionItem::Status::Done));
    QCOMPARE(done.settings.value("search").toString(), QString("sampling"));

    const auto expected = engineCaptions(image_, samplingOptions(2, 10));
    QVERIFY(expected.at(0).error.empty());
    QCOMPARE(done.nbest.size(), qsizetype(expected.at(0).texts.size()));
    for (int i = 0; i < done.nbest.size(); ++i)
      QCOMPARE(done.nbest.at(i).toObject().value("text").toString(), QString::fromStdString(expected.at(0).texts.at(i)));
  }

  void uiStaysResponsiveWhileCaptioningAFolder() {
    StudioContext context;
    CaptionPage page(&context);
    page.show();
    QVERIFY(loadInto(page));
    const QString dir = expnet_test::makeTempDir("caption_folder");
    for (int i = 0; i < 12; ++i) QVERIFY(QFile::copy(image_, dir + QString("/img%1.png").arg(i, 2, 10, QChar('0'))));

    QElapsedTimer clock;
    qint64 last = 0, longestGap = 0;
    QTimer tick;
    tick.setInterval(10);
    connect(&tick, &QTimer::timeout, this, [&] {
      const qint64 now = clock.elapsed();
      longestGap = std::max(longestGap, now - last);
      last = now;
    });
    clock.start();
    tick.start();
    dropFiles(page, {dir});
    QTRY_VERIFY_WITH_TIMEOUT(!page.isBusy(), kWaitMs);
    tick.stop();
    QCOMPARE(page.model()->rowCount(), 12);
    for (const auto& item : page.model()->items()) QCOMPARE(int(item.status), int(CaptionItem::Status::Done));
    qInfo("longest event-loop gap while captioning 12 images: %lld ms (gross bound 500 ms)", longestGap);
    QVERIFY2(longestGap < 500, qPrintable(QString("event loop blocked for %1 ms").arg(longestGap)));
  }

  void cancelStopsQueuedImages() {
    StudioContext context;
    CaptionPage page(&context);
    QVERIFY(loadInto(page));
    const QString dir = expnet_test::makeTempDir("caption_cancel");
    QStringList files;
    for (int i = 0; i < 30; ++i) {
      files << dir + QString("/c%1.png").arg(i);
      QVERIFY(QFile::copy(image_, files.last()));
    }
    page.addPaths(files);
    page.cancel();
    QTRY_VERIFY_WITH_TIMEOUT(!page.isBusy(), kWaitMs);
    int cancelled = 0;
    for (const auto& item : page.model()->items()) cancelled += item.status == CaptionItem::Status::Cancelled;
    QVERIFY(cancelled > 0);
  }

  void studioScreenshotShowsRealCaptions() {
    const QString dir = expnet_test::makeTempDir("caption_screenshot");
    const QString png = dir + "/caption.png";
    const auto r = expnet_test::runStudioScreenshot(
        png, {"--model", model_, "--checkpoint", checkpoint_, "--vocab", vocab_, "--page", "caption", "--open", image_});
    QVERIFY2(r.finished && r.exitCode == 0, r.err.constData());
    QJsonObject d;
    expnet_test::readScreenshotDescription(png, &d);
    if (QTest::currentTestFailed()) return;
    const QJsonObject content = d.value("content").toObject();
    QVERIFY(content.value("model_loaded").toBool());
    const QJsonArray items = content.value("items").toArray();
    QCOMPARE(items.size(), 1);
    expnet::DecodingOptions options;  // the page's defaults: beam 5, 3-best
    options.num_hypotheses = 3;
    const auto expected = engineCaptions(image_, options);
    QCOMPARE(items.at(0).toObject().value("caption").toString(), QString::fromStdString(expected.at(0).texts.at(0)));
  }
};

QTEST_MAIN(TestCaptionPage)
#include "test_caption_page.moc"

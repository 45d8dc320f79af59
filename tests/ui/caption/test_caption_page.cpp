// The Caption page as a user drives it: drop files, watch captions arrive,
// compare them with the engine's own captions for the same image and settings,
// see a bad file fail on its row only, keep the UI responsive, export; review
// and edit captions and save them as alt text in the photos' own metadata.
#include <QClipboard>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QComboBox>
#include <QDesktopServices>
#include <QDir>
#include <QGuiApplication>
#include <QProgressBar>
#include <QPushButton>
#include <QDoubleSpinBox>
#include <QElapsedTimer>
#include <QFont>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QTableView>
#include <QMenu>
#include <QMimeData>
#include <QSettings>
#include <QSpinBox>
#include <QTimer>
#include <QToolButton>
#include <QUrl>
#include <QStandardItemModel>
#include <QtTest>

#include <filesystem>
#include <fstream>

#include "shell/studiocontext.h"
#include "caption/alttextbar.h"
#include "caption/captionmodel.h"
#include "caption/captionpage.h"
#include "common/csvtext.h"
#include "expnet/decode/captioner.h"
#include "expnet/metadata/alt_text.h"
#include "expnet/text/vocabulary.h"
#include "support/fixtures.h"
#include "support/page_driving.h"
#include "support/studio_screenshot.h"
#include "support/tiny_reference.h"

namespace {
constexpr int kWaitMs = 300000;

// Receives the URLs QDesktopServices would open in the browser.
class UrlCatcher : public QObject {
  Q_OBJECT
 public:
  QList<QUrl> urls;
 public slots:
  void open(const QUrl& url) { urls << url; }
};

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

  static ModelRequest demoRequest() {
    ModelRequest request;
    request.model = "demo";
    return request;
  }

  // A random tiny checkpoint of ours carrying `decoding`, made as a user would: checkpoint init, then export.
  QString carryingCheckpoint(const QString& dir, const QString& decoding) const {
    expnet::Vocabulary({"PAD", "SOS", "EOS", "UNK", "a", "red", "circle", "square"}).save_json((dir + "/vocab.json").toStdString());
    const auto init = expnet_test::runProcess(expnet_test::cliPath(), {"checkpoint", "init", "--model", "tiny", "--vocab",
                                                                       dir + "/vocab.json", "--out", dir + "/init.pth"});
    const auto out = expnet_test::runProcess(expnet_test::cliPath(), {"checkpoint", "export", "--checkpoint", dir + "/init.pth",
                                                                      "--out", dir + "/carrying.pth", "--decoding", decoding});
    return init.exitCode == 0 && out.exitCode == 0 ? dir + "/carrying.pth" : QString();
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
    expnet_test::dropFiles(page, {bad, good});
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
    QCOMPARE(lines.at(0), QString("image,caption,score,preprocess_ms,encode_ms,decode_ms,error,model,precision,device,search,beam_size"));
    QVERIFY(lines.at(2).startsWith(good + "," + done.caption() + ","));
    // Which model made it, in the row and in the export.
    const QString model = page.describe().value("model").toString();
    QVERIFY(!model.isEmpty());
    QVERIFY2(lines.at(2).endsWith("," + csvField(model) + ",fp32,cpu,beam,3"), qPrintable(lines.at(2)));
    QCOMPARE(done.madeBy(), model + " · beam 3");
    QCOMPARE(items.data(items.index(1, CaptionModel::StatusColumn), Qt::ToolTipRole).toString(), "Captioned by " + model + " · beam 3");
    const QString shown = items.data(items.index(1, CaptionModel::StatusColumn), Qt::DisplayRole).toString();
    QVERIFY2(shown.startsWith(done.statusText() + "\n" + model.left(18)) && shown.endsWith(" · beam 3"), qPrintable(shown));
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
    // A pasted path that does not exist is not dropped silently: a row names it and says why.
    const QString missing = expnet_test::makeTempDir("caption_paste") + "/gone.png";
    QGuiApplication::clipboard()->setText(missing + "\nsome words that are no path\n");
    // Pasted with Ctrl+V as anywhere else (Ctrl+Shift+V too); a text field keeps its own Ctrl+V.
    page.activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(&page));
    auto* checkpointField = page.findChild<QLineEdit*>("checkpoint");
    QVERIFY(checkpointField);
    const QString typed = checkpointField->text();
    checkpointField->setFocus();
    QTest::keyClick(checkpointField, Qt::Key_V, Qt::ControlModifier);
    QVERIFY(checkpointField->text().startsWith(typed + missing));
    QCOMPARE(page.model()->rowCount(), 1);
    checkpointField->setText(typed);
    auto* table = page.findChild<QTableView*>();
    table->setFocus();
    QTest::keyClick(table, Qt::Key_V, Qt::ControlModifier);
    QTRY_VERIFY_WITH_TIMEOUT(page.model()->rowCount() == 2 && !page.isBusy(), kWaitMs);
    QCOMPARE(page.model()->item(1).path, missing);
    QCOMPARE(int(page.model()->item(1).status), int(CaptionItem::Status::Failed));
  }

  // Clear removes every row; pressed again on the emptied list it brings them back (until rows are added).
  void clearIsUndone() {
    StudioContext context;
    CaptionPage page(&context);
    const QString dir = expnet_test::makeTempDir("caption_clear");
    page.addPaths({dir + "/a.png", dir + "/b.png"});  // missing: error rows, no model needed
    QCOMPARE(page.model()->rowCount(), 2);
    auto* clear = page.findChild<QPushButton*>("clearImages");
    QVERIFY(clear);
    clear->click();
    QCOMPARE(page.model()->rowCount(), 0);
    QCOMPARE(clear->text(), QStringLiteral("Undo clear"));
    QVERIFY(clear->isEnabled());
    clear->click();
    QCOMPARE(page.model()->rowCount(), 2);
    QCOMPARE(page.model()->item(1).path, dir + "/b.png");
    QCOMPARE(int(page.model()->item(1).status), int(CaptionItem::Status::Failed));
    QCOMPARE(clear->text(), QStringLiteral("Clear"));
    clear->click();
    page.addPaths({dir + "/c.png"});  // the cleared rows are gone for good now
    QCOMPARE(clear->text(), QStringLiteral("Clear"));
    clear->click();
    clear->click();
    QCOMPARE(page.model()->rowCount(), 1);
    QCOMPARE(page.model()->item(0).path, dir + "/c.png");
  }

  // Recent keeps what can be opened again: an image file and a folder, not a missing
  // path, a non-image file or a pasted image's temporary file.
  void recentRemembersOnlyWhatOpensAgain() {
    StudioContext context;
    CaptionPage page(&context);
    const QString dir = expnet_test::makeTempDir("caption_recent_paths");
    QFile text(dir + "/notes.txt");
    QVERIFY(text.open(QIODevice::WriteOnly) && text.write("words") > 0);
    text.close();
    page.addPaths({dir + "/gone.png", dir + "/notes.txt", image_, dir});
    QCOMPARE(page.recent().paths(), (QStringList{QFileInfo(dir).absoluteFilePath(), QFileInfo(image_).absoluteFilePath()}));
    QImage pixels(8, 8, QImage::Format_RGB32);
    pixels.fill(Qt::red);
    QGuiApplication::clipboard()->setImage(pixels);
    const int rows = page.model()->rowCount();
    page.pasteFromClipboard();
    QCOMPARE(page.model()->rowCount(), rows + 1);
    QVERIFY(page.model()->item(rows).path.endsWith("pasted-1.png"));
    QCOMPARE(page.recent().paths().size(), 2);
  }

  // A file whose name is not UTF-8 (byte 0xff), dropped from a file manager as a
  // percent-encoded URL: captioned (Qt's own toLocalFile() would turn the byte into
  // U+FFFD and the page said "no such file or folder"); a non-image with such a name
  // gets its real error.
  void droppedNonUtf8NameIsCaptioned() {
    StudioContext context;
    CaptionPage page(&context);
    page.show();
    QVERIFY(loadInto(page));
    const std::string dir = expnet_test::makeTempDir("caption_non_utf8").toStdString();
    const std::string good = dir + "/photo\xff.png", bad = dir + "/notes\xfe.png";
    // (Qt cannot list these names, so a previous run's copies may still be there.)
    std::filesystem::copy_file(image_.toStdString(), good, std::filesystem::copy_options::overwrite_existing);
    std::ofstream(bad) << "this is not a PNG";
    expnet_test::dropUrls(page, {expnet_test::fileUrlOfBytes(good), expnet_test::fileUrlOfBytes(bad)});
    QTRY_VERIFY_WITH_TIMEOUT(page.model()->rowCount() == 2 && !page.isBusy(), kWaitMs);
    const CaptionItem& done = page.model()->item(0);
    QVERIFY2(int(done.status) == int(CaptionItem::Status::Done), qPrintable(done.error));
    QVERIFY(!done.nbest.isEmpty() && !done.nbest.at(0).toObject().value("text").toString().isEmpty());
    const CaptionItem& failed = page.model()->item(1);
    QCOMPARE(int(failed.status), int(CaptionItem::Status::Failed));
    QVERIFY2(failed.error.contains("not_an_image") && !failed.error.contains("no such file"), qPrintable(failed.error));
    // The folder holding them, opened as a whole: walked in byte order, the same two outcomes.
    page.addPaths({QString::fromStdString(dir)});
    QTRY_VERIFY_WITH_TIMEOUT(page.model()->rowCount() == 4 && !page.isBusy(), kWaitMs);
    QCOMPARE(int(page.model()->item(2).status), int(CaptionItem::Status::Failed));
    QVERIFY2(int(page.model()->item(3).status) == int(CaptionItem::Status::Done), qPrintable(page.model()->item(3).error));
  }

  // The reliability cases dropped on the page: each bad file fails alone, with its
  // own reason, quickly; the good one is captioned; a zip bomb given as the
  // checkpoint is refused before it is inflated and the page keeps its model.
  void hostileFilesDroppedFailAlone() {
    StudioContext context;
    CaptionPage page(&context);
    page.show();
    QVERIFY(loadInto(page));
    const QString dir = expnet_test::makeTempDir("caption_hostile");
    {
      QFile sparse(dir + "/huge.png");  // 64 GB, sparse: refused by its size before a byte is read
      QVERIFY(sparse.open(QIODevice::WriteOnly) && sparse.resize(qint64(64) << 30));
    }
    writeFile(dir + "/bomb.pgm", "P5\n30000 30000\n255\n");  // 900 Mpx declared in 20 bytes
    writeFile(dir + "/scan.ntf", QByteArray("NITF02.10") + QByteArray(64, '0'));
    QVERIFY(QFile::copy(image_, dir + "/good.png"));
    QElapsedTimer clock;
    clock.start();
    expnet_test::dropFiles(page, {dir + "/huge.png", dir + "/bomb.pgm", dir + "/scan.ntf", dir + "/good.png"});
    QTRY_VERIFY_WITH_TIMEOUT(page.model()->rowCount() == 4 && !page.isBusy(), kWaitMs);
    QVERIFY2(clock.elapsed() < 20000, qPrintable(QString("took %1 ms").arg(clock.elapsed())));
    const QStringList reasons{"too_large", "too_large", "unsupported"};
    for (int i = 0; i < 3; ++i) {
      const CaptionItem& item = page.model()->item(i);
      QCOMPARE(int(item.status), int(CaptionItem::Status::Failed));
      QVERIFY2(item.error.contains(reasons[i]), qPrintable(item.error));
    }
    QVERIFY2(int(page.model()->item(3).status) == int(CaptionItem::Status::Done), qPrintable(page.model()->item(3).error));

    const QString bomb = dir + "/bomb.pth";  // data.pkl: a valid pickle, then 256 MiB of zeros, deflated
    const auto made = expnet_test::runProcess(
        expnet_test::torchPython(),
        {"-c", "import sys, zipfile\nwith zipfile.ZipFile(sys.argv[1], 'w', zipfile.ZIP_DEFLATED) as z:\n"
               "    z.writestr('archive/data.pkl', b'\\x80\\x02}.' + bytes(256 << 20))",
         bomb});
    QVERIFY2(made.exitCode == 0, made.err.constData());
    page.loadModel({model_, bomb, vocab_});
    QTRY_VERIFY_WITH_TIMEOUT(!page.isBusy(), kWaitMs);
    const QString error = page.describe().value("model_error").toString();
    QVERIFY2(error.contains(bomb) && error.contains("would inflate"), qPrintable(error));
  }

  void uiStaysResponsiveWhileCaptioningAFolder() {
    StudioContext context;
    CaptionPage page(&context);
    page.show();
    QVERIFY(loadInto(page));
    const QString dir = expnet_test::makeTempDir("caption_folder");
    for (int i = 0; i < 12; ++i) QVERIFY(QFile::copy(image_, dir + QString("/img%1.png").arg(i, 2, 10, QChar('0'))));

    expnet_test::StallMeter stalls;
    auto* bar = page.findChild<QProgressBar*>("batchProgress");
    QVERIFY(bar && bar->isHidden());
    int barMaximum = 0, barValues = 0, lastValue = -1;
    connect(bar, &QProgressBar::valueChanged, this, [&](int value) {
      barMaximum = std::max(barMaximum, bar->maximum());
      barValues += value != lastValue;
      lastValue = value;
    });
    expnet_test::dropFiles(page, {dir});
    QVERIFY(!bar->isHidden());  // the folder's 12 images: a bar while they are captioned
    QTRY_VERIFY_WITH_TIMEOUT(!page.isBusy(), kWaitMs);
    stalls.stop();
    QCOMPARE(barMaximum, 12);
    QVERIFY2(barValues >= 6, qPrintable(QString::number(barValues)));  // it moved along, image by image
    QVERIFY(bar->isHidden());
    QCOMPARE(page.model()->rowCount(), 12);
    for (const auto& item : page.model()->items()) QCOMPARE(int(item.status), int(CaptionItem::Status::Done));
    qInfo("longest event-loop gap while captioning 12 images: %lld ms (gross bound 500 ms)", stalls.longestGapMs());
    QVERIFY2(stalls.longestGapMs() < 500, qPrintable(QString("event loop blocked for %1 ms").arg(stalls.longestGapMs())));
  }

  // Review mode: a folder dropped and captioned, one caption edited in the table (the
  // edit marked), then Save as alt text for all: the edited text and the model's are
  // written into the photos (a read-only one gets a sidecar), each row says what it
  // got, the UI keeps answering; saving again skips every file.
  void reviewedCaptionsAreSavedAsAltText() {
    const QString dir = expnet_test::makeTempDir("caption_alt_text");
    const auto drawn = expnet_test::runProcess(
        "/usr/bin/python3", {"-c",
                             "import cv2, numpy as np, sys\n"
                             "img = np.zeros((48, 64, 3), np.uint8); cv2.circle(img, (24, 24), 12, (0, 0, 255), -1)\n"
                             "for name in ('a.jpg', 'b.png', 'c.png'): cv2.imwrite(sys.argv[1] + '/' + name, img)",
                             dir});
    QVERIFY2(drawn.exitCode == 0, drawn.err.constData());
    QFile::setPermissions(dir + "/c.png", QFileDevice::ReadOwner | QFileDevice::ReadGroup | QFileDevice::ReadOther);
    StudioContext context;
    CaptionPage page(&context);
    page.resize(1000, 700);
    page.show();
    page.findChild<QPushButton*>("demoModel")->click();
    QTRY_VERIFY_WITH_TIMEOUT(page.modelLoaded() && !page.isBusy(), kWaitMs);
    auto* save = page.findChild<QToolButton*>("saveAltText");
    QVERIFY(save && !save->isEnabled());  // nothing captioned yet
    expnet_test::dropFiles(page, {dir});
    QTRY_VERIFY_WITH_TIMEOUT(page.model()->rowCount() == 3 && !page.isBusy(), kWaitMs);
    QVERIFY(save->isEnabled());

    // Edit the first caption as a user does: F2, type, Enter.
    auto* table = page.findChild<QTableView*>("captionTable");
    const QModelIndex first = page.model()->index(0, CaptionModel::CaptionColumn);
    table->setCurrentIndex(first);
    QTest::keyClick(table, Qt::Key_F2);
    auto* editor = table->findChild<QLineEdit*>();
    QVERIFY(editor && editor->text() == page.model()->item(0).modelCaption());
    editor->setText("  a red circle  drawn by hand ");
    QTest::keyClick(editor, Qt::Key_Return);
    const QString edited = "a red circle drawn by hand";
    QTRY_COMPARE(page.model()->item(0).edited, edited);  // the delegate commits on the next turn of the event loop
    QCOMPARE(page.model()->item(0).caption(), edited);
    QVERIFY(page.model()->data(first, Qt::DisplayRole).toString() == edited);
    QVERIFY(page.model()->data(first, Qt::FontRole).value<QFont>().italic());
    QVERIFY(page.model()->item(0).statusText().endsWith("edited"));
    QVERIFY(page.model()->data(first, Qt::ToolTipRole).toString().contains(page.model()->item(0).modelCaption()));
    QVERIFY(
        !page.model()->data(page.model()->index(1, CaptionModel::CaptionColumn), Qt::FontRole).value<QFont>().italic());

    expnet_test::StallMeter stalls;
    table->selectAll();
    save->click();
    QVERIFY(page.isBusy());
    QTRY_VERIFY_WITH_TIMEOUT(!page.isBusy(), kWaitMs);
    stalls.stop();
    QVERIFY2(stalls.longestGapMs() < 500, qPrintable(QString("event loop blocked for %1 ms").arg(stalls.longestGapMs())));
    auto* bar = page.findChild<AltTextBar*>();
    QVERIFY2(bar->summary().startsWith("Alt text: 2 written into images, 1 into sidecars, 0 skipped, 0 failed"),
             qPrintable(bar->summary()));
    QCOMPARE(page.model()->item(0).altText, QString("Written into the image"));
    QVERIFY2(page.model()->item(2).altText.startsWith("Written to its sidecar: the image is read-only"),
             qPrintable(page.model()->item(2).altText));
    QVERIFY(page.model()
                ->data(page.model()->index(0, CaptionModel::StatusColumn), Qt::DisplayRole)
                .toString()
                .contains("Alt text: Written into the image"));

    // What the files hold: the edit as the alt text, the model's caption recorded as ours.
    const auto a = expnet::read_alt_text((dir + "/a.jpg").toStdString());
    QCOMPARE(QString::fromStdString(a.alt_text), edited);
    QCOMPARE(QString::fromStdString(a.description), edited);
    QCOMPARE(QString::fromStdString(a.ours), page.model()->item(0).modelCaption());
    QCOMPARE(QString::fromStdString(a.model_name), QString("demo"));
    QCOMPARE(a.model_sha256.size(), size_t(64));
    const auto b = expnet::read_alt_text((dir + "/b.png").toStdString());
    QCOMPARE(QString::fromStdString(b.alt_text), page.model()->item(1).caption());
    QCOMPARE(b.ours, b.alt_text);
    QVERIFY(QFile::exists(dir + "/c.png.xmp"));
    QCOMPARE(QString::fromStdString(expnet::read_alt_text((dir + "/c.png").toStdString()).alt_text),
             page.model()->item(2).caption());

    // Again: nothing to do, each row says why; the edit now counts as a person's alt text.
    save->click();
    QTRY_VERIFY_WITH_TIMEOUT(!page.isBusy(), kWaitMs);
    QVERIFY2(bar->summary().startsWith("Alt text: 0 written into images, 0 into sidecars, 3 skipped, 0 failed"),
             qPrintable(bar->summary()));
    QVERIFY(page.model()->item(0).altText.startsWith("Skipped: already has this alt text"));
    // Editing back to the model's words clears the mark.
    QVERIFY(page.model()->setData(first, page.model()->item(0).modelCaption()));
    QVERIFY(page.model()->item(0).edited.isEmpty());
    QVERIFY(page.model()->item(0).altText.isEmpty());
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

  // With the demo model a notice beside the captions says it knows only shapes and
  // how to caption photos; its button opens the authors' page (caught here: nothing
  // is opened or downloaded). Another model removes it. A checkpoint's decoding
  // options fill the Decoding box with a note, the user's changes win, and a model
  // carrying none gives back the fields the user left alone.
  void demoNoticeAndCheckpointDecodingOptions() {
    const QString dir = expnet_test::makeTempDir("caption_carried");
    const QString carrying = carryingCheckpoint(dir, R"({"beam_size": 2, "max_word_run": 1})");
    QVERIFY(!carrying.isEmpty());
    StudioContext context;
    CaptionPage page(&context);
    page.resize(1000, 700);
    page.show();
    auto* notice = page.findChild<QWidget*>("demoNotice");
    QVERIFY(notice && !notice->isVisible());
    auto* beam = page.findChild<QSpinBox*>("beam");
    auto* maxWordRun = page.findChild<QSpinBox*>("maxWordRun");
    auto* note = page.findChild<QLabel*>("decodingNote");
    const int userBeam = beam->value();
    QCOMPARE(maxWordRun->value(), 0);
    page.findChild<QPushButton*>("demoModel")->click();
    QTRY_VERIFY_WITH_TIMEOUT(page.modelLoaded() && !page.isBusy(), kWaitMs);
    QVERIFY(notice->isVisible());
    const QString text = page.describe().value("demo_notice").toString();
    for (const char* part : {"only coloured shapes", "rf_model.pth", "demo_coco_tokens.pickle", "jchenghu/ExpansionNet_v2",
                             "<b>official</b>"})
      QVERIFY2(text.contains(part), part);
    UrlCatcher catcher;
    QDesktopServices::setUrlHandler("https", &catcher, "open");
    page.findChild<QPushButton*>("openReleasePage")->click();
    QDesktopServices::unsetUrlHandler("https");
    QCOMPARE(catcher.urls, QList<QUrl>{QUrl("https://github.com/jchenghu/ExpansionNet_v2")});

    page.loadModel({QString(), carrying, QString()});
    QTRY_VERIFY_WITH_TIMEOUT(!page.isBusy(), kWaitMs);
    QVERIFY(context.modelName().contains("carrying.pth"));
    QVERIFY(!notice->isVisible());
    QVERIFY(!page.describe().contains("demo_notice"));
    QCOMPARE(beam->value(), 2);
    QCOMPARE(maxWordRun->value(), 1);
    QVERIFY(note->isVisible());
    QCOMPARE(note->text(), QString("From the checkpoint: beam_size 2, max_word_run 1"));

    // Captioned with them, as the engine captions with the checkpoint's options and the page's n-best.
    page.addPaths({image_});
    QTRY_VERIFY_WITH_TIMEOUT(page.model()->rowCount() == 1 && !page.isBusy(), kWaitMs);
    const CaptionItem& first = page.model()->item(0);
    QCOMPARE(first.settings.value("beam_size").toInt(), 2);
    QCOMPARE(first.settings.value("max_word_run").toInt(), 1);
    QCOMPARE(first.settings.value("from_checkpoint").toArray(), QJsonArray({"beam_size", "max_word_run"}));
    auto engine = expnet::Captioner::load({"", carrying.toStdString(), ""});
    expnet::DecodingOptions pageDefaults;
    pageDefaults.num_hypotheses = 2;  // the page's 3-best, at most the beam
    const auto expected =
        engine->caption_files({image_.toStdString()}, engine->carried_decoding().apply_to(pageDefaults));
    QCOMPARE(first.caption(), QString::fromStdString(expected.at(0).texts.at(0)));

    // The user's change wins, and the note says so.
    beam->setValue(3);
    QCOMPARE(note->text(), QString("From the checkpoint: beam_size 2, max_word_run 1 (changed here: beam_size)"));
    page.addPaths({image_});
    QTRY_VERIFY_WITH_TIMEOUT(page.model()->rowCount() == 2 && !page.isBusy(), kWaitMs);
    QCOMPARE(page.model()->item(1).settings.value("beam_size").toInt(), 3);
    QCOMPARE(page.model()->item(1).settings.value("from_checkpoint").toArray(), QJsonArray({"max_word_run"}));

    // The authors' format carries none: max word run goes back to the user's, the changed beam stays.
    QVERIFY(loadInto(page));
    QCOMPARE(maxWordRun->value(), 0);
    QCOMPARE(beam->value(), 3);
    QVERIFY(!note->isVisible());
    QVERIFY(userBeam != 3);
  }

  // The models loaded last are offered again and the last one is reloaded at start;
  // when its files are gone, the demo model is loaded and the Model box says why.
  // The Model box's Precision: bf16 where the CPU has it (forced here), and
  // fp32 with a note where it does not.
  // A PNAIC model decodes greedily: beam search and sampling are disabled with the
  // reason, the built-in PNAIC names are offered, and an AIC model enables them again.
  void pnaicModelsOfferOnlyGreedy() {
    StudioContext context;
    CaptionPage page(&context);
    page.show();
    auto* search = page.findChild<QComboBox*>("search");
    auto* items = qobject_cast<QStandardItemModel*>(search->model());
    QVERIFY(items);
    QVERIFY(page.findChildren<QComboBox*>().size() > 1);
    bool offered = false;
    for (auto* combo : page.findChildren<QComboBox*>()) offered = offered || combo->findText("pnaic-demo-k5") >= 0;
    QVERIFY2(offered, "the Config list does not offer pnaic-demo-k5");
    ModelRequest pnaic;
    pnaic.model = "pnaic-demo-k5";
    page.loadModel(pnaic);
    QTRY_VERIFY_WITH_TIMEOUT(page.modelLoaded() && !page.isBusy(), kWaitMs);
    QCOMPARE(search->currentText(), QStringLiteral("Greedy"));
    QVERIFY(!items->item(0)->isEnabled() && !items->item(2)->isEnabled());
    QVERIFY(items->item(0)->toolTip().contains("PNAIC"));
    page.loadModel(demoRequest());
    QTRY_VERIFY_WITH_TIMEOUT(page.modelLoaded() && !page.isBusy() && context.modelName() == "built-in demo model", kWaitMs);
    QVERIFY(items->item(0)->isEnabled() && items->item(2)->isEnabled());
  }

  // Input that cannot work is answered in the page's words, not the command line's: the
  // authors' preset without its files names them; n-best cannot exceed the beam.
  void presetWithoutFilesAndNbestAboveTheBeam() {
    StudioContext context;
    CaptionPage page(&context);
    page.show();
    ModelRequest official;
    official.model = "official";
    page.loadModel(official);
    QVERIFY(!page.isBusy());
    const QString error = page.describe().value("model_error").toString();
    QVERIFY2(error.contains("rf_model.pth") && error.contains("demo_coco_tokens.pickle") && !error.contains("--vocab"),
             qPrintable(error));
    auto* beam = page.findChild<QSpinBox*>("beam");
    auto* nbest = page.findChild<QSpinBox*>("nbest");
    page.findChild<QComboBox*>("search")->setCurrentIndex(0);
    beam->setValue(3);
    nbest->setValue(5);
    QCOMPARE(nbest->value(), 3);
    page.findChild<QComboBox*>("search")->setCurrentIndex(2);  // sampling: n samples, not bound by the beam
    nbest->setValue(5);
    QCOMPARE(nbest->value(), 5);
  }

  void precisionFromTheModelBox() {
    StudioContext context;
    CaptionPage page(&context);
    page.show();
    auto* precision = page.findChild<QComboBox*>("precision");
    QVERIFY(precision);
    QCOMPARE(precision->currentText(), QString("fp32"));
    precision->setCurrentText("bf16");
    qputenv("EXPNET_CPU_BF16", "1");
    page.findChild<QPushButton*>("demoModel")->click();
    QTRY_VERIFY_WITH_TIMEOUT(page.modelLoaded() && !page.isBusy(), kWaitMs);
    QCOMPARE(context.modelName(), QString("built-in demo model (bf16)"));
    QVERIFY(context.captioner()->precision() == expnet::Precision::BF16);
    QVERIFY(page.describe().value("model_note").toString().isEmpty());
    qputenv("EXPNET_CPU_BF16", "0");  // a CPU without bfloat16
    page.findChild<QPushButton*>("demoModel")->click();
    QTRY_VERIFY_WITH_TIMEOUT(page.modelLoaded() && !page.isBusy(), kWaitMs);
    qunsetenv("EXPNET_CPU_BF16");
    QCOMPARE(context.modelName(), QString("built-in demo model"));
    QVERIFY(context.captioner()->precision() == expnet::Precision::FP32);
    const QString note = page.describe().value("model_note").toString();
    QVERIFY2(note.contains("running in fp32 instead"), qPrintable(note));
    // A precision chosen with a model loaded loads that model again at once (no Load model to press).
    precision->setCurrentText("int8");
    emit precision->activated(precision->currentIndex());
    QTRY_VERIFY_WITH_TIMEOUT(page.modelLoaded() && !page.isBusy() && context.captioner()->precision() == expnet::Precision::INT8,
                             kWaitMs);
    QVERIFY(context.modelName().startsWith("built-in demo model"));
  }

  void recentModelsAndTheLastOneAtStart() {
    QCoreApplication::setOrganizationName("expnet-test");  // not the user's settings
    QSettings().clear();
    const QString dir = expnet_test::makeTempDir("caption_recent");
    const QString copy = dir + "/copy.pth";
    QVERIFY(QFile::copy(checkpoint_, copy));
    {
      StudioContext context;
      CaptionPage page(&context);
      page.loadModel(demoRequest());
      QTRY_VERIFY_WITH_TIMEOUT(page.modelLoaded() && !page.isBusy(), kWaitMs);
      page.loadModel({model_, copy, vocab_});
      QTRY_VERIFY_WITH_TIMEOUT(!page.isBusy(), kWaitMs);
      QCOMPARE(page.recentModels().models().size(), 2);
      QCOMPARE(page.recentModels().models().first().checkpoint, copy);
      page.saveSettings();
    }
    {
      StudioContext context;
      CaptionPage page(&context);
      page.restoreSettings();
      page.loadLastModel();
      QTRY_VERIFY_WITH_TIMEOUT(page.modelLoaded() && !page.isBusy(), kWaitMs);
      QVERIFY(context.modelName().contains("copy.pth"));
      auto* menu = page.findChild<QToolButton*>("recentModels")->menu();
      emit menu->aboutToShow();
      QCOMPARE(menu->actions().size(), 2);
      QVERIFY(menu->actions().at(1)->text().contains("demo"));
      menu->actions().at(1)->trigger();  // loads the demo model again
      QTRY_VERIFY_WITH_TIMEOUT(page.modelLoaded() && !page.isBusy(), kWaitMs);
      QCOMPARE(context.modelName(), QString("built-in demo model"));
    }
    QVERIFY(QFile::remove(copy));
    QSettings().setValue("caption/recent_models", QStringList{QString(R"({"model":"%1","checkpoint":"%2","vocab":"%3"})")
                                                                  .arg(model_, copy, vocab_)});
    StudioContext context;
    CaptionPage page(&context);
    page.restoreSettings();
    page.loadLastModel();
    QTRY_VERIFY_WITH_TIMEOUT(page.modelLoaded() && !page.isBusy(), kWaitMs);
    QCOMPARE(context.modelName(), QString("built-in demo model"));
    const QString note = page.describe().value("model_note").toString();
    QVERIFY2(note.contains(copy + " is gone") && note.contains("demo model is loaded instead"), qPrintable(note));
    QVERIFY(page.findChild<QWidget*>("demoNotice")->isVisibleTo(&page));
    QSettings().clear();
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

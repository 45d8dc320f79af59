// The Attention page as a user drives it, checked against the engine: the
// heat map shown for a word equals expnet::trace_caption's cross-attention for
// that word (mean, one layer, one head), the colour maps hold the trace's
// Static/Dynamic Expansion matrices, the keyboard steps through the words,
// saved PNGs decode to the engine's overlay, and --screenshot shows it all.
#include <QComboBox>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QListView>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QSlider>
#include <QTimer>
#include <QtTest>
#include <opencv2/imgcodecs.hpp>
#include <torch/torch.h>

#include <memory>

#include "shell/studiocontext.h"
#include "attention/attentionpage.h"
#include "attention/expansionplot.h"
#include "expnet/decode/captioner.h"
#include "expnet/image/image_decode.h"
#include "expnet/trace/trace.h"
#include "support/biased_model.h"
#include "support/fixtures.h"
#include "support/page_driving.h"
#include "support/studio_screenshot.h"
#include "support/tiny_reference.h"

namespace {
constexpr int kWaitMs = 120000;
constexpr double kTol = 1e-6;

// Largest |page - engine| over the grid cells.
double maxDiff(const std::vector<float>& shown, const at::Tensor& expected) {
  const auto e = expected.to(torch::kFloat).contiguous().view({-1});
  if (int64_t(shown.size()) != e.numel()) return 1e9;
  double worst = 0;
  for (int64_t i = 0; i < e.numel(); ++i) worst = std::max(worst, std::fabs(double(shown[size_t(i)]) - e[i].item<double>()));
  return worst;
}

// Largest |colour map cell - matrix entry|; the map's row r, column c is data cell (c, r).
double mapDiff(ExpansionPlot* plot, const at::Tensor& expected) {
  if (plot->matrixRows() != expected.size(0) || plot->matrixCols() != expected.size(1)) return 1e9;
  auto* data = plot->colorMap()->data();
  const auto e = expected.to(torch::kFloat).contiguous();
  const auto a = e.accessor<float, 2>();
  double worst = 0;
  for (int r = 0; r < plot->matrixRows(); ++r)
    for (int c = 0; c < plot->matrixCols(); ++c) worst = std::max(worst, std::fabs(data->cell(c, r) - a[r][c]));
  return worst;
}

std::vector<int64_t> greedyTokens(expnet::Captioner& captioner, const at::Tensor& input) {
  torch::NoGradGuard noGrad;
  expnet::DecodingOptions options;
  options.search = expnet::SearchKind::Greedy;
  options.beam_size = 1;
  options = captioner.complete(options);
  auto decoder = captioner.make_decoder(captioner.encode(input), expnet::DecoderKind::Incremental);
  return expnet::decode(*decoder, 1, captioner.special_tokens(options.block_bad_endings), options)
      .at(0).hypotheses.at(0).tokens;
}
}  // namespace

class TestAttentionPage : public QObject {
  Q_OBJECT
 private:
  QString model_, checkpoint_, vocab_, image_;
  std::shared_ptr<expnet::Captioner> captioner_;

 private slots:
  void initTestCase() {
    EXPNET_TINY_REFERENCE(model_, checkpoint_, vocab_, image_);
    captioner_ = expnet::Captioner::load({model_.toStdString(), checkpoint_.toStdString(), vocab_.toStdString()});
  }

  void withoutAModelThePageSaysWhatToDo() {
    StudioContext context;
    AttentionPage page(&context);
    page.show();
    page.openImage(image_);
    QVERIFY(!page.isBusy());  // nothing is loading: it waits for a model, it does not spin
    const QJsonObject d = page.describe();
    QCOMPARE(d.value("model_loaded").toBool(), false);
    QVERIFY(d.value("message").toString().contains("load a model"));
    QVERIFY(!page.trace());
    QString error;
    QVERIFY(!page.saveView(AttentionPage::View::HeatMap, expnet_test::makeTempDir("attention_none") + "/x.png", &error));
    QVERIFY(error.contains("nothing to save"));
    // With a model loaded, the page no longer asks for one: it names it and asks for an image.
    StudioContext loaded;
    AttentionPage fresh(&loaded);
    auto* hint = fresh.findChild<QLabel*>("beginHint");
    QVERIFY(hint && hint->text().contains("Load a model"));
    loaded.setCaptioner(captioner_);  // as the Caption page does: the name announces the model
    loaded.setModelName("tiny model");
    QTRY_VERIFY2(hint->text().contains("<b>tiny model</b> is loaded") && !hint->text().contains("Load a model"), qPrintable(hint->text()));
    QCOMPARE(fresh.describe().value("message").toString(), QStringLiteral("No trace: pick an image"));
  }

  void heatMapsAndExpansionMapsEqualTheEngineTrace() {
    StudioContext context;
    context.setCaptioner(captioner_);
    context.setModelName("tiny");
    AttentionPage page(&context);
    page.resize(1200, 800);
    page.show();
    QVERIFY(QTest::qWaitForWindowExposed(&page));
    page.setBeam(1);  // greedy: the tiny random model's beam caption is a single word

    // The event loop must keep turning while the worker traces.
    expnet_test::StallMeter stalls;
    QSignalSpy ready(&page, &AttentionPage::traceReady);
    context.setSelectedImage(image_);  // what the Caption page does when a row is selected
    QVERIFY(page.isBusy());
    QTRY_VERIFY_WITH_TIMEOUT(!page.isBusy(), kWaitMs);
    stalls.stop();
    QCOMPARE(ready.count(), 1);
    QVERIFY2(stalls.longestGapMs() < 500, qPrintable(QString("UI thread blocked for %1 ms").arg(stalls.longestGapMs())));

    // The engine, called directly: greedy caption, then the teacher-forced trace.
    const cv::Mat rgb = expnet::load_image_rgb(image_.toStdString());
    const at::Tensor input = captioner_->preprocess(rgb);
    const std::vector<int64_t> tokens = greedyTokens(*captioner_, input);
    const expnet::CaptionTrace ref = expnet::trace_caption(*captioner_, input, tokens);
    const auto trace = page.trace();
    QVERIFY(trace);
    QCOMPARE(trace->tokens.size(), qsizetype(tokens.size()));
    for (size_t i = 0; i < tokens.size(); ++i) QCOMPARE(trace->tokens.at(qsizetype(i)), qint64(tokens[i]));
    QCOMPARE(trace->caption, QString::fromStdString(captioner_->vocabulary().decode_text(tokens)));
    QVERIFY2(trace->wordCount() >= 4, qPrintable(trace->caption));
    QCOMPARE(page.selectedWord(), 0);
    QVERIFY(maxDiff(page.heatWeights(), ref.cross_attention[0].mean(std::vector<int64_t>{0, 1})) < kTol);

    // Click the third word of the caption.
    auto* words = page.findChild<QListView*>("caption");
    QVERIFY(words);
    const QRect third = words->visualRect(words->model()->index(2, 0));
    QVERIFY(third.isValid());
    QTest::mouseClick(words->viewport(), Qt::LeftButton, {}, third.center());
    QCOMPARE(page.selectedWord(), 2);
    QVERIFY(maxDiff(page.heatWeights(), ref.cross_attention[2].mean(std::vector<int64_t>{0, 1})) < kTol);
    QCOMPARE(page.describe().value("selected_word").toObject().value("text").toString(),
             QString::fromStdString(captioner_->vocabulary().word(tokens[3])));

    // One layer and one head, chosen in the combo boxes.
    auto* layer = page.findChild<QComboBox*>("layer");
    auto* head = page.findChild<QComboBox*>("head");
    QCOMPARE(layer->count(), 1 + int(ref.cross_attention.size(1)));
    QCOMPARE(head->count(), 1 + int(ref.cross_attention.size(2)));
    layer->setCurrentIndex(2);  // layer 2
    head->setCurrentIndex(1);   // head 1
    QCOMPARE(page.describe().value("layer").toInt(), 2);
    QCOMPARE(page.describe().value("head").toInt(), 1);
    QVERIFY(maxDiff(page.heatWeights(), ref.cross_attention[2][1][0]) < kTol);
    layer->setCurrentIndex(0);  // mean of layers, head 3
    head->setCurrentIndex(3);
    QVERIFY(maxDiff(page.heatWeights(), ref.cross_attention[2].select(1, 2).mean(0)) < kTol);
    QCOMPARE(page.describe().value("layer").toString(), QString("mean"));

    // The keyboard steps through the words, on the page and in the caption view.
    QTest::keyClick(&page, Qt::Key_Right);
    QCOMPARE(page.selectedWord(), 3);
    QVERIFY(maxDiff(page.heatWeights(), ref.cross_attention[3].select(1, 2).mean(0)) < kTol);
    words->setFocus();
    QTest::keyClick(words, Qt::Key_Left);
    QCOMPARE(page.selectedWord(), 2);
    QTest::keyClick(&page, Qt::Key_Left);
    QTest::keyClick(&page, Qt::Key_Left);
    QTest::keyClick(&page, Qt::Key_Left);  // stops at the first word
    QCOMPARE(page.selectedWord(), 0);
    QTest::keyClick(&page, Qt::Key_End);
    QCOMPARE(page.selectedWord(), trace->wordCount() - 1);

    // The heat map saved as PNG decodes to the engine's own overlay of the engine's weights.
    layer->setCurrentIndex(0);
    head->setCurrentIndex(0);
    page.selectWord(1);
    page.findChild<QSlider*>("opacity")->setValue(50);
    const QString dir = expnet_test::makeTempDir("attention_save");
    QString error;
    QVERIFY2(page.saveView(AttentionPage::View::HeatMap, dir + "/heat.png", &error), qPrintable(error));
    const cv::Mat saved = cv::imread((dir + "/heat.png").toStdString(), cv::IMREAD_COLOR);  // BGR
    QCOMPARE(saved.cols, rgb.cols);
    QCOMPARE(saved.rows, rgb.rows);
    const auto weights = ref.cross_attention[1].mean(std::vector<int64_t>{0, 1}).contiguous().view({4, 4});
    const cv::Mat grid(4, 4, CV_32F, weights.data_ptr<float>());
    const cv::Mat expected = expnet::attention_overlay(rgb, grid, 0.5);
    cv::Mat diff;
    cv::absdiff(saved, expected, diff);
    double worst = 0;
    cv::minMaxLoc(diff.reshape(1), nullptr, &worst);
    // Weights equal to float rounding can flip a JET level on a few pixels, no more.
    QVERIFY2(worst <= 8, qPrintable(QString("overlay differs by %1").arg(worst)));
    QVERIFY(cv::mean(diff)[0] < 0.5);

    // Static Expansion colour maps: the selected block of the trace matrix.
    const auto& groups = captioner_->config().num_exp_enc_list;
    QCOMPARE(int(groups.size()), 3);
    const int64_t start2 = groups[0] + groups[1];
    ExpansionPlot* plot = page.staticPlot();
    page.setStaticSelection(1, 2, 0, 1);  // encoder 2, group 3, forward, stream b
    QVERIFY(mapDiff(plot, ref.encoder[1].forward_b.narrow(0, start2, groups[2])) < kTol);
    page.setStaticSelection(0, 1, 1, 0);  // encoder 1, group 2, backward, stream a
    QVERIFY(mapDiff(plot, ref.encoder[0].backward_a.narrow(1, groups[0], groups[1])) < kTol);
    page.setStaticSelection(0, 0, 2, 0);  // encoder 1, group 1, scores z (signed: symmetric range)
    QVERIFY(mapDiff(plot, ref.encoder[0].z.narrow(0, 0, groups[0])) < kTol);
    QVERIFY(plot->colorMap()->dataRange().lower < 0);
    QCOMPARE(plot->colorMap()->dataRange().lower, -plot->colorMap()->dataRange().upper);
    // A slot's distribution over the image: its forward row.
    page.setStaticSelection(1, 2, 0, 1);
    page.setSlot(3);
    QVERIFY(maxDiff(page.slotWeights(), ref.encoder[1].forward_b[start2 + 2]) < kTol);

    // Dynamic Expansion: the whole matrix of a decoder layer, words as tick labels.
    page.setDynamicSelection(1, 0, 0);  // decoder 2, forward, stream a
    ExpansionPlot* dynamic = page.dynamicPlot();
    QVERIFY(mapDiff(dynamic, ref.decoder[1].forward_a) < kTol);
    page.setDynamicSelection(0, 1, 1);  // decoder 1, backward, stream b
    QVERIFY(mapDiff(dynamic, ref.decoder[0].backward_b) < kTol);
    const auto ticker = qSharedPointerDynamicCast<QCPAxisTickerText>(dynamic->yAxis->ticker());
    QVERIFY(ticker);
    QCOMPARE(ticker->ticks().size(), int(tokens.size()) - 1);
    QCOMPARE(ticker->ticks().value(0.0), QString::fromStdString(captioner_->vocabulary().word(tokens[0])));
    QCOMPARE(ticker->ticks().value(1.0), QString::fromStdString(captioner_->vocabulary().word(tokens[1])));

    // Every view saves as a PNG that decodes.
    for (auto view : {AttentionPage::View::StaticExpansion, AttentionPage::View::DynamicExpansion,
                      AttentionPage::View::Page}) {
      const QString file = dir + QString("/view%1.png").arg(int(view));
      QVERIFY2(page.saveView(view, file, &error), qPrintable(error));
      const QImage image(file);
      QVERIFY(!image.isNull() && image.width() > 100 && image.height() > 100);
    }

    const QJsonObject d = page.describe();
    QCOMPARE(d.value("caption").toString(), trace->caption);

    // A file that cannot be read: its error is shown, the last trace stays.
    QSignalSpy failed(&page, &AttentionPage::traceFailed);
    const QString missing = dir + "/missing.png";
    page.openImage(missing);
    QTRY_VERIFY_WITH_TIMEOUT(!page.isBusy(), kWaitMs);
    QCOMPARE(failed.count(), 1);
    QVERIFY2(failed.at(0).at(0).toString().contains("missing.png"), qPrintable(failed.at(0).at(0).toString()));
    QCOMPARE(page.trace(), trace);
    QCOMPARE(page.describe().value("requested_image").toString(), missing);
    QVERIFY(page.describe().value("error").toString().contains("missing.png"));
    QCOMPARE(d.value("maps").toArray().size(), 2);
    QCOMPARE(d.value("maps").toArray().at(1).toObject().value("rows").toInt(), int(ref.decoder[0].backward_b.size(0)));
  }

  void settingsAreRemembered() {
    QCoreApplication::setOrganizationName("expnet-test");  // not the user's settings
    QCoreApplication::setApplicationName("test_attention_page");
    QSettings().clear();
    StudioContext context;
    {
      AttentionPage page(&context);
      page.setBeam(3);
      page.findChild<QSlider*>("opacity")->setValue(70);
      page.setLayerChoice(1);
      page.setHeadChoice(2);
      page.findChild<QComboBox*>("staticDirection")->setCurrentIndex(1);
      page.findChild<QComboBox*>("dynamicStream")->setCurrentIndex(1);
      page.saveSettings();
    }
    AttentionPage page(&context);
    page.restoreSettings();
    QCOMPARE(page.findChild<QSpinBox*>("beam")->value(), 3);
    QCOMPARE(page.findChild<QSlider*>("opacity")->value(), 70);
    QCOMPARE(page.layerChoice(), 1);
    QCOMPARE(page.headChoice(), 2);
    QCOMPARE(page.findChild<QComboBox*>("staticDirection")->currentIndex(), 1);
    QCOMPARE(page.findChild<QComboBox*>("dynamicStream")->currentIndex(), 1);
    QSettings().clear();
  }

  // A checkpoint's decoding options: the Beam field shows its beam with a note, the
  // traced caption is decoded with all of them (max_word_run 1 against a model that
  // says "red red red"), and another model's load gives the user's beam back.
  void checkpointDecodingOptionsApply() {
    const QString dir = expnet_test::makeTempDir("attention_carried");
    expnet_test::saveBiasedRedModel(dir + "/carrying.pth", std::string(R"({"beam_size": 2, "max_word_run": 1})"));
    std::shared_ptr<expnet::Captioner> carrying = expnet::Captioner::load({"", (dir + "/carrying.pth").toStdString(), ""});
    StudioContext context;
    AttentionPage page(&context);
    page.show();
    QVERIFY(QTest::qWaitForWindowExposed(&page));
    auto* beam = page.findChild<QSpinBox*>("beam");
    auto* note = page.findChild<QLabel*>("decodingNote");
    const int userBeam = beam->value();
    context.setCaptioner(carrying);
    context.setModelName("carrying");
    QCOMPARE(beam->value(), 2);
    QCOMPARE(note->text(), QString("From the checkpoint: beam_size 2, max_word_run 1"));
    QSignalSpy ready(&page, &AttentionPage::traceReady);
    page.openImage(image_);
    QTRY_VERIFY_WITH_TIMEOUT(ready.count() == 1, kWaitMs);
    auto options = carrying->complete(carrying->carried_decoding().apply_to({}));
    const auto engine = carrying->caption_files({image_.toStdString()}, options);
    QCOMPARE(page.trace()->caption, QString::fromStdString(engine.at(0).texts.at(0)));
    QVERIFY2(!page.trace()->caption.contains("red red"), qPrintable(page.trace()->caption));

    context.setCaptioner(captioner_);  // the authors' format: it carries nothing
    context.setModelName("tiny");
    QCOMPARE(beam->value(), userBeam);
    QVERIFY(note->text().isEmpty());
    QTRY_VERIFY_WITH_TIMEOUT(!page.isBusy(), kWaitMs);
  }

  void aNewerImageReplacesTheOneBeingTraced() {
    StudioContext context;
    context.setCaptioner(captioner_);
    AttentionPage page(&context);
    page.show();
    QVERIFY(QTest::qWaitForWindowExposed(&page));
    const QString dir = expnet_test::makeTempDir("attention_replace");
    QVERIFY(QFile::copy(image_, dir + "/first.png"));
    QVERIFY(QFile::copy(image_, dir + "/second.png"));
    QSignalSpy ready(&page, &AttentionPage::traceReady);
    QSignalSpy failed(&page, &AttentionPage::traceFailed);
    page.openImage(dir + "/first.png");
    page.openImage(dir + "/second.png");
    QTRY_VERIFY_WITH_TIMEOUT(!page.isBusy(), kWaitMs);
    QTest::qWait(50);  // a stale answer, if any were sent, would arrive now
    QCOMPARE(ready.count(), 1);
    QCOMPARE(failed.count(), 0);
    QCOMPARE(page.trace()->path, dir + "/second.png");
  }

  // A PNAIC model cannot be traced: the previous model's maps leave the screen and the
  // error stands in full in the main area.
  void aPnaicModelClearsTheMapsAndSaysWhy() {
    StudioContext context;
    context.setCaptioner(captioner_);
    AttentionPage page(&context);
    page.show();
    QVERIFY(QTest::qWaitForWindowExposed(&page));
    page.openImage(image_);
    QTRY_VERIFY_WITH_TIMEOUT(!page.isBusy() && page.trace(), kWaitMs);
    context.setCaptioner(expnet::Captioner::load({"pnaic-demo-k5", "", ""}));
    QSignalSpy failed(&page, &AttentionPage::traceFailed);
    page.openImage(image_);
    QTRY_VERIFY_WITH_TIMEOUT(failed.count() == 1, kWaitMs);
    QVERIFY(!page.trace());
    QString error;
    QVERIFY(!page.saveView(AttentionPage::View::HeatMap, expnet_test::makeTempDir("attention_pnaic") + "/x.png", &error));
    bool shown = false;
    for (auto* label : page.findChildren<QLabel*>())
      shown = shown || (label->isVisible() && label->text().contains("Could not trace it") && label->text().contains("PNAIC"));
    QVERIFY2(shown, "the PNAIC error is not shown in full in the main area");
  }

  void screenshotShowsTheTracedWord() {
    const QString dir = expnet_test::makeTempDir("attention_screenshot");
    const QString png = dir + "/attention.png";
    const auto r = expnet_test::runStudioScreenshot(
        png, {"--page", "attention", "--model", model_, "--checkpoint", checkpoint_, "--vocab", vocab_, "--open", image_,
              "--beam", "1", "--word", "3", "--threads", "1"});
    QVERIFY2(r.exitCode == 0, r.err.constData());
    QVERIFY(!QImage(png).isNull());
    QJsonObject doc;
    expnet_test::readScreenshotDescription(png, &doc);
    if (QTest::currentTestFailed()) return;
    const QJsonObject content = doc.value("content").toObject();
    QCOMPARE(content.value("image").toString(), image_);
    QCOMPARE(content.value("selected_word").toObject().value("index").toInt(), 2);
    const QString word = content.value("words").toArray().at(2).toString();
    QVERIFY(!word.isEmpty());
    QCOMPARE(content.value("heat_map").toObject().value("word").toString(), word);
    QVERIFY(content.value("caption").toString().split(' ').contains(word));
  }
};

QTEST_MAIN(TestAttentionPage)
#include "test_attention_page.moc"

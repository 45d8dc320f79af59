// The built-in demo model: the file README describes (SHA-256, under 30 MB),
// `expnet caption --model demo` checked as a user would (check_demo_model.py:
// unseen shapes seed, foreign scenes drawn by Pillow), and the Caption page's
// Demo model button captioning a scene exactly as the engine does.
#include <QCryptographicHash>
#include <QElapsedTimer>
#include <QFile>
#include <QPushButton>
#include <QRegularExpression>
#include <QtTest>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "shell/studiocontext.h"
#include "caption/captionmodel.h"
#include "caption/captionpage.h"
#include "expnet/decode/captioner.h"
#include "expnet/model/demo_model.h"
#include "expnet/data/shapes_dataset.h"
#include "support/fixtures.h"

class TestDemoModel : public QObject {
  Q_OBJECT
 private slots:
  void fileIsTheOneReadmeDescribes() {
    const QString path = QString::fromStdString(expnet::demo_checkpoint_path());
    QFile file(path);
    QVERIFY(file.open(QIODevice::ReadOnly));
    QVERIFY2(file.size() < 30 * 1024 * 1024, qPrintable(QString::number(file.size())));
    const QString sha = QString::fromLatin1(QCryptographicHash::hash(file.readAll(), QCryptographicHash::Sha256).toHex());
    QFile readme(QStringLiteral(EXPNET_SOURCE_DIR "/README.md"));
    QVERIFY(readme.open(QIODevice::ReadOnly));
    const QString text = QString::fromUtf8(readme.readAll());
    const auto match = QRegularExpression(QStringLiteral("demo_model\\.pth SHA-256: `([0-9a-f]{64})`")).match(text);
    QVERIFY2(match.hasMatch(), "README must give the demo model's SHA-256 as: demo_model.pth SHA-256: `HEX`");
    QCOMPARE(match.captured(1), sha);
  }

  void captionsUnseenAndForeignScenes() {
    const QString work = expnet_test::makeTempDir(QStringLiteral("demo_check"));
    const auto result = expnet_test::runProcess(
        QStringLiteral("/usr/bin/python3"),
        {QStringLiteral(EXPNET_SOURCE_DIR "/tests/demo/check_demo_model.py"), expnet_test::cliPath(), work,
         // The targets: CIDEr-D >= 1.8, >= 80% of the objects' words named, and no
         // caption naming a colour or shape that is not there. The shipped model measured
         // CIDEr-D 3.269, 100% named and 0 of 40 (README).
         QStringLiteral("--min-cider"), QStringLiteral("1.8"), QStringLiteral("--min-named"), QStringLiteral("0.8"),
         QStringLiteral("--max-hallucinated"), QStringLiteral("0")},
        600000);
    qInfo().noquote() << result.out << result.err;
    QVERIFY(result.finished);
    QCOMPARE(result.exitCode, 0);
  }

  void demoButtonCaptionsAsTheEngineDoes() {
    const QString work = expnet_test::makeTempDir(QStringLiteral("demo_page"));
    const auto scene = expnet::make_shapes_scene(4242, 3);
    cv::Mat bgr;
    cv::cvtColor(expnet::render_shapes_scene(scene, 4242, 3), bgr, cv::COLOR_RGB2BGR);
    const QString image = work + QStringLiteral("/scene.png");
    QVERIFY(cv::imwrite(image.toStdString(), bgr));

    StudioContext context;
    CaptionPage page(&context);
    page.resize(1000, 700);
    page.show();
    auto* demo = page.findChild<QPushButton*>(QStringLiteral("demoModel"));
    QVERIFY(demo && demo->isEnabled());
    demo->click();
    QTRY_VERIFY_WITH_TIMEOUT(page.modelLoaded() && !page.isBusy(), 120000);
    page.addPaths({image});
    QTRY_VERIFY_WITH_TIMEOUT(page.model()->rowCount() == 1 && !page.isBusy(), 120000);
    const CaptionItem& shown = page.model()->item(0);
    QVERIFY2(shown.error.isEmpty(), qPrintable(shown.error));

    expnet::ModelSource source;
    source.model = "demo";
    auto engine = expnet::Captioner::load(source);
    expnet::DecodingOptions options;
    options.beam_size = 5;
    options.num_hypotheses = 3;
    const auto expected = engine->caption_files({image.toStdString()}, options, {}, 1, expnet::DecoderKind::Incremental);
    QCOMPARE(shown.caption(), QString::fromStdString(expected.at(0).texts.at(0)));
    // The caption names a colour of the scene: the model is trained, not random.
    bool names_colour = false;
    for (const auto& s : scene.shapes) names_colour = names_colour || shown.caption().contains(QString::fromStdString(s.color));
    QVERIFY2(names_colour, qPrintable(shown.caption()));
  }
};

QTEST_MAIN(TestDemoModel)
#include "test_demo_model.moc"

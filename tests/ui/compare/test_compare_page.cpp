// The Compare page as a user drives it: the demo models in their slots, images
// dropped and captioned by every mode (each caption equal to `expnet caption`'s
// with that model and options), a dataset evaluated (figures equal to `expnet
// compare --json`'s), cancelled, a broken checkpoint in one slot, the step
// replay, exports and the screenshot.
#include <QDir>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QCheckBox>
#include <QLineEdit>
#include <QSettings>
#include <QSpinBox>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QUrl>
#include <QtTest>

#include <filesystem>

#include "compare/comparepage.h"
#include "expnet/model/precision.h"
#include "expnet/system/system.h"
#include "compare/modelslots.h"
#include "compare/stepreplay.h"
#include "shell/studiocontext.h"
#include "support/fixtures.h"
#include "support/page_driving.h"
#include "support/studio_screenshot.h"

namespace {
const QStringList kModes = {"aic-greedy", "aic-beam3", "pnaic-k2", "pnaic-k5"};

bool waitIdle(const ComparePage& page) {
  return expnet_test::waitUntil([&] { return !page.isBusy(); });
}

QJsonObject slotState(const ComparePage& page, int slot) {
  for (const auto& s : page.describe().value("slots").toArray())
    if (s.toObject().value("slot").toInt() == slot) return s.toObject();
  return {};
}

QString plainText(QString html) { return html.remove(QRegularExpression("<[^>]*>")).replace("|", " ").simplified(); }
}  // namespace

class TestComparePage : public QObject {
  Q_OBJECT
 private:
  QString dir_, shapes_;
  QStringList images_;

  expnet_test::ProcessResult cli(const QStringList& args) const { return expnet_test::runProcess(expnet_test::cliPath(), args); }

  // `expnet caption --json` of one image: {text, steps}.
  QJsonObject caption(const QString& image, const QStringList& model) const {
    const auto r = cli(QStringList{"caption", "--json"} + model + QStringList{image});
    if (r.exitCode != 0) qWarning("%s", r.err.constData());
    const auto doc = QJsonDocument::fromJson(r.out.trimmed().split('\n').last()).object();
    const auto best = doc["captions"].toArray().first().toObject();
    return {{"text", best["text"]}, {"steps", best["steps"]}};
  }

 private slots:
  void initTestCase() {
    dir_ = expnet_test::makeTempDir("compare_page");
    shapes_ = dir_ + "/shapes";
    const auto r = cli({"dataset", "make-shapes", "--out", shapes_, "--images", "200", "--seed", "4243"});
    QVERIFY2(r.exitCode == 0, r.err.constData());
    for (const auto& name : QDir(shapes_ + "/images").entryList({"*.png"}, QDir::Files, QDir::Name))
      images_ << shapes_ + "/images/" + name;
    QCOMPARE(images_.size(), 200);
  }

  // Every row and mode: the caption and steps of `expnet caption` with that
  // model and options; a missing file fails on its own row.
  void rowsEqualTheCaptionCommand() {
    StudioContext context;
    ComparePage page(&context);
    page.resize(1200, 760);
    page.show();
    const QStringList images = images_.mid(0, 3);
    expnet_test::dropFiles(page, images + QStringList{dir_ + "/missing.png"});
    QVERIFY(waitIdle(page));
    const QJsonObject d = page.describe();
    QCOMPARE(d["modes"].toArray().toVariantList(), QVariant(kModes).toList());
    const QJsonArray rows = d["rows"].toArray();
    QCOMPARE(rows.size(), 4);
    const QMap<QString, QStringList> models = {{"aic-greedy", {"--model", "demo", "--search", "greedy"}},
                                               {"aic-beam3", {"--model", "demo", "--beam", "3"}},
                                               {"pnaic-k2", {"--model", "pnaic-demo-k2"}},
                                               {"pnaic-k5", {"--model", "pnaic-demo-k5"}}};
    for (int i = 0; i < 3; ++i) {
      const QJsonObject row = rows[i].toObject();
      QCOMPARE(row["image"].toString(), images[i]);
      const QJsonObject modes = row["modes"].toObject();
      for (const auto& mode : kModes) {
        const QJsonObject shown = modes[mode].toObject();
        const QJsonObject expected = caption(images[i], models[mode]);
        QCOMPARE(shown["text"].toString(), expected["text"].toString());
        QCOMPARE(shown["steps"].toInt(), expected["steps"].toInt());
        QVERIFY(shown["decode_ms"].toDouble() > 0);
        QCOMPARE(shown["groups"].toArray().size(), mode == "pnaic-k2" ? 2 : mode == "pnaic-k5" ? 5 : 0);
      }
    }
    QVERIFY(rows[3].toObject()["error"].toString().contains("no such file"));
    QVERIFY(rows[3].toObject()["modes"].toObject().isEmpty());
  }

  // A dropped file whose name is not UTF-8 is captioned by every mode, not "no such file".
  void droppedNonUtf8NameIsCaptioned() {
    StudioContext context;
    ComparePage page(&context);
    page.resize(1200, 760);
    page.show();
    const std::string dir = expnet_test::makeTempDir("compare_non_utf8").toStdString();
    const std::string name = dir + "/shape\xff.png";
    std::filesystem::copy_file(images_[2].toStdString(), name, std::filesystem::copy_options::overwrite_existing);
    expnet_test::dropUrls(page, {expnet_test::fileUrlOfBytes(name)});
    QVERIFY(waitIdle(page));
    const QJsonArray rows = page.describe()["rows"].toArray();
    QCOMPARE(rows.size(), 1);
    const QJsonObject row = rows[0].toObject();
    QVERIFY2(row["error"].toString().isEmpty(), qPrintable(row["error"].toString()));
    QCOMPARE(row["modes"].toObject()["aic-greedy"].toObject()["text"].toString(),
             caption(images_[2], {"--model", "demo", "--search", "greedy"})["text"].toString());
  }

  // The step replay: AIC shows one word per step, PNAIC one word per group.
  void replayShowsWordsPerStep() {
    StudioContext context;
    ComparePage page(&context);
    page.show();
    page.addPaths({images_[5]});
    QVERIFY(waitIdle(page));
    auto* replay = page.findChild<StepReplay*>("stepReplay");
    QVERIFY(replay);
    const QJsonObject row = page.describe()["rows"].toArray()[0].toObject()["modes"].toObject();
    int most = 0;
    for (const auto& mode : kModes) most = std::max(most, row[mode].toObject()["steps"].toInt());
    QCOMPARE(replay->steps(), most);
    replay->setStep(1);
    const QJsonObject first = replay->describe()["modes"].toObject();
    QCOMPARE(plainText(first["aic-greedy"].toString()).split(' ').size(), 1);
    const QJsonArray groups = row["pnaic-k5"].toObject()["groups"].toArray();
    int live = 0;  // groups with a word at step 1
    for (const auto& g : groups) live += g.toObject()["text"].toString().isEmpty() ? 0 : 1;
    QCOMPARE(plainText(first["pnaic-k5"].toString()).split(' ', Qt::SkipEmptyParts).size(), live);
    replay->setStep(replay->steps());
    QCOMPARE(plainText(replay->describe()["modes"].toObject()["aic-greedy"].toString()),
             row["aic-greedy"].toObject()["text"].toString());
  }

  // The dataset figures are `expnet compare --json`'s on the same images:
  // same captions, same scores; times are measured, so only present.
  void evaluationEqualsTheCompareCommand() {
    StudioContext context;
    ComparePage page(&context);
    page.show();
    page.evaluateDataset(shapes_, "all", 20);
    QVERIFY(waitIdle(page));
    QCOMPARE(page.describe()["evaluation"].toObject()["state"].toString(), QString("done"));
    const QJsonObject shown = QJsonDocument::fromJson(page.evaluationJson()).object();
    const auto r = cli({"compare", "--aic", "demo", "--pnaic", "pnaic-demo-k2", "--pnaic", "pnaic-demo-k5", "--beam", "3",
                        "--dataset", shapes_, "--split", "all", "--limit", "20", "--json"});
    QVERIFY2(r.exitCode == 0, r.err.constData());
    const QJsonObject expected = QJsonDocument::fromJson(r.out.trimmed()).object();
    QCOMPARE(shown["images"].toInt(), 20);
    const QJsonArray shownModes = shown["modes"].toArray(), expectedModes = expected["modes"].toArray();
    QCOMPARE(shownModes.size(), 4);
    for (int m = 0; m < 4; ++m) {
      const QJsonObject a = shownModes[m].toObject(), b = expectedModes[m].toObject();
      for (const char* key : {"name", "checkpoint", "groups", "beam", "steps_mean", "scores"}) QCOMPARE(a[key], b[key]);
      QVERIFY(a["decode_ms_per_image"].toDouble() > 0 && a["speedup"].toDouble() > 0);
    }
    const QJsonArray shownImages = shown["per_image"].toArray(), expectedImages = expected["per_image"].toArray();
    QCOMPARE(shownImages.size(), 20);
    for (int i = 0; i < 20; ++i) {
      const QJsonObject a = shownImages[i].toObject(), b = expectedImages[i].toObject();
      QCOMPARE(a["image"], b["image"]);
      for (const auto& mode : kModes) {
        QJsonObject ca = a["captions"].toObject()[mode].toObject(), cb = b["captions"].toObject()[mode].toObject();
        QVERIFY(ca.contains("decode_ms"));
        ca.remove("decode_ms");
        cb.remove("decode_ms");
        QCOMPARE(ca, cb);
      }
    }
    // The chart's points and the exports.
    const QJsonArray points = page.describe()["points"].toArray();
    QCOMPARE(points.size(), 4);
    QCOMPARE(points[3].toObject()["mode"].toString(), QString("pnaic-k5"));
    QCOMPARE(points[3].toObject()["CIDEr"].toDouble(), shownModes[3].toObject()["scores"].toObject()["CIDEr"].toDouble());
    page.exportJson(dir_ + "/compare.json");
    QFile json(dir_ + "/compare.json");
    QVERIFY(json.open(QIODevice::ReadOnly));
    QCOMPARE(QJsonDocument::fromJson(json.readAll()).object(), shown);
    page.exportFiguresCsv(dir_ + "/compare.csv");
    QFile csv(dir_ + "/compare.csv");
    QVERIFY(csv.open(QIODevice::ReadOnly));
    const QStringList lines = QString::fromUtf8(csv.readAll()).trimmed().split('\n');
    QCOMPARE(lines.size(), 5);
    QCOMPARE(lines[0], QString("mode,K,beam,steps,ms/image,speed-up,CIDEr-D,BLEU-4"));
    QVERIFY(lines[4].startsWith("pnaic-k5,5,1,"));
  }

  // Cancel stops a 200-image evaluation within a second; the page then evaluates again.
  void cancelStopsWithinASecond() {
    StudioContext context;
    ComparePage page(&context);
    page.show();
    page.evaluateDataset(shapes_, "all", 200);
    QVERIFY(expnet_test::waitUntil([&] { return page.describe()["evaluation"].toObject()["done"].toInt() >= 3; }));
    QElapsedTimer clock;
    clock.start();
    page.cancelEvaluation();
    QVERIFY(expnet_test::waitUntil([&] { return !page.evaluating(); }, 5000));
    const qint64 ms = clock.elapsed();
    qInfo("cancel of a 200-image evaluation took effect in %lld ms", ms);
    QVERIFY2(ms < 1000, qPrintable(QString("cancel took %1 ms").arg(ms)));
    const QJsonObject evaluation = page.describe()["evaluation"].toObject();
    QCOMPARE(evaluation["state"].toString(), QString("cancelled"));
    QVERIFY(evaluation["done"].toInt() < 200);
    page.evaluateDataset(shapes_, "all", 4);
    QVERIFY(waitIdle(page));
    QCOMPARE(page.describe()["evaluation"].toObject()["state"].toString(), QString("done"));
    QCOMPARE(page.describe()["points"].toArray().size(), 4);
  }

  // A broken checkpoint shows its error in its slot; the other slots keep working.
  void brokenCheckpointFailsInItsSlotOnly() {
    const QString broken = dir_ + "/broken.pth";
    QFile f(broken);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("this is not a checkpoint");
    f.close();
    StudioContext context;
    ComparePage page(&context);
    page.show();
    QVERIFY(waitIdle(page));
    page.modelSlots()->setSlot(1, broken);
    page.addPaths({images_[7]});
    QVERIFY(waitIdle(page));
    const QJsonObject failed = slotState(page, 1);
    QCOMPARE(failed["state"].toString(), QString("failed"));
    QVERIFY2(failed["message"].toString().contains(broken), qPrintable(failed["message"].toString()));
    QCOMPARE(slotState(page, 0)["state"].toString(), QString("loaded"));
    QCOMPARE(slotState(page, 2)["state"].toString(), QString("loaded"));
    const QJsonObject modes = page.describe()["rows"].toArray()[0].toObject()["modes"].toObject();
    QCOMPARE(modes.keys(), QStringList({"aic-beam3", "aic-greedy", "pnaic-k5"}));
    // A PNAIC model in the AIC slot: its error names the kind; the row waits for a usable AIC model.
    page.modelSlots()->setSlot(0, "pnaic-demo-k5");
    QVERIFY(waitIdle(page));
    QVERIFY(slotState(page, 0)["message"].toString().contains("PNAIC model"));
    page.evaluateDataset(shapes_, "all", 3);  // no AIC model: the evaluation says so and the page stays usable
    QVERIFY(waitIdle(page));
    const QJsonObject evaluation = page.describe()["evaluation"].toObject();
    QCOMPARE(evaluation["state"].toString(), QString("failed"));
    QVERIFY2(evaluation["message"].toString().contains("AIC model"), qPrintable(evaluation["message"].toString()));
    page.modelSlots()->setSlot(0, "demo");
    page.modelSlots()->setSlot(1, "pnaic-demo-k2");
    QVERIFY(waitIdle(page));
    QCOMPARE(page.describe()["rows"].toArray()[0].toObject()["modes"].toObject().keys(),
             QStringList({"aic-beam3", "aic-greedy", "pnaic-k2", "pnaic-k5"}));
  }

  // The Caption page's device (the studio's runtime) moves the compared models too.
  void modelsFollowTheStudiosDevice() {
    StudioContext context;
    ComparePage page(&context);
    page.show();
    QVERIFY(waitIdle(page));
    QCOMPARE(slotState(page, 0)["state"].toString(), QString("loaded"));
    // On a build without CUDA every slot says why; with CUDA they load there.
    const bool cuda = expnet_test::errorOf([] { expnet::check_device("cuda"); }).isEmpty();
    context.setRuntime(QStringLiteral("cuda"), 1);
    QCOMPARE(page.modelSlots()->device(), QString("cuda"));
    QVERIFY(waitIdle(page));
    for (int slot : {0, 1, 2}) {
      const QJsonObject state = slotState(page, slot);
      if (cuda) {
        QCOMPARE(state["state"].toString(), QString("loaded"));
      } else {
        QCOMPARE(state["state"].toString(), QString("failed"));
        QVERIFY2(state["message"].toString().contains("CUDA", Qt::CaseInsensitive),
                 qPrintable(state["message"].toString()));
      }
    }
    context.setRuntime(QStringLiteral("cpu"), 1);
    QVERIFY(waitIdle(page));
    for (int slot : {0, 1, 2}) QCOMPARE(slotState(page, slot)["state"].toString(), QString("loaded"));
  }

  // The Caption page's precision (issue 31) moves the compared models too: they
  // reload in it, say so, and evaluate as `expnet compare --precision` does.
  void modelsFollowTheStudiosPrecision() {
    const bool bf16 = expnet::bf16_is_fast("cpu");  // else bf16 falls back to fp32, and says so
    const QString precision = bf16 ? QStringLiteral("bf16") : QStringLiteral("fp32");
    StudioContext context;
    ComparePage page(&context);
    page.show();
    QVERIFY(waitIdle(page));
    context.setRuntime(QStringLiteral("cpu"), 1, precision);
    QVERIFY(waitIdle(page));
    for (int slot : {0, 1, 2}) {
      const QJsonObject state = slotState(page, slot);
      QCOMPARE(state["state"].toString(), QString("loaded"));
      QCOMPARE(state["message"].toString().contains("bf16"), bf16);
    }
    page.evaluateDataset(shapes_, "all", 6);
    QVERIFY(waitIdle(page));
    const QJsonObject shown = QJsonDocument::fromJson(page.evaluationJson()).object();
    const auto r = cli({"compare", "--aic", "demo", "--pnaic", "pnaic-demo-k2", "--pnaic", "pnaic-demo-k5", "--beam", "3",
                        "--dataset", shapes_, "--split", "all", "--limit", "6", "--precision", "bf16", "--json"});
    QVERIFY2(r.exitCode == 0, r.err.constData());
    const QJsonObject expected = QJsonDocument::fromJson(r.out.trimmed()).object();
    QCOMPARE(shown["precision"].toString(), expected["precision"].toString());
    const QJsonArray a = shown["per_image"].toArray(), b = expected["per_image"].toArray();
    QCOMPARE(a.size(), 6);
    for (int i = 0; i < 6; ++i)
      for (const auto& mode : kModes)
        QCOMPARE(a[i].toObject()["captions"].toObject()[mode].toObject()["text"],
                 b[i].toObject()["captions"].toObject()[mode].toObject()["text"]);
  }

  // The page's fields and slots are remembered (QSettings) and come back, loaded.
  void settingsComeBack() {
    QCoreApplication::setOrganizationName("expnet-test");  // not the user's settings
    QSettings().clear();
    {
      StudioContext context;
      ComparePage page(&context);
      page.findChild<QSpinBox*>("compareBeam")->setValue(5);
      page.findChild<QCheckBox*>("showDeleted")->setChecked(true);
      page.findChild<QLineEdit*>("compareDataset")->setText(shapes_);
      page.modelSlots()->removeSlot(1);  // only K = 5 left
      page.saveSettings();
    }
    StudioContext context;
    ComparePage page(&context);
    page.restoreSettings();
    page.show();
    QVERIFY(waitIdle(page));
    QCOMPARE(page.describe()["beam"].toInt(), 5);
    QCOMPARE(page.describe()["show_deleted"].toBool(), true);
    QCOMPARE(page.findChild<QLineEdit*>("compareDataset")->text(), shapes_);
    const QJsonArray slotList = page.describe()["slots"].toArray();
    QCOMPARE(slotList.size(), 2);
    QCOMPARE(slotList[1].toObject()["spec"].toString(), QString("pnaic-demo-k5"));
    QCOMPARE(slotList[1].toObject()["state"].toString(), QString("loaded"));
    QSettings().clear();
  }

  // `expnet-studio --screenshot F --page compare --open ... --dataset ...`: rows and points in F.json.
  void screenshotDescribesRowsAndPoints() {
    const QString png = dir_ + "/compare.png";
    const auto r = expnet_test::runStudioScreenshot(
        png, {"--page", "compare", "--theme", "dark", "--open", images_[0], "--open", images_[1], "--dataset", shapes_,
              "--split", "all", "--limit", "6"});
    QVERIFY2(r.exitCode == 0, r.err.constData());
    QJsonObject d;
    expnet_test::readScreenshotDescription(png, &d);
    if (QTest::currentTestFailed()) return;
    const QJsonObject content = d["content"].toObject();
    const QJsonArray rows = content["rows"].toArray();
    QCOMPARE(rows.size(), 2);
    for (const auto& row : rows) {
      const QJsonObject modes = row.toObject()["modes"].toObject();
      QCOMPARE(modes.size(), 4);
      QVERIFY(!modes["aic-greedy"].toObject()["text"].toString().isEmpty());
      QVERIFY(modes["pnaic-k5"].toObject()["steps"].toInt() > 0);
      QCOMPARE(modes["pnaic-k5"].toObject()["groups"].toArray().size(), 5);
    }
    const QJsonArray points = content["points"].toArray();
    QCOMPARE(points.size(), 4);
    for (const auto& p : points) {
      QVERIFY(kModes.contains(p.toObject()["mode"].toString()));
      QVERIFY(p.toObject()["decode_ms_per_image"].toDouble() > 0);
      QVERIFY(p.toObject()["CIDEr"].toDouble() > 0);
    }
    QVERIFY(QImage(png).width() > 0);
  }
};

QTEST_MAIN(TestComparePage)
#include "test_compare_page.moc"

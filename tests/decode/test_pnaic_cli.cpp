// `expnet caption`, `compare` and `checkpoint inspect` with a PNAIC checkpoint, as a
// user runs them. The PNAIC model is made in-process from the built-in demo
// model (init_pnaic_from_aic: its backbone, encoder and decoder, plus a group
// embedding of its own), so it is a real model of the demo's size and its
// captions are real decoder output; the images are a generated shapes set.
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>
#include <torch/torch.h>

#include "expnet/checkpoint/pth_writer.h"
#include "expnet/checkpoint/state_dict.h"
#include "expnet/decode/captioner.h"
#include "expnet/decode/decoding_comparison.h"
#include "expnet/model/expansion_net.h"
#include "expnet/model/pnaic.h"
#include "expnet/model/precision.h"
#include "support/fixtures.h"

using namespace expnet;

namespace {

QList<QJsonObject> jsonLines(const QByteArray& out) {
  QList<QJsonObject> lines;
  for (const QByteArray& line : out.trimmed().split('\n'))
    if (line.startsWith('{')) lines << QJsonDocument::fromJson(line).object();
  return lines;
}

// A K-group PNAIC model started from the demo model, saved as a checkpoint of
// ours; with_del false saves it with the demo's vocabulary (no DEL).
void savePnaicFromDemo(const QString& path, int64_t groups, bool with_del) {
  ModelSource demo;
  demo.model = "demo";
  auto teacher = Captioner::load(demo);
  auto config = teacher->config();
  config.pnaic_groups = groups;
  const auto vocab = teacher->vocabulary().with_del();
  torch::manual_seed(7);
  ExpansionNet student(config, vocab.size());
  init_pnaic_from_aic(*student, teacher->model(), /*with_decoder=*/true);
  {
    torch::NoGradGuard no_grad;
    student->pnaic_group_embed->weight.mul_(0.1);
  }
  CheckpointMetadata meta;
  meta.config_json = config.to_json();
  meta.vocabulary_json = with_del ? vocab.to_json() : teacher->vocabulary().to_json();
  save_checkpoint(path.toStdString(), module_state(*student), meta);
}

}  // namespace

class TestPnaicCli : public QObject {
  Q_OBJECT
  QString dir_, pnaic_, shapes_;

  expnet_test::ProcessResult cli(const QStringList& args) {
    return expnet_test::runProcess(expnet_test::cliPath(), args + QStringList{"--threads", "1"});
  }

  // `expnet caption --json` of one image with extra options: its first caption.
  QJsonObject caption(const QString& image, const QStringList& options) {
    const auto r = cli(QStringList{"caption", "--json"} + options + QStringList{image});
    if (r.exitCode != 0) qWarning() << r.err;
    const auto lines = jsonLines(r.out);
    return lines.isEmpty() ? QJsonObject() : lines[0]["captions"].toArray()[0].toObject();
  }

 private slots:
  void initTestCase() {
    dir_ = expnet_test::makeTempDir("pnaic_cli");
    pnaic_ = dir_ + "/pnaic_k3.pth";
    savePnaicFromDemo(pnaic_, 3, true);
    shapes_ = dir_ + "/shapes";
    const auto r = cli({"dataset", "make-shapes", "--out", shapes_, "--images", "5", "--seed", "4242", "--style", "classic"});
    QVERIFY2(r.exitCode == 0, r.err.constData());
  }

  void captionShowsGroupsAndSteps() {
    const QString image = QDir(shapes_ + "/images").entryInfoList(QDir::Files).first().absoluteFilePath();
    const auto r = cli({"caption", "--json", "--checkpoint", pnaic_, image});
    QVERIFY2(r.exitCode == 0, r.err.constData());
    QVERIFY2(r.err.contains("search greedy"), r.err.constData());  // no option needed: greedy per group
    const auto line = jsonLines(r.out).value(0);
    QCOMPARE(line["decoding"]["search"].toString(), QString("greedy"));
    QCOMPARE(line["decoding"]["beam_size"].toInt(), 1);
    const auto first = line["captions"].toArray()[0].toObject();
    const auto groups = first["groups"].toArray();
    QCOMPARE(groups.size(), 3);
    QStringList kept;
    int longest = 0;
    for (const auto& value : groups) {
      const auto g = value.toObject();
      const QString end = g["end"].toString();
      QVERIFY2(end == "eos" || end == "del" || end == "length", qPrintable(end));
      QCOMPARE(g["tokens"].toArray().size(), g["text"].toString().isEmpty() ? 0 : g["text"].toString().count(' ') + 1);
      if (end != "del" && !g["text"].toString().isEmpty()) kept << g["text"].toString();
      longest = std::max(longest, int(g["tokens"].toArray().size()) + (end == "length" ? 0 : 1));
    }
    QCOMPARE(first["text"].toString(), kept.join(' '));
    QCOMPARE(first["steps"].toInt(), longest);
    QVERIFY(first["steps"].toInt() >= 1);
  }

  void inspectAndErrors() {
    auto r = cli({"checkpoint", "inspect", pnaic_});
    QVERIFY2(r.out.contains("decoder: PNAIC, 3 groups, DEL id"), r.out.constData());
    const QString image = QDir(shapes_ + "/images").entryInfoList(QDir::Files).first().absoluteFilePath();
    r = cli({"caption", "--checkpoint", pnaic_, "--beam", "3", image});
    QVERIFY(r.exitCode != 0);
    QVERIFY2(r.err.contains("greedily per group") && r.err.contains("beam"), r.err.constData());
    r = cli({"caption", "--model", "demo", "--checkpoint", pnaic_, image});
    QVERIFY(r.exitCode != 0);
    QVERIFY2(r.err.contains("PNAIC model of 3 groups") && r.err.contains("an AIC model") &&
                 r.err.contains(pnaic_.toUtf8()),
             r.err.constData());
    const QString noDel = dir_ + "/pnaic_no_del.pth";
    savePnaicFromDemo(noDel, 2, false);
    r = cli({"caption", "--checkpoint", noDel, image});
    QVERIFY(r.exitCode != 0);
    QVERIFY2(r.err.contains("no DEL") && r.err.contains(noDel.toUtf8()), r.err.constData());
  }

  // compare's JSON, and each mode's captions equal `expnet caption`'s with that
  // model and options.
  void compareMatchesCaption() {
    const auto r = cli({"compare", "--aic", "demo", "--pnaic", pnaic_, "--beam", "2", "--dataset", shapes_, "--split",
                        "all", "--json"});
    QVERIFY2(r.exitCode == 0, r.err.constData());
    const auto doc = QJsonDocument::fromJson(r.out.trimmed()).object();
    QCOMPARE(doc["images"].toInt(), 5);
    QCOMPARE(doc["precision"].toString(), QString("fp32"));
    const auto modes = doc["modes"].toArray();
    QCOMPARE(modes.size(), 3);
    QStringList names;
    for (const auto& m : modes) {
      const auto mode = m.toObject();
      names << mode["name"].toString();
      for (const char* key : {"checkpoint", "groups", "beam", "steps_mean", "decode_ms_per_image", "speedup"})
        QVERIFY2(mode.contains(key), key);
      QCOMPARE(mode["scores"].toObject().keys(),
               QStringList({"Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4", "CIDEr", "ROUGE_L"}));
      QVERIFY(mode["decode_ms_per_image"].toDouble() > 0);
      QVERIFY(mode["steps_mean"].toDouble() >= 1);
    }
    QCOMPARE(names, QStringList({"aic-greedy", "aic-beam2", "pnaic-k3"}));
    QCOMPARE(modes[0].toObject()["speedup"].toDouble(), 1.0);
    QCOMPARE(modes[2].toObject()["groups"].toInt(), 3);
    QCOMPARE(modes[2].toObject()["checkpoint"].toString(), pnaic_);
    const auto perImage = doc["per_image"].toArray();
    QCOMPARE(perImage.size(), 5);
    for (int i = 0; i < 2; ++i) {
      const auto entry = perImage[i].toObject();
      const QString image = entry["image"].toString();
      QVERIFY2(QFileInfo(image).isAbsolute() && QFileInfo::exists(image), qPrintable(image));
      const auto captions = entry["captions"].toObject();
      QCOMPARE(captions["aic-greedy"]["text"].toString(),
               caption(image, {"--model", "demo", "--search", "greedy"})["text"].toString());
      QCOMPARE(captions["aic-beam2"]["text"].toString(),
               caption(image, {"--model", "demo", "--beam", "2"})["text"].toString());
      const auto pnaic = caption(image, {"--checkpoint", pnaic_});
      QCOMPARE(captions["pnaic-k3"]["text"].toString(), pnaic["text"].toString());
      QCOMPARE(captions["pnaic-k3"]["steps"].toInt(), pnaic["steps"].toInt());
      QCOMPARE(captions["pnaic-k3"]["groups"].toArray().size(), 3);
    }
    const auto table = cli({"compare", "--aic", "demo", "--pnaic", pnaic_, "--dataset", shapes_, "--split", "all", "--limit", "2"});
    QVERIFY2(table.exitCode == 0 && table.out.contains("pnaic-k3") && table.out.contains("CIDEr-D"), table.out.constData());
    const auto wrong = cli({"compare", "--aic", pnaic_, "--pnaic", pnaic_, shapes_ + "/images"});
    QVERIFY(wrong.exitCode != 0);
    QVERIFY2(wrong.err.contains("--aic takes an AIC model"), wrong.err.constData());
  }

  // --precision bf16 (issue 31): every model decodes in bf16 (fp32 with a
  // warning where the CPU lacks it), exactly as `expnet caption --precision`.
  void compareInBf16MatchesCaptionInBf16() {
    const auto r = cli({"compare", "--aic", "demo", "--pnaic", pnaic_, "--beam", "2", "--dataset", shapes_, "--split",
                        "all", "--limit", "2", "--precision", "bf16", "--json"});
    QVERIFY2(r.exitCode == 0, r.err.constData());
    const auto doc = QJsonDocument::fromJson(r.out.trimmed()).object();
    QCOMPARE(doc["precision"].toString(), QString(expnet::bf16_is_fast("cpu") ? "bf16" : "fp32"));
    const auto perImage = doc["per_image"].toArray();
    QCOMPARE(perImage.size(), 2);
    for (const auto& value : perImage) {
      const auto entry = value.toObject();
      const QString image = entry["image"].toString();
      const auto captions = entry["captions"].toObject();
      QCOMPARE(captions["aic-beam2"]["text"].toString(),
               caption(image, {"--model", "demo", "--beam", "2", "--precision", "bf16"})["text"].toString());
      QCOMPARE(captions["pnaic-k3"]["text"].toString(),
               caption(image, {"--checkpoint", pnaic_, "--precision", "bf16"})["text"].toString());
    }
    const auto bad = cli({"compare", "--aic", "demo", "--pnaic", pnaic_, "--precision", "fp8", shapes_ + "/images"});
    QVERIFY(bad.exitCode != 0);
    QVERIFY2(bad.err.contains("--precision") && bad.err.contains("bf16"), bad.err.constData());
  }

  // The engine function the Compare page calls stops at the next image when
  // asked to, with its own exception.
  void compareCancels() {
    ComparisonRequest request;
    request.aic = "demo";
    request.pnaic = {pnaic_.toStdString()};
    for (const auto& info : QDir(shapes_ + "/images").entryInfoList(QDir::Files))
      request.images.push_back(info.absoluteFilePath().toStdString());
    size_t done = 0;
    request.progress = [&](size_t, size_t images) { done = images; };
    request.cancelled = [&] { return done >= 2; };
    QVERIFY_EXCEPTION_THROWN(compare_decoding(request), ComparisonCancelled);
    QCOMPARE(done, size_t{2});
  }
};

QTEST_GUILESS_MAIN(TestPnaicCli)
#include "test_pnaic_cli.moc"

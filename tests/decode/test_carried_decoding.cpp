// Decoding options a checkpoint of ours carries ("expnet_decoding"): parsed
// strictly, written by save_checkpoint, the trainer (the recipe's "decoding")
// and `checkpoint export --decoding`, shown by `checkpoint inspect`, applied by
// the Captioner's users, `expnet caption` and `explain` unless a flag overrides
// them, and refused with the file and the key when bad.
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>
#include <torch/torch.h>

#include <opencv2/imgcodecs.hpp>

#include "expnet/decode/carried_decoding.h"
#include "expnet/train/train_config.h"
#include "support/biased_model.h"
#include "support/fixtures.h"

using namespace expnet;

namespace {

using expnet_test::errorOf;

// A checkpoint of ours whose "expnet_decoding" is `value` as given (no check on writing).
void saveRawDecoding(const QString& path, const std::function<pickle::Value*(PthWriter&)>& value) {
  PthWriter writer;
  auto& arena = writer.arena();
  pickle::Value* root = arena.dict();
  auto captioner = expnet_test::biasedRedModel(1);
  root->dict_set(arena.str("model_state_dict"), writer.ordered_dict(module_state(captioner->model())));
  root->dict_set(arena.str("expnet_config"), arena.str(captioner->config().to_json()));
  root->dict_set(arena.str("expnet_vocabulary"), arena.str(captioner->vocabulary().to_json()));
  root->dict_set(arena.str("expnet_decoding"), value(writer));
  writer.write(path.toStdString(), *root);
}

QString writeImage(const QString& dir) {
  cv::Mat image(96, 128, CV_8UC3);
  cv::randu(image, 0, 255);
  const QString path = dir + QStringLiteral("/scene.png");
  cv::imwrite(path.toStdString(), image);
  return path;
}

QJsonObject firstJsonLine(const QByteArray& out) {
  return QJsonDocument::fromJson(out.trimmed().split('\n').value(0)).object();
}

QStringList strings(const QJsonValue& array) {
  QStringList out;
  for (const auto& v : array.toArray()) out << v.toString();
  return out;
}

}  // namespace

class TestCarriedDecoding : public QObject {
  Q_OBJECT
  QString dir_, carrying_, image_;

 private slots:
  void initTestCase() {
    dir_ = expnet_test::makeTempDir(QStringLiteral("carried_decoding"));
    carrying_ = dir_ + QStringLiteral("/carrying.pth");
    expnet_test::saveBiasedRedModel(carrying_, std::string(R"({"max_word_run": 1, "beam_size": 2})"));
    image_ = writeImage(dir_);
  }

  void parsedStrictlyAndWrittenBack() {
    const auto c = CarriedDecoding::from_json(R"({"max_word_run": 1, "beam_size": 2, "search": "beam"})", "src");
    QCOMPARE(c.keys, (std::vector<std::string>{"search", "beam_size", "max_word_run"}));  // the table's order
    QCOMPARE(c.to_json(), std::string(R"({"search":"beam","beam_size":2,"max_word_run":1})"));
    QCOMPARE(c.describe(), std::string("search beam, beam_size 2, max_word_run 1"));
    QCOMPARE(c.describe({"beam_size"}), std::string("search beam, max_word_run 1"));
    DecodingOptions mine;
    mine.beam_size = 7;
    mine.no_repeat_ngram_size = 3;
    const DecodingOptions applied = c.apply_to(mine, {"beam_size"});  // the user's beam wins
    QCOMPARE(applied.beam_size, 7);
    QCOMPARE(applied.max_word_run, 1);
    QCOMPARE(applied.no_repeat_ngram_size, 3);  // not carried: left as it was
    QCOMPARE(CarriedDecoding::from_json(c.to_json(), "again").to_json(), c.to_json());
    QVERIFY(CarriedDecoding::from_json("{}", "none").empty());
    QCOMPARE(QString::fromStdString(decoding_options_json(applied)).count(QLatin1Char(':')),
             qsizetype(decoding_option_keys().size()));

    QVERIFY(errorOf([] { CarriedDecoding::from_json(R"({"beam": 3})", "f.pth"); })
                .startsWith(QStringLiteral("f.pth: unknown decoding option 'beam' (known: search, beam_size, ")));
    QCOMPARE(errorOf([] { CarriedDecoding::from_json(R"({"beam_size": "3"})", "f.pth"); }),
             QStringLiteral("f.pth: decoding option 'beam_size' must be a whole number, not \"3\""));
    QCOMPARE(errorOf([] { CarriedDecoding::from_json(R"({"search": "nucleus"})", "f.pth"); }),
             QStringLiteral("f.pth: decoding option 'search' must be beam, greedy or sample, not \"nucleus\""));
    QVERIFY(errorOf([] { CarriedDecoding::from_json(R"({"max_word_run": -1})", "f.pth"); }).contains("max word run must be >= 0"));
    QVERIFY(errorOf([] { CarriedDecoding::from_json(R"({"beam_size": 2, "num_hypotheses": 4})", "f.pth"); })
                .contains("cannot exceed the beam size"));
    QVERIFY(errorOf([] { CarriedDecoding::from_json("[3]", "f.pth"); }).contains("must be a JSON object"));
  }

  void checkpointCarriesThemAndTheCaptionerAppliesThem() {
    auto captioner = Captioner::load({"", carrying_.toStdString(), ""});
    const CarriedDecoding& carried = captioner->carried_decoding();
    QCOMPARE(carried.to_json(), std::string(R"({"beam_size":2,"max_word_run":1})"));
    const int64_t red = captioner->vocabulary().id("red");
    const auto count_runs = [&](const std::vector<int64_t>& t) {
      int runs = 0;
      for (size_t i = 2; i < t.size(); ++i) runs += t[i] == red && t[i - 1] == red;
      return runs;
    };
    const auto with = captioner->caption_files({image_.toStdString()}, carried.apply_to({}));
    const auto without = captioner->caption_files({image_.toStdString()}, {});
    QCOMPARE(count_runs(with.at(0).captions.at(0).tokens), 0);
    QVERIFY(count_runs(without.at(0).captions.at(0).tokens) > 0);  // the options make the difference

    // A checkpoint written without them carries none, as the authors' files.
    const QString plain = dir_ + QStringLiteral("/plain.pth");
    expnet_test::saveBiasedRedModel(plain, std::nullopt);
    QVERIFY(Captioner::load({"", plain.toStdString(), ""})->carried_decoding().empty());
    expnet_test::saveBiasedRedModel(plain, std::string("{}"));
    QVERIFY(!PthFile(plain.toStdString()).root().find("expnet_decoding"));
    // Bad options are never written.
    const QString refused = dir_ + QStringLiteral("/refused.pth");
    const QString error = errorOf([&] { expnet_test::saveBiasedRedModel(refused, std::string(R"({"max_word_runs": 1})")); });
    QVERIFY2(error.contains("refused.pth") && error.contains("'max_word_runs'"), qPrintable(error));
    QVERIFY(!QFileInfo::exists(refused));
  }

  void badOptionsInAFileNameTheFileAndTheKey() {
    const QString unknown = dir_ + QStringLiteral("/unknown_key.pth");
    saveRawDecoding(unknown, [](PthWriter& w) { return w.arena().str(R"({"beam_width": 3})"); });
    QString error = errorOf([&] { Captioner::load({"", unknown.toStdString(), ""}); });
    QVERIFY2(error.startsWith(unknown) && error.contains("unknown decoding option 'beam_width'") &&
                 error.contains("expnet checkpoint export"),
             qPrintable(error));
    const QString notText = dir_ + QStringLiteral("/not_text.pth");
    saveRawDecoding(notText, [](PthWriter& w) { return w.arena().integer(3); });
    error = errorOf([&] { Captioner::load({"", notText.toStdString(), ""}); });
    QVERIFY2(error.startsWith(notText) && error.contains("'expnet_decoding'"), qPrintable(error));
    // The CLI says the same and stops.
    const auto r = expnet_test::runProcess(expnet_test::cliPath(), {"caption", "--checkpoint", unknown, image_});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.contains("unknown decoding option 'beam_width'"), r.err.constData());
  }

  void captionCommandStartsFromThemAndFlagsWin() {
    const QStringList base{"caption", "--checkpoint", carrying_, "--json", "--threads", "1", image_};
    auto r = expnet_test::runProcess(expnet_test::cliPath(), base);
    QCOMPARE(r.exitCode, 0);
    QVERIFY2(r.err.contains("decoding options from the checkpoint: beam_size 2, max_word_run 1 (override with --beam, "
                            "--max-word-run)"),
             r.err.constData());
    QJsonObject line = firstJsonLine(r.out);
    QJsonObject used = line.value("decoding").toObject();
    QCOMPARE(used.value("beam_size").toInt(), 2);
    QCOMPARE(used.value("max_word_run").toInt(), 1);
    QCOMPARE(used.value("max_length").toInt(), 20);  // the model's max_seq_len, filled in
    QCOMPARE(strings(used.value("from_checkpoint")), QStringList({"beam_size", "max_word_run"}));
    const QString carriedCaption = line.value("captions").toArray().at(0).toObject().value("text").toString();
    QVERIFY2(!carriedCaption.contains("red red"), qPrintable(carriedCaption));
    auto captioner = Captioner::load({"", carrying_.toStdString(), ""});
    const auto engine = captioner->caption_files({image_.toStdString()}, captioner->carried_decoding().apply_to({}));
    QCOMPARE(carriedCaption, QString::fromStdString(engine.at(0).texts.at(0)));

    r = expnet_test::runProcess(expnet_test::cliPath(), base + QStringList{"--max-word-run", "0"});
    QCOMPARE(r.exitCode, 0);
    QVERIFY2(r.err.contains("beam_size 2 (override with --beam); overridden on the command line: max_word_run "
                            "(--max-word-run)"),
             r.err.constData());
    line = firstJsonLine(r.out);
    used = line.value("decoding").toObject();
    QCOMPARE(used.value("max_word_run").toInt(), 0);
    QCOMPARE(strings(used.value("from_checkpoint")), QStringList({"beam_size"}));
    QVERIFY(line.value("captions").toArray().at(0).toObject().value("text").toString().contains("red red"));

    r = expnet_test::runProcess(expnet_test::cliPath(), base + QStringList{"--beam", "3", "--max-word-run", "2"});
    QCOMPARE(r.exitCode, 0);
    QVERIFY2(r.err.contains("all overridden on the command line"), r.err.constData());
    used = firstJsonLine(r.out).value("decoding").toObject();
    QCOMPARE(used.value("beam_size").toInt(), 3);
    QVERIFY(strings(used.value("from_checkpoint")).isEmpty());

    // explain decodes with them too.
    r = expnet_test::runProcess(expnet_test::cliPath(), {"explain", "--checkpoint", carrying_, "--threads", "1", "--out",
                                                         dir_ + "/explain", image_});
    QCOMPARE(r.exitCode, 0);
    QVERIFY2(r.err.contains("decoding options from the checkpoint: beam_size 2, max_word_run 1"), r.err.constData());
    QCOMPARE(QString::fromUtf8(r.out.trimmed()), carriedCaption);
  }

  void exportSetsKeepsAndClearsAndInspectShows() {
    const QString set = dir_ + QStringLiteral("/set.pth"), kept = dir_ + QStringLiteral("/kept.pth"),
                  cleared = dir_ + QStringLiteral("/cleared.pth"), bad = dir_ + QStringLiteral("/bad.pth");
    const auto exportTo = [&](const QString& in, const QString& out, const QStringList& extra) {
      return expnet_test::runProcess(expnet_test::cliPath(),
                                     QStringList{"checkpoint", "export", "--checkpoint", in, "--out", out} + extra);
    };
    QCOMPARE(exportTo(carrying_, set, {"--decoding", R"({"no_repeat_ngram_size": 3})"}).exitCode, 0);
    QCOMPARE(Captioner::load({"", set.toStdString(), ""})->carried_decoding().to_json(),
             std::string(R"({"no_repeat_ngram_size":3})"));
    QCOMPARE(exportTo(set, kept, {}).exitCode, 0);  // without --decoding: the input's
    QCOMPARE(Captioner::load({"", kept.toStdString(), ""})->carried_decoding().to_json(),
             std::string(R"({"no_repeat_ngram_size":3})"));
    QCOMPARE(exportTo(set, cleared, {"--decoding", "{}"}).exitCode, 0);
    QVERIFY(Captioner::load({"", cleared.toStdString(), ""})->carried_decoding().empty());
    const auto r = exportTo(set, bad, {"--decoding", R"({"beam_size": 0})"});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.contains("bad.pth") && r.err.contains("beam size must be 1 to 256, not 0"), r.err.constData());
    QVERIFY(!QFileInfo::exists(bad));

    auto inspect = expnet_test::runProcess(expnet_test::cliPath(), {"checkpoint", "inspect", carrying_});
    QCOMPARE(inspect.exitCode, 0);
    QVERIFY2(inspect.out.contains("decoding options carried: beam_size 2, max_word_run 1"), inspect.out.constData());
    inspect = expnet_test::runProcess(expnet_test::cliPath(), {"checkpoint", "inspect", cleared});
    QVERIFY2(inspect.out.contains("decoding options carried: none"), inspect.out.constData());
  }

  void recipeKeyReachesEveryCheckpoint() {
    const TrainConfig demo = train_preset("shapes-demo");
    QCOMPARE(demo.decoding_json, std::string(R"({"beam_size":3,"no_repeat_ngram_size":3,"max_word_run":1})"));
    QCOMPARE(train_preset("paper").decoding_json, std::string("{}"));
    const QString error = errorOf([] { TrainConfig::from_json(R"({"model": "tiny", "decoding": {"beams": 3}, "stages": [{}]})", "cfg"); });
    QVERIFY2(error.startsWith("cfg decoding: unknown decoding option 'beams'"), qPrintable(error));
    auto printed = expnet_test::runProcess(expnet_test::cliPath(), {"train", "--preset", "shapes-demo", "--print-config"});
    QCOMPARE(printed.exitCode, 0);
    const QJsonObject decoding = QJsonDocument::fromJson(printed.out).object().value("decoding").toObject();
    QCOMPARE(decoding, QJsonObject({{"beam_size", 3}, {"no_repeat_ngram_size", 3}, {"max_word_run", 1}}));

    // A run of a few steps: its checkpoints carry the recipe's options.
    const QString config = dir_ + QStringLiteral("/run.json"), out = dir_ + QStringLiteral("/run");
    QFile file(config);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(R"({"name": "carried", "model": {"swin_img_size": 32, "swin_patch_size": 4, "swin_in_chans": 3,
      "swin_embed_dim": 16, "swin_depths": [1, 1], "swin_num_heads": [1, 2], "swin_window_size": 4,
      "swin_mlp_ratio": 2.0, "swin_qkv_bias": true, "swin_ape": false, "swin_patch_norm": true, "final_swin_dim": 32,
      "d_model": 32, "N_enc": 1, "N_dec": 1, "ff": 64, "num_heads": 2, "num_exp_enc_list": [4, 8], "num_exp_dec": 4,
      "max_seq_len": 22},
      "shapes_images": 30, "vocab_min_count": 1, "validation_images": 3, "workers": 1,
      "decoding": {"max_word_run": 1, "no_repeat_ngram_size": 4},
      "stages": [{"name": "xe", "objective": "xe", "backbone": "train", "batch": 4, "epochs": 1,
                  "max_batches_per_epoch": 2}]})");
    file.close();
    const auto run = expnet_test::runProcess(expnet_test::cliPath(),
                                             {"train", "--config", config, "--out", out, "--threads", "1", "--no-progress"});
    QVERIFY2(run.exitCode == 0, run.err.constData());
    const QStringList written = QDir(out + "/checkpoints").entryList({"*.pth"});
    QVERIFY(written.contains("best.pth") && written.size() >= 2);
    for (const QString& name : written)
      QCOMPARE(Captioner::load({"", (out + "/checkpoints/" + name).toStdString(), ""})->carried_decoding().to_json(),
               std::string(R"({"no_repeat_ngram_size":4,"max_word_run":1})"));  // the keys' order
  }
};

QTEST_GUILESS_MAIN(TestCarriedDecoding)
#include "test_carried_decoding.moc"

// expnet train --ablation and expnet runs table (docs/training.md, "Ablations"):
// a tiny ablation trains one run per variant with the layer kinds it names, an
// interrupted or repeated ablation keeps finished runs, a variant may change the
// precision, the table reads every run back, a backbone_checkpoint starts a run from another run's backbone, and
// bad ablation files are refused naming the variant and the key.
#include <torch/torch.h>

#include <QFile>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <fstream>

#include "expnet/checkpoint/pth_writer.h"
#include "expnet/checkpoint/state_dict.h"
#include "expnet/model/expansion_net.h"
#include "expnet/train/ablation.h"
#include "expnet/train/backbone_init.h"
#include "support/fixtures.h"

using nlohmann::json;

namespace {

json tiny_base() {
  std::ifstream in(EXPNET_TRAIN_TEST_DIR "/tiny_train.json");
  json base = json::parse(in);
  base["checkpoint_every"] = 0;
  base["validation_images"] = 4;
  base["stages"] = json::parse(R"([{"name": "xe", "objective": "xe", "backbone": "frozen", "batch": 3,
    "batch_unit": "image", "lr": 1e-3, "schedule": "linear", "warmup": 4, "epochs": 2, "clip": 1.0,
    "dropout": 0.1, "max_batches_per_epoch": 4}])");
  return base;
}

QString write_json(const QString& path, const json& doc) {
  std::ofstream(path.toStdString()) << doc.dump(1);
  return path;
}

QString errorOfPlan(const json& doc) {
  return expnet_test::errorOf([&] { expnet::ablation_from_json(doc.dump(), "plan.json"); });
}

}  // namespace

class TestAblation : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() { qputenv("EXPNET_HOME", expnet_test::makeTempDir("ablation_home").toUtf8()); }

  void planErrorsNameTheVariantAndKey() {
    const json base = tiny_base();
    auto e = errorOfPlan({{"name", "a"}, {"base", base}, {"variants", {{{"name", "x"}, {"stages", json::array()}}}}});
    QVERIFY2(e.contains("variant 0 'x'") && e.contains("'stages'") && e.contains("only model, seed and precision"),
             qPrintable(e));
    e = errorOfPlan({{"name", "a"}, {"base", base}, {"variants", {{{"name", "half"}, {"precision", "fp16"}}}}});
    QVERIFY2(e.contains("variant 0 'half'") && e.contains("precision") && e.contains("fp16") && e.contains("bf16"),
             qPrintable(e));
    e = errorOfPlan({{"name", "a"}, {"base", base}, {"variants", {{{"name", "x"}}, {{"name", "x"}}}}});
    QVERIFY2(e.contains("variant 1 'x'") && e.contains("another variant has this name"), qPrintable(e));
    e = errorOfPlan({{"name", "a"},
                     {"base", base},
                     {"variants", {{{"name", "dyn"}, {"model", {{"encoder_layer", "dynamic_expansion"}}}}}}});
    QVERIFY2(e.contains("'dyn'") && e.contains("num_exp_enc_list") && e.contains("exactly one"), qPrintable(e));
    e = errorOfPlan({{"name", "a"}, {"base", base}, {"variants", {{{"name", "k"}, {"model", {{"decoder_layer", "rnn"}}}}}}});
    QVERIFY2(e.contains("decoder_layer") && e.contains("self_attention"), qPrintable(e));
    e = errorOfPlan({{"name", "a"}, {"base", "no-such-preset"}, {"variants", {{{"name", "k"}}}}});
    QVERIFY2(e.contains("no-such-preset"), qPrintable(e));
    // The shipped ablation parses, every variant differing from the base only in its model or seed.
    const auto shipped = expnet::read_ablation(EXPNET_SOURCE_DIR "/resources/ablations/ablation-shapes.json");
    QVERIFY(shipped.variants.size() >= 10);
    for (const auto& v : shipped.variants) {
      QCOMPARE(v.config.stages.size(), size_t(1));
      QCOMPARE(v.config.backbone_checkpoint, std::string("demo"));
    }
    // The shipped precision check (docs/training.md, "Quality again"): fp32 and bf16
    // pairs of one recipe, each pair the same but for the precision.
    const auto precision = expnet::read_ablation(EXPNET_SOURCE_DIR "/resources/ablations/precision-shapes.json");
    QCOMPARE(precision.variants.size(), size_t(14));
    for (size_t i = 0; i < precision.variants.size(); i += 2) {
      auto fp32 = precision.variants[i].config, bf16 = precision.variants[i + 1].config;
      QVERIFY(fp32.precision == expnet::TrainPrecision::fp32 && bf16.precision == expnet::TrainPrecision::bf16);
      QCOMPARE(fp32.seed, uint64_t(i / 2 + 1));
      fp32.name = bf16.name;
      fp32.precision = bf16.precision;
      QCOMPARE(fp32.to_json(), bf16.to_json());
    }
  }

  // backbone_checkpoint from files without our metadata: the authors' layout
  // (swin_transf.* names) and Microsoft's (no prefix, a classifier head).
  void backboneFromOtherCheckpoints() {
    const QString dir = expnet_test::makeTempDir("ablation_backbone");
    const auto config = expnet::tiny_model_config();
    torch::manual_seed(1);
    expnet::ExpansionNet source(config, 30);
    const auto state = expnet::module_state(*source);
    const auto write = [&](const std::string& path, const expnet::NamedTensors& tensors) {
      expnet::PthWriter writer;
      writer.write(path, *writer.ordered_dict(tensors));
    };
    const std::string authors = (dir + "/authors.pth").toStdString(), microsoft = (dir + "/swin.pth").toStdString();
    write(authors, state);
    expnet::NamedTensors swin_only;
    for (const auto& [name, tensor] : state)
      if (name.rfind("swin_transf.", 0) == 0) swin_only.emplace_back(name.substr(12), tensor);
    swin_only.emplace_back("head.weight", torch::zeros({5, config.final_swin_dim}));
    write(microsoft, swin_only);
    for (const auto& path : {authors, microsoft}) {
      torch::manual_seed(2);
      expnet::ExpansionNet target(config, 30);
      QVERIFY(expnet::init_backbone_from_checkpoint(*target, path, "the test") > 10);
      const auto loaded = expnet::module_state(*target);
      for (size_t i = 0; i < state.size(); ++i) {
        const bool backbone = state[i].first.rfind("swin_transf.", 0) == 0;
        // The backbone is the source's; the captioner keeps its own initialisation.
        if (backbone || state[i].second.dim() > 1)
          QVERIFY2(torch::equal(state[i].second, loaded[i].second) == backbone, state[i].first.c_str());
      }
    }
    // Another backbone: the tensor and both shapes are named.
    auto wider = config;
    wider.swin_embed_dim = 48;
    wider.final_swin_dim = 48 << 3;
    expnet::ExpansionNet other(wider, 30);
    const QString e = expnet_test::errorOf([&] { expnet::init_backbone_from_checkpoint(*other, authors, "the test"); });
    QVERIFY2(e.contains("authors.pth") && e.contains("swin_transf.") && e.contains("swin_* settings"), qPrintable(e));
  }

  void ablationTrainsEachVariantThenTables() {
    const QString dir = expnet_test::makeTempDir("ablation_tiny");
    const json plan = {
        {"name", "ablation-tiny"},
        {"base", tiny_base()},
        {"variants",
         {{{"name", "sa"}, {"model", {{"encoder_layer", "self_attention"}, {"decoder_layer", "self_attention"}}}},
          {{"name", "ngsan"}, {"model", {{"encoder_layer", "ngsan"}}}},
          {{"name", "dyn"},
           {"model", {{"encoder_layer", "dynamic_expansion"}, {"num_exp_enc_list", {4}}}},
           {"seed", 9}},
          {{"name", "bf16"}, {"precision", "bf16"}}}}};
    const QString file = write_json(dir + "/ablation.json", plan);
    const QStringList args{"train", "--ablation", file, "--out", dir + "/runs", "--json", "--no-progress", "--threads", "2"};
    const auto first = expnet_test::runProcess(expnet_test::cliPath(), args);
    QVERIFY2(first.exitCode == 0, first.err.constData());
    const auto rows = json::parse(first.out.toStdString());
    QCOMPARE(rows.size(), size_t(4));
    const std::vector<std::string> encoders{"self_attention", "ngsan", "dynamic_expansion"};
    const std::vector<std::string> decoders{"self_attention", "dynamic_expansion", "dynamic_expansion"};
    for (size_t i = 0; i < 3; ++i) {
      QCOMPARE(rows[i]["encoder_layer"].get<std::string>(), encoders[i]);
      QCOMPARE(rows[i]["decoder_layer"].get<std::string>(), decoders[i]);
      QCOMPARE(rows[i]["status"].get<std::string>(), std::string("finished"));
      QVERIFY(rows[i]["best"].is_object());
      QVERIFY(rows[i]["last"].is_object());
      QVERIFY(rows[i]["last"]["cider_d"].get<double>() <= rows[i]["best"]["cider_d"].get<double>());
      QCOMPARE(rows[i]["precision"].get<std::string>(), std::string("fp32"));
      QVERIFY(rows[i]["captioner_parameters"].get<int64_t>() > 0);
      QVERIFY(rows[i]["parameters"].get<int64_t>() > rows[i]["captioner_parameters"].get<int64_t>());
      QVERIFY(rows[i]["images_per_s"].get<double>() > 0);
    }
    QCOMPARE(rows[2]["seed"].get<int>(), 9);
    QCOMPARE(rows[0]["seed"].get<int>(), 7);
    QCOMPARE(rows[1]["encoder"].get<std::string>(), std::string("NG-SAN"));
    QCOMPARE(rows[3]["precision"].get<std::string>(), std::string("bf16"));

    // Again: every run is finished, nothing trains.
    const auto again = expnet_test::runProcess(expnet_test::cliPath(), args);
    QVERIFY2(again.exitCode == 0, again.err.constData());
    QCOMPARE(QString(again.err).count("already trained"), 4);

    // The table from the run stores (registered where the runs were trained).
    const auto table = expnet_test::runProcess(expnet_test::cliPath(), {"runs", "table", "ablation-tiny-*"});
    QVERIFY2(table.exitCode == 0, table.err.constData());
    for (const char* label : {"ablation-tiny-sa", "ablation-tiny-ngsan", "ablation-tiny-dyn", "NG-SAN", "Base",
                              "Dynamic Exp NE=4", "CIDEr-D", "last", "precision", "bf16"})
      QVERIFY2(table.out.contains(label), table.out.constData());
    // Two precisions: each one's final CIDEr-D over its runs (3 fp32 runs, 1 bf16).
    QVERIFY2(table.out.contains("last CIDEr-D by precision") && table.out.contains("fp32: 3 runs, mean ") &&
                 table.out.contains("bf16: 1 run, mean "),
             table.out.constData());
    const auto missing = expnet_test::runProcess(expnet_test::cliPath(), {"runs", "table", "no-such-run"});
    QVERIFY(missing.exitCode != 0);
    QVERIFY2(missing.err.contains("no-such-run"), missing.err.constData());

    // Another run over the sa run's backbone: frozen, so its backbone stays that one exactly.
    json from = tiny_base();
    from["backbone_checkpoint"] = (dir + "/runs/ablation-tiny-sa/checkpoints/best.pth").toStdString();
    const QString second = write_json(dir + "/from_sa.json",
                                      {{"name", "ablation-from"}, {"base", from}, {"variants", {{{"name", "v2"}}}}});
    const auto trained = expnet_test::runProcess(
        expnet_test::cliPath(), {"train", "--ablation", second, "--out", dir + "/runs", "--no-progress", "--threads", "2"});
    QVERIFY2(trained.exitCode == 0, trained.err.constData());
    const auto a = expnet::read_state_dict((dir + "/runs/ablation-tiny-sa/checkpoints/best.pth").toStdString());
    const auto b = expnet::read_state_dict((dir + "/runs/ablation-from-v2/checkpoints/best.pth").toStdString());
    int compared = 0;
    for (const auto& [name, tensor] : a) {
      if (name.rfind("swin_transf.", 0) != 0) continue;
      const auto other = std::find_if(b.begin(), b.end(), [&](const auto& e) { return e.first == name; });
      QVERIFY2(other != b.end() && torch::equal(tensor, other->second), name.c_str());
      ++compared;
    }
    QVERIFY(compared > 10);

    // A run over the features `expnet features extract` wrote from that backbone: no extraction of its own.
    const QString run_dir = dir + "/runs/ablation-tiny-sa";
    const QString dataset = run_dir + "/shapes/dataset_coco.json", cache = dir + "/sa.fcache";
    const auto extracted = expnet_test::runProcess(
        expnet_test::cliPath(), {"features", "extract", "--checkpoint", run_dir + "/checkpoints/best.pth", "--dataset",
                                 dataset, "--split", "train+restval", "--out", cache, "--batch", "8"});
    QVERIFY2(extracted.exitCode == 0, extracted.err.constData());
    json over = from;
    over["dataset"] = dataset.toStdString();
    over["features"] = cache.toStdString();
    const QString third = write_json(dir + "/over_features.json",
                                     {{"name", "ablation-features"}, {"base", over}, {"variants", {{{"name", "ngsan"},
                                      {"model", {{"encoder_layer", "ngsan"}}}}}}});
    const auto read = expnet_test::runProcess(
        expnet_test::cliPath(), {"train", "--ablation", third, "--out", dir + "/runs", "--no-progress", "--threads", "2"});
    QVERIFY2(read.exitCode == 0, read.err.constData());
    QVERIFY2(read.err.contains("backbone features of") && read.err.contains("sa.fcache") &&
                 !read.err.contains("extracting backbone features"),
             read.err.constData());
    QVERIFY(QFile::exists(cache));  // never deleted
    // Another backbone does not fit: refused, saying what differs.
    over["backbone_checkpoint"] = "";
    over["seed"] = 11;  // seed 7 would draw the sa run's very backbone again
    const QString fourth = write_json(dir + "/misfit.json",
                                      {{"name", "ablation-misfit"}, {"base", over}, {"variants", {{{"name", "x"}}}}});
    const auto misfit = expnet_test::runProcess(
        expnet_test::cliPath(), {"train", "--ablation", fourth, "--out", dir + "/runs", "--no-progress", "--threads", "2"});
    QVERIFY(misfit.exitCode != 0);
    QVERIFY2(misfit.err.contains("does not fit") && misfit.err.contains("other backbone weights"), misfit.err.constData());
  }
};

QTEST_APPLESS_MAIN(TestAblation)
#include "test_ablation.moc"

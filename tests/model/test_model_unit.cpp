// Model configuration (JSON, presets, errors), masks, Swin buffers, parameter
// counts and input errors.
#include <torch/torch.h>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include <fstream>
#include <nlohmann/json.hpp>

#include "expnet/model/swin.h"
#include "expnet/model/expansion_net.h"
#include "expnet/model/state_entries.h"
#include "support/fixtures.h"

using expnet::ModelConfig;

namespace {

// The error message of from_json, or "" when it succeeds.
QString config_error(const nlohmann::json& doc) {
  try {
    ModelConfig::from_json(doc.dump(), "test config");
  } catch (const std::invalid_argument& e) {
    return QString::fromUtf8(e.what());
  }
  return {};
}

nlohmann::json official_json() { return nlohmann::json::parse(expnet::official_model_config().to_json()); }

}  // namespace

class TestModelUnit : public QObject {
  Q_OBJECT
 private slots:
  void jsonRoundTripKeepsEveryField() {
    for (const auto& name : expnet::model_preset_names()) {
      const ModelConfig config = expnet::resolve_model_config(name);
      QVERIFY(ModelConfig::from_json(config.to_json()) == config);
    }
  }

  void jsonKeysAreTheReferenceArgumentNames() {
    const auto doc = official_json();
    QStringList keys;
    for (const auto& item : doc.items()) keys << QString::fromStdString(item.key());
    keys.sort();
    QStringList expected = {"swin_img_size", "swin_patch_size", "swin_in_chans", "swin_embed_dim", "swin_depths",
                            "swin_num_heads", "swin_window_size", "swin_mlp_ratio", "swin_qkv_bias", "swin_ape",
                            "swin_patch_norm", "final_swin_dim", "d_model", "N_enc", "N_dec", "ff", "num_heads",
                            "num_exp_enc_list", "num_exp_dec", "max_seq_len"};
    expected.sort();
    QCOMPARE(keys, expected);
  }

  void officialPresetIsTheReleasedModel() {
    const ModelConfig c = expnet::official_model_config();
    QCOMPARE(c.swin_img_size, int64_t{384});
    QCOMPARE(c.swin_embed_dim, int64_t{192});
    QCOMPARE(c.swin_depths, (std::vector<int64_t>{2, 2, 18, 2}));
    QCOMPARE(c.swin_num_heads, (std::vector<int64_t>{6, 12, 24, 48}));
    QCOMPARE(c.swin_window_size, int64_t{12});
    QCOMPARE(c.final_swin_dim, int64_t{1536});
    QCOMPARE(c.num_exp_enc_list, (std::vector<int64_t>{32, 64, 128, 256, 512}));
    QCOMPARE(c.num_exp_dec, int64_t{16});
    QCOMPARE(c.max_seq_len, int64_t{74});
    QCOMPARE(c.feature_tokens(), int64_t{144});
  }

  void tinyPresetEqualsTheFixtureConfig() {
    EXPNET_FIXTURE(path, "reference/tiny/model_config.json");
    QVERIFY(ModelConfig::load(path.toStdString()) == expnet::tiny_model_config());
    QVERIFY(expnet::resolve_model_config(path.toStdString()) == expnet::tiny_model_config());
  }

  void unknownKeyIsNamed() {
    auto doc = official_json();
    doc["swin_qk_scale"] = nullptr;
    const QString error = config_error(doc);
    QVERIFY2(error.contains("unknown key 'swin_qk_scale'"), qPrintable(error));
  }

  void missingKeyIsNamed() {
    auto doc = official_json();
    doc.erase("num_exp_dec");
    doc.erase("ff");
    const QString error = config_error(doc);
    QVERIFY2(error.contains("missing key(s) ff, num_exp_dec"), qPrintable(error));
  }

  void wrongTypesAreNamed() {
    auto doc = official_json();
    doc["d_model"] = "512";
    QVERIFY2(config_error(doc).contains("'d_model' must be a whole number"), qPrintable(config_error(doc)));
    doc = official_json();
    doc["d_model"] = 512.5;
    QVERIFY2(config_error(doc).contains("'d_model' must be a whole number"), qPrintable(config_error(doc)));
    doc = official_json();
    doc["swin_ape"] = 0;
    QVERIFY2(config_error(doc).contains("'swin_ape' must be true or false"), qPrintable(config_error(doc)));
    doc = official_json();
    doc["swin_depths"] = {2, "x", 2, 2};
    QVERIFY2(config_error(doc).contains("'swin_depths'[1] must be a whole number"), qPrintable(config_error(doc)));
    QVERIFY(config_error(nlohmann::json::array()).contains("expected a JSON object"));
  }

  void inconsistentValuesAreExplained() {
    const std::vector<std::pair<std::function<void(nlohmann::json&)>, QString>> cases = {
        {[](auto& d) { d["num_heads"] = 7; }, "d_model 512 is not divisible by num_heads 7"},
        {[](auto& d) { d["final_swin_dim"] = 1024; }, "final_swin_dim is 1024 but the backbone ends with"},
        {[](auto& d) { d["swin_num_heads"] = {6, 12, 24}; }, "swin_depths has 4 stages but swin_num_heads has 3"},
        {[](auto& d) { d["swin_num_heads"] = {5, 12, 24, 48}; }, "not divisible by swin_num_heads[0] = 5"},
        {[](auto& d) { d["swin_window_size"] = 7; }, "is not a multiple of swin_window_size 7"},
        {[](auto& d) { d["num_exp_enc_list"] = nlohmann::json::array(); }, "num_exp_enc_list must list at least one group"},
        {[](auto& d) { d["max_seq_len"] = 0; }, "max_seq_len must be positive"},
        {[](auto& d) { d["swin_img_size"] = 72; d["swin_window_size"] = 9; }, "resolution 9 is odd"},
    };
    for (const auto& [edit, expected] : cases) {
      auto doc = official_json();
      edit(doc);
      const QString error = config_error(doc);
      QVERIFY2(error.contains(expected), qPrintable(QStringLiteral("expected '%1', got '%2'").arg(expected, error)));
    }
  }

  void presetErrors() {
    // "demo" is the built-in demo model's configuration (the shapes-demo recipe's model).
    QCOMPARE(expnet::resolve_model_config("demo").d_model, expnet::demo_model_config().d_model);
    try {
      expnet::resolve_model_config("/no/such/config.json");
      QFAIL("missing file resolved");
    } catch (const std::runtime_error& e) {
      QVERIFY2(QString(e.what()).contains("neither a preset"), e.what());
    }
    const QString dir = expnet_test::makeTempDir(QStringLiteral("model_config_bad"));
    const std::string path = (dir + QStringLiteral("/bad.json")).toStdString();
    std::ofstream(path) << "{\"d_model\": ";
    try {
      expnet::resolve_model_config(path);
      QFAIL("broken JSON resolved");
    } catch (const std::runtime_error& e) {
      QVERIFY2(QString(e.what()).contains("not valid JSON") && QString(e.what()).contains("bad.json"), e.what());
    }
  }

  void causalMaskFollowsTheReference() {
    // tokens: 3 real + 2 padding (pad id 0), as the reference's
    // create_no_peak_and_pad_mask with num_pads = 2.
    const auto tokens = torch::tensor({{5, 6, 7, 0, 0}}, torch::kLong);
    const auto mask = expnet::causal_self_mask(tokens, 0).to(torch::kLong);
    const auto expected = torch::tensor({{1, 0, 0, 0, 0}, {1, 1, 0, 0, 0}, {1, 1, 1, 0, 0}, {0, 0, 0, 0, 0},
                                         {0, 0, 0, 0, 0}}, torch::kLong).unsqueeze(0);
    QVERIFY(torch::equal(mask, expected));
    const auto cross = expnet::cross_attention_mask(tokens, 0, 4).to(torch::kLong);
    QCOMPARE(cross.sizes().vec(), (std::vector<int64_t>{1, 5, 4}));
    QCOMPARE(cross.sum().item<int64_t>(), int64_t{12});
    QVERIFY(torch::equal(expnet::causal_self_mask(tokens, -1).to(torch::kLong)[0],
                         torch::ones({5, 5}, torch::kLong).tril()));
  }

  void shiftMaskAndRelativeIndexFollowSwin() {
    // Tiny preset, stage 0: 32x32 tokens, window 4, shift 2.
    expnet::SwinBlock shifted(24, 32, 1, 4, 2, 4.0, true);
    QCOMPARE(shifted->attn_mask.sizes().vec(), (std::vector<int64_t>{64, 16, 16}));
    // The first window is inside the image: nothing masked; the last one mixes 4 regions.
    QCOMPARE(shifted->attn_mask[0].abs().sum().item<double>(), 0.0);
    QVERIFY(shifted->attn_mask[63].eq(-100.0).sum().item<int64_t>() > 0);
    const auto& index = shifted->attn->relative_position_index;
    QCOMPARE(index[0][0].item<int64_t>(), int64_t{(4 - 1) * 7 + 3});  // (0,0) to itself: table centre
    QCOMPARE(index.max().item<int64_t>(), int64_t{7 * 7 - 1});
    // A stage no larger than the window uses one unshifted window.
    expnet::SwinBlock whole(192, 4, 6, 4, 2, 4.0, true);
    QVERIFY(!whole->attn_mask.defined());
    QCOMPARE(whole->window, int64_t{4});
  }

  // Our one extension key: absent means the reference's merging (so the authors'
  // configurations read unchanged and ours stay readable by their code), written
  // only when set, and the demo model is the calibration size with it.
  void convolutionalMergingIsAnOptionalExtension() {
    QVERIFY(!ModelConfig::from_json(official_json().dump()).swin_conv_merging);
    QVERIFY(!official_json().contains("swin_conv_merging"));
    auto with = official_json();
    with["swin_conv_merging"] = true;
    QVERIFY(ModelConfig::from_json(with.dump()).swin_conv_merging);
    with["swin_conv_merging"] = 1;
    QVERIFY2(config_error(with).contains("'swin_conv_merging' must be true or false"), qPrintable(config_error(with)));
    ModelConfig demo = expnet::demo_model_config();
    QVERIFY(demo.swin_conv_merging);
    QVERIFY(nlohmann::json::parse(demo.to_json()).at("swin_conv_merging").get<bool>());
    // The calibration size, widened: embed 48 and heads 2/4/8 (the varied look needs it).
    QCOMPARE(demo.swin_embed_dim, int64_t{48});
    QCOMPARE(demo.final_swin_dim, int64_t{192});
    demo.swin_conv_merging = false;
    demo.swin_embed_dim = 32;
    demo.swin_num_heads = {1, 2, 4};
    demo.final_swin_dim = 128;
    QVERIFY(demo == expnet::calibration_model_config());
  }

  // 3x3 convolution, ReLU and 2x2 max pooling over the token grid, computed here
  // with torch's functional ops on the image layout the tokens come from.
  void convolutionalMergingPoolsTheTokenGrid() {
    torch::manual_seed(3);
    expnet::SwinPatchMerging merging(4, 6, /*conv=*/true);
    QVERIFY(!merging->reduction && !merging->norm);
    QCOMPARE(merging->conv->weight.sizes().vec(), (std::vector<int64_t>{12, 6, 3, 3}));
    const auto tokens = torch::randn({2, 16, 6});  // B x (row-major 4x4 grid) x C
    const auto image = tokens.view({2, 4, 4, 6}).permute({0, 3, 1, 2});
    const auto expected =
        torch::max_pool2d(torch::relu(torch::conv2d(image, merging->conv->weight, merging->conv->bias, 1, 1)), 2)
            .permute({0, 2, 3, 1})
            .reshape({2, 4, 12});
    QVERIFY(torch::allclose(merging(tokens), expected, 1e-5, 1e-6));
    expnet::ExpansionNet demo(expnet::demo_model_config(), 30);
    const auto names = demo->named_parameters();
    QVERIFY(names.contains("swin_transf.layers.1.downsample.conv.weight"));
    QVERIFY(!names.contains("swin_transf.layers.1.downsample.reduction.weight"));
    QCOMPARE(demo->backbone(torch::zeros({1, 3, 96, 96})).sizes().vec(), (std::vector<int64_t>{1, 36, 192}));
  }

  void tinyAndSmallParameterCounts() {
    expnet::ExpansionNet tiny(expnet::tiny_model_config(), 50);
    QCOMPARE(expnet::count_parameters(*tiny), int64_t{1506082});
    QCOMPARE(expnet::state_entries(*tiny).size(), size_t{240});
    // small: 6,570,318 + 513 per vocabulary word (docs/model.md).
    expnet::ExpansionNet small(expnet::small_model_config(), 1000, false);
    QCOMPARE(expnet::count_parameters(*small), int64_t{6570318 + 513 * 1000});
  }

  // A checkpoint is compared with these estimates before a model is built
  // (expnet caption): they must never exceed what the model really holds, for
  // every preset and layer kind, or a good checkpoint would be refused.
  void sizeEstimatesStayBelowTheModel() {
    std::vector<std::pair<std::string, ModelConfig>> configs{{"calibration", expnet::calibration_model_config()}};
    for (const auto& preset : expnet::model_preset_names())
      configs.emplace_back(preset, expnet::resolve_model_config(preset));
    ModelConfig kinds = expnet::tiny_model_config();
    for (const auto& encoder : expnet::encoder_layer_names())
      for (const auto& decoder : expnet::decoder_layer_names()) {
        auto json = nlohmann::json::parse(kinds.to_json());
        json["encoder_layer"] = encoder;
        json["decoder_layer"] = decoder;
        if (encoder == "dynamic_expansion") json["num_exp_enc_list"] = {16};
        configs.emplace_back(encoder + "/" + decoder, ModelConfig::from_json(json.dump()));
      }
    for (const auto& [name, config] : configs) {
      expnet::ExpansionNet model(config, 10, /*reference_init=*/false);
      int64_t parameters = 0, buffers = 0;
      for (const auto& entry : expnet::state_entries(*model))
        (entry.is_buffer ? buffers : parameters) += entry.tensor.numel();
      QVERIFY2(config.estimated_parameters() <= static_cast<double>(parameters),
               qPrintable(QString::fromStdString(name) + QString(": %1 > %2").arg(config.estimated_parameters()).arg(parameters)));
      QVERIFY2(config.estimated_parameters() >= 0.5 * static_cast<double>(parameters), name.c_str());  // not vacuous
      QVERIFY2(config.estimated_buffer_elements() <= static_cast<double>(buffers), name.c_str());
    }
  }

  void modelInfoRejectsBadModels() {
    const auto r = expnet_test::runProcess(expnet_test::cliPath(), {"model-info", "--model", "nonsense"});
    QVERIFY(r.exitCode != 0);
    QVERIFY2(r.err.contains("neither a preset"), r.err.constData());
  }

  void wrongInputsAreClearErrors() {
    torch::NoGradGuard no_grad;
    expnet::ExpansionNet tiny(expnet::tiny_model_config(), 50, false);
    tiny->eval();
    const auto expect_error = [](const std::function<void()>& f, const char* text) {
      try {
        f();
      } catch (const std::invalid_argument& e) {
        return QString(e.what()).contains(QLatin1String(text));
      }
      return false;
    };
    QVERIFY(expect_error([&] { tiny->backbone(torch::zeros({1, 3, 64, 64})); }, "expected images of shape B x 3 x 128 x 128"));
    const auto enc = torch::zeros({1, 16, 64});
    const auto long_tokens = torch::ones({1, 21}, torch::kLong);
    QVERIFY(expect_error([&] { tiny->decode(enc, long_tokens, expnet::causal_self_mask(long_tokens, -1)); },
                         "exceed max_seq_len 20"));
    const auto bad_tokens = torch::full({1, 3}, 50, torch::kLong);
    QVERIFY(expect_error([&] { tiny->decode(enc, bad_tokens, expnet::causal_self_mask(bad_tokens, -1)); },
                         "token id 50 is outside the vocabulary"));
  }
};

QTEST_GUILESS_MAIN(TestModelUnit)
#include "test_model_unit.moc"

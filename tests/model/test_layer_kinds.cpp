// The ablation layer kinds (ModelConfig::encoder_layer / decoder_layer,
// docs/model.md "Layer kinds"): shapes, causal masks, incremental decoding
// against full recomputation, traces, a checkpoint round trip through PyTorch,
// NSA's and GSA's formulas on hand examples, and the configuration errors.
#include <torch/torch.h>

#include <QtTest>

#include <nlohmann/json.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "expnet/checkpoint/pth_file.h"
#include "expnet/checkpoint/pth_writer.h"
#include "expnet/checkpoint/state_dict.h"
#include "expnet/decode/decoder_state.h"
#include "expnet/model/attention_layers.h"
#include "expnet/model/expansion_net.h"
#include "support/fixtures.h"

using expnet::DecoderLayerKind;
using expnet::EncoderLayerKind;
using expnet::ModelConfig;

namespace {

constexpr int64_t kVocab = 23;

// The tiny configuration (a 4 x 4 grid of features) with the given kinds.
ModelConfig kinds_config(EncoderLayerKind encoder, DecoderLayerKind decoder) {
  ModelConfig c = expnet::tiny_model_config();
  c.encoder_layer = encoder;
  c.decoder_layer = decoder;
  if (encoder == EncoderLayerKind::DynamicExpansion) c.num_exp_enc_list = {4};
  return c;
}

expnet::ExpansionNet make_model(const ModelConfig& config, uint64_t seed = 7) {
  torch::manual_seed(seed);
  expnet::ExpansionNet model(config, kVocab);
  model->eval();
  return model;
}

void add_kind_rows() {
  QTest::addColumn<int>("encoder");
  QTest::addColumn<int>("decoder");
  for (size_t e = 0; e < expnet::encoder_layer_names().size(); ++e)
    for (size_t d = 0; d < expnet::decoder_layer_names().size(); ++d) {
      const std::string name = expnet::encoder_layer_names()[e] + "/" + expnet::decoder_layer_names()[d];
      QTest::newRow(name.c_str()) << int(e) << int(d);
    }
}

ModelConfig row_config() {
  QFETCH(int, encoder);
  QFETCH(int, decoder);
  return kinds_config(static_cast<EncoderLayerKind>(encoder), static_cast<DecoderLayerKind>(decoder));
}

QString errorOfConfig(const std::string& json) {
  return expnet_test::errorOf([&] { ModelConfig::from_json(json, "kinds.json").validate("kinds.json"); });
}

std::string tiny_json_with(const std::string& key, const nlohmann::json& value) {
  auto doc = nlohmann::json::parse(expnet::tiny_model_config().to_json());
  doc[key] = value;
  return doc.dump();
}

}  // namespace

class TestLayerKinds : public QObject {
  Q_OBJECT
 private slots:
  void shapesTracesAndGradients_data() { add_kind_rows(); }
  void shapesTracesAndGradients() {
    const ModelConfig config = row_config();
    auto model = make_model(config);
    const int64_t B = 2, N = config.feature_tokens(), d = config.d_model, T = 5, H = config.num_heads;
    const auto features = torch::randn({B, N, config.final_swin_dim});
    std::vector<expnet::ExpansionTrace> enc_traces;
    const auto enc = model->encode(features, &enc_traces);
    QCOMPARE(enc.sizes().vec(), (std::vector<int64_t>{B, N, d}));
    QCOMPARE(int64_t(enc_traces.size()), config.N_enc);
    const auto& et = enc_traces.front();
    switch (config.encoder_layer) {
      case EncoderLayerKind::StaticExpansion:
        QCOMPARE(et.z.sizes().vec(), (std::vector<int64_t>{B, config.total_enc_expansions(), N}));
        break;
      case EncoderLayerKind::DynamicExpansion:  // every position sees every position
        QCOMPARE(et.z.sizes().vec(), (std::vector<int64_t>{B, N * 4, N}));
        QCOMPARE(et.backward_a.sizes().vec(), (std::vector<int64_t>{B, N, N * 4}));
        break;
      default:
        QVERIFY(!et.has_expansion());
        QCOMPARE(et.self_attention.sizes().vec(), (std::vector<int64_t>{B, H, N, N}));
        QVERIFY(torch::allclose(et.self_attention.sum(-1), torch::ones({B, H, N}), 1e-5, 1e-5));
    }

    const auto tokens = torch::randint(1, kVocab, {B, T}, torch::kLong);
    std::vector<expnet::DecoderLayerTrace> dec_traces;
    const auto log_probs =
        model->log_probs(model->decode_hidden(enc, tokens, expnet::causal_self_mask(tokens, -1), {}, &dec_traces));
    QCOMPARE(log_probs.sizes().vec(), (std::vector<int64_t>{B, T, kVocab}));
    QCOMPARE(dec_traces.front().cross_attention.sizes().vec(), (std::vector<int64_t>{B, H, T, N}));
    const auto& dt = dec_traces.front().expansion;
    if (config.decoder_layer == DecoderLayerKind::SelfAttention) {
      QVERIFY(!dt.has_expansion());
      QCOMPARE(dt.self_attention.sizes().vec(), (std::vector<int64_t>{B, H, T, T}));
      // Causal: nothing above the diagonal.
      QCOMPARE(dt.self_attention.triu(1).abs().max().item<float>(), 0.0f);
    } else {
      QCOMPARE(dt.z.sizes().vec(), (std::vector<int64_t>{B, T * config.num_exp_dec, T}));
    }

    // Training: the new layers get gradients.
    model->train();
    auto loss = model->decode(model->encode(features), tokens, expnet::causal_self_mask(tokens, -1)).mean();
    loss.backward();
    for (const auto& p : model->named_parameters()) {
      if (p.key().rfind("encoders.0.", 0) != 0 && p.key().rfind("decoders.0.", 0) != 0) continue;
      QVERIFY2(p.value().grad().defined(), p.key().c_str());
    }
    if (config.encoder_layer == EncoderLayerKind::NgSan)
      QVERIFY(model->encoders[0]->self_att->geometry_embed->weight.grad().abs().sum().item<double>() > 0);
  }

  // No decoder position sees a later one: changing the tokens after position t
  // leaves positions 0..t unchanged.
  void decoderIsCausal_data() { add_kind_rows(); }
  void decoderIsCausal() {
    const ModelConfig config = row_config();
    auto model = make_model(config);
    torch::NoGradGuard no_grad;
    const auto enc = model->encode(torch::randn({1, config.feature_tokens(), config.final_swin_dim}));
    const int64_t T = 6;
    auto a = torch::randint(1, kVocab, {1, T}, torch::kLong);
    for (int64_t t = 0; t + 1 < T; ++t) {
      auto b = a.clone();
      b.narrow(1, t + 1, T - t - 1).copy_(torch::randint(1, kVocab, {1, T - t - 1}, torch::kLong));
      const auto out_a = model->decode(enc, a, expnet::causal_self_mask(a, -1)).narrow(1, 0, t + 1);
      const auto out_b = model->decode(enc, b, expnet::causal_self_mask(b, -1)).narrow(1, 0, t + 1);
      QVERIFY2(torch::allclose(out_a, out_b, 1e-6, 1e-6), qPrintable(QString("position %1").arg(t)));
    }
  }

  // Incremental decoding (both cache paths, with a beam-style reorder) equals
  // the full recomputation of each row's prefix.
  void incrementalEqualsFull_data() { add_kind_rows(); }
  void incrementalEqualsFull() {
    const ModelConfig config = row_config();
    auto model = make_model(config);
    torch::NoGradGuard no_grad;
    const int64_t images = 2, T = 7;
    const auto enc = model->encode(torch::randn({images, config.feature_tokens(), config.final_swin_dim}));
    for (const bool cpu_kernels : {true, false}) {
      expnet::DecoderState state(model, enc, cpu_kernels);
      auto prefixes = torch::empty({images, 0}, torch::kLong);
      auto encoded = enc;
      for (int64_t t = 0; t < T; ++t) {
        if (t == 2) {  // 3 rows per image, then shuffled parents
          const auto parents = torch::tensor({0, 0, 0, 1, 1, 1}, torch::kLong);
          state.reorder(parents);
          prefixes = prefixes.index_select(0, parents);
          encoded = encoded.index_select(0, parents);
        } else if (t == 4) {
          const auto parents = torch::tensor({2, 0, 1, 5, 3, 3}, torch::kLong);
          state.reorder(parents);
          prefixes = prefixes.index_select(0, parents);
          encoded = encoded.index_select(0, parents);
        }
        const auto tokens = torch::randint(1, kVocab, {prefixes.size(0)}, torch::kLong);
        prefixes = torch::cat({prefixes, tokens.unsqueeze(1)}, 1);
        const auto step = state.step(tokens);
        const auto full = model->decode(encoded, prefixes, expnet::causal_self_mask(prefixes, -1)).select(1, t);
        QVERIFY2(torch::allclose(step, full, 1e-5, 1e-5),
                 qPrintable(QString("step %1, cpu_kernels %2: max diff %3")
                                .arg(t)
                                .arg(cpu_kernels)
                                .arg((step - full).abs().max().item<double>())));
      }
    }
  }

  // Ours -> torch.load -> torch.save -> ours: names, config and outputs intact.
  void checkpointRoundTripThroughPyTorch_data() { add_kind_rows(); }
  void checkpointRoundTripThroughPyTorch() {
    const ModelConfig config = row_config();
    auto model = make_model(config);
    const QString dir = expnet_test::makeTempDir("layer_kinds");
    const std::string ours = (dir + "/ours.pth").toStdString(), theirs = (dir + "/theirs.pth").toStdString();
    expnet::CheckpointMetadata metadata;
    metadata.config_json = config.to_json();
    expnet::save_checkpoint(ours, expnet::module_state(*model), metadata);

    const char* script =
        "import json, sys, torch\n"
        "d = torch.load(sys.argv[1])\n"
        "sd = d['model_state_dict']\n"
        "torch.save(d, sys.argv[2])\n"
        "print(json.dumps({'names': list(sd.keys()), 'config': json.loads(d['expnet_config'])}))\n";
    const auto result = expnet_test::runProcess(expnet_test::torchPython(),
                                                {"-c", script, QString::fromStdString(ours), QString::fromStdString(theirs)});
    QVERIFY2(result.exitCode == 0, result.err.constData());
    const auto seen = nlohmann::json::parse(result.out.toStdString());
    std::vector<std::string> names;
    for (const auto& e : expnet::module_state(*model)) names.push_back(e.first);
    QCOMPARE(seen["names"].get<std::vector<std::string>>(), names);
    QVERIFY(ModelConfig::from_json(seen["config"].dump()) == config);

    const expnet::PthFile file(theirs);
    const auto stored = ModelConfig::from_json(*expnet::read_metadata(file).config_json);
    QVERIFY(stored == config);
    auto loaded = make_model(stored, /*seed=*/99);
    expnet::load_state_dict(*loaded, theirs);
    torch::NoGradGuard no_grad;
    const auto features = torch::randn({1, config.feature_tokens(), config.final_swin_dim});
    const auto tokens = torch::randint(1, kVocab, {1, 4}, torch::kLong);
    const auto mask = expnet::causal_self_mask(tokens, -1);
    QVERIFY(torch::equal(model->decode(model->encode(features), tokens, mask),
                         loaded->decode(loaded->encode(features), tokens, mask)));
  }

  // NSA on a hand-computed example: per channel over the 3 positions.
  void nsaNormalisesQueriesPerInstance() {
    const auto q = torch::tensor({1.f, 2.f, 3.f, 4.f, 5.f, 9.f}).view({1, 3, 2});
    const auto out = expnet::instance_normalise_queries(q, torch::tensor({2.f, 1.f}), torch::tensor({0.f, 1.f}));
    // Channel 0: 1, 3, 5 (mean 3, variance 8/3) -> 2 * (-2, 0, 2) / sqrt(8/3);
    // channel 1: 2, 4, 9 (mean 5, variance 26/3) -> (-3, -1, 4) / sqrt(26/3) + 1.
    const auto expected =
        torch::tensor({-2.449490f, -0.019049f, 0.f, 0.660317f, 2.449490f, 2.358732f}).view({1, 3, 2});
    QVERIFY2(torch::allclose(out, expected, 1e-5, 1e-4), qPrintable(QString::number((out - expected).abs().max().item<double>())));
    // A second image is normalised on its own.
    const auto two = expnet::instance_normalise_queries(torch::cat({q, q * 10 + 3}), torch::ones({2}), torch::zeros({2}));
    QVERIFY(torch::allclose(two[0], two[1], 1e-5, 1e-4));
  }

  // GSA's relative geometry of a 3 x 3 grid: every pair against the formula.
  void gsaGeometryOfA3x3Grid() {
    const auto f = expnet::grid_relative_geometry(3);
    QCOMPARE(f.sizes().vec(), (std::vector<int64_t>{9, 9, 4}));
    // Equal cells: |x_i - x_j| / w_i = |column difference|, same for rows; size ratios 1.
    for (int i = 0; i < 9; ++i)
      for (int j = 0; j < 9; ++j) {
        const double dx = std::abs(i % 3 - j % 3), dy = std::abs(i / 3 - j / 3);
        const float expected[4] = {float(std::log(std::max(dx, 1e-3))), float(std::log(std::max(dy, 1e-3))), 0.f, 0.f};
        for (int k = 0; k < 4; ++k)
          QVERIFY2(std::abs(f[i][j][k].item<float>() - expected[k]) < 1e-5,
                   qPrintable(QString("f[%1][%2][%3] = %4").arg(i).arg(j).arg(k).arg(f[i][j][k].item<float>())));
      }
    // Hand values: corner to corner is log 2 both ways; a cell to itself the floor.
    QVERIFY(std::abs(f[0][8][0].item<float>() - 0.693147f) < 1e-5);
    QVERIFY(std::abs(f[4][4][1].item<float>() - (-6.907755f)) < 1e-5);
  }

  void configurationKeys() {
    // Absent keys mean v2's kinds, and v2's configurations are written unchanged.
    const auto official = expnet::official_model_config();
    QCOMPARE(official.encoder_layer, EncoderLayerKind::StaticExpansion);
    QCOMPARE(official.decoder_layer, DecoderLayerKind::DynamicExpansion);
    QVERIFY(official.to_json().find("encoder_layer") == std::string::npos);
    QVERIFY(official.to_json().find("decoder_layer") == std::string::npos);
    const auto ngsan = kinds_config(EncoderLayerKind::NgSan, DecoderLayerKind::SelfAttention);
    QVERIFY(ModelConfig::from_json(ngsan.to_json()) == ngsan);
    QCOMPARE(ngsan.unused_key_notes().size(), size_t(2));
    QVERIFY(official.unused_key_notes().empty());

    // v1's presets: static NE=64 encoder, dynamic NE=16 decoder.
    const auto v1 = expnet::resolve_model_config("v1");
    QCOMPARE(v1.num_exp_enc_list, (std::vector<int64_t>{64}));
    QCOMPARE(v1.num_exp_dec, int64_t(16));
    QCOMPARE(v1.d_model, int64_t(512));
    QCOMPARE(v1.ff, int64_t(2048));
    QCOMPARE(v1.N_enc, int64_t(3));
    expnet::resolve_model_config("v1-shapes").validate();
  }

  void badKindsAreClearErrors() {
    auto e = errorOfConfig(tiny_json_with("encoder_layer", "attention"));
    QVERIFY2(e.contains("encoder_layer") && e.contains("static_expansion") && e.contains("ngsan") &&
                 e.contains("\"attention\""),
             qPrintable(e));
    e = errorOfConfig(tiny_json_with("decoder_layer", 2));
    QVERIFY2(e.contains("decoder_layer") && e.contains("self_attention") && e.contains("dynamic_expansion"),
             qPrintable(e));
    // A list of static groups means nothing to one dynamic expansion.
    e = errorOfConfig(tiny_json_with("encoder_layer", "dynamic_expansion"));
    QVERIFY2(e.contains("num_exp_enc_list") && e.contains("exactly one"), qPrintable(e));
    auto doc = nlohmann::json::parse(tiny_json_with("decoder_layer", "self_attention"));
    doc["pnaic_groups"] = 2;
    e = errorOfConfig(doc.dump());
    QVERIFY2(e.contains("pnaic_groups") && e.contains("decoder_layer"), qPrintable(e));
  }
};

QTEST_APPLESS_MAIN(TestLayerKinds)
#include "test_layer_kinds.moc"

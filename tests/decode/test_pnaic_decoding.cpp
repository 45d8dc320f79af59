// PNAIC on ExpansionNet v2 (expnet/model/pnaic.h, expnet/decode/group_decoding.h):
// K = 1 computes what the AIC decoder computes; the step-causal mask hides every
// later step of every group; the incremental group decoder equals the full
// decoder on the group-major layout (K = 2 and 5, groups ending at different
// steps); decoding drops DEL groups and stops once every group has ended.
// Models are real ones of the tiny preset with seeded random weights.
#include <QtTest>
#include <torch/torch.h>

#include "expnet/decode/decoder_state.h"
#include "expnet/decode/group_decoding.h"
#include "expnet/model/expansion_net.h"
#include "expnet/model/pnaic.h"
#include "expnet/text/vocabulary.h"

using namespace expnet;

namespace {

Vocabulary shapesVocabulary() {
  return Vocabulary({"PAD", "SOS", "EOS", "UNK", "a", "big", "red", "blue", "circle", "square", "left", "of", "on"});
}

ModelConfig pnaicConfig(int64_t groups) {
  auto config = tiny_model_config();
  config.pnaic_groups = groups;
  return config;
}

ExpansionNet randomModel(const ModelConfig& config, int64_t vocab, uint64_t seed) {
  torch::manual_seed(seed);
  ExpansionNet model(config, vocab);
  model->eval();
  return model;
}

torch::Tensor randomEncoding(int64_t images, uint64_t seed) {
  torch::manual_seed(seed);
  return torch::randn({images, 16, tiny_model_config().d_model});
}

}  // namespace

class TestPnaicDecoding : public QObject {
  Q_OBJECT

 private slots:
  void configCarriesGroups() {
    const auto config = pnaicConfig(5);
    const auto back = ModelConfig::from_json(config.to_json(), "test");
    QCOMPARE(back.pnaic_groups, int64_t{5});
    QVERIFY(tiny_model_config().to_json().find("pnaic_groups") == std::string::npos);  // AIC JSON unchanged
    auto text = config.to_json();
    text.replace(text.find("\"pnaic_groups\": 5"), 17, "\"pnaic_groups\": 0");
    try {
      ModelConfig::from_json(text, "my.json");
      QFAIL("K = 0 accepted");
    } catch (const std::invalid_argument& e) {
      QVERIFY2(QString(e.what()).contains("my.json") && QString(e.what()).contains("at least 1"), e.what());
    }
    const auto vocab = shapesVocabulary().with_del();
    QCOMPARE(vocab.del_id(), vocab.size() - 1);
    QCOMPARE(Vocabulary::from_json(vocab.to_json(), "v").del_id(), vocab.del_id());
    QCOMPARE(shapesVocabulary().del_id(), int64_t{-1});
  }

  // A K = 1 PNAIC model made from AIC weights with a zero group embedding (and
  // DEL made impossible) gives the AIC log-probs and the AIC greedy captions.
  void oneGroupIsAic() {
    torch::NoGradGuard no_grad;
    const auto vocab = shapesVocabulary();
    auto aic = randomModel(tiny_model_config(), vocab.size(), 3);
    auto pnaic = randomModel(pnaicConfig(1), vocab.size() + 1, 4);
    QVERIFY(init_pnaic_from_aic(*pnaic, *aic, /*with_decoder=*/true) > 0);
    pnaic->pnaic_group_embed->weight.zero_();
    pnaic->vocab_linear->weight[vocab.size()].zero_();
    pnaic->vocab_linear->bias[vocab.size()] = -1e4;  // DEL: probability e^-1e4
    const auto enc = randomEncoding(3, 5);
    const auto tokens = torch::randint(4, vocab.size(), {3, 9}, torch::kLong);
    const auto expected = aic->decode(enc, tokens, causal_self_mask(tokens, -1));
    const auto got = pnaic->decode(enc, tokens, step_causal_mask(tokens, 1, -1));
    QVERIFY(torch::equal(step_causal_mask(tokens, 1, 0), causal_self_mask(tokens, 0)));
    const double diff = (got.narrow(-1, 0, vocab.size()) - expected).abs().max().item<double>();
    QVERIFY2(diff < 1e-6, qPrintable(QString("max |difference| %1").arg(diff)));

    DecodingOptions greedy;
    greedy.search = SearchKind::Greedy;
    greedy.beam_size = 1;
    greedy.max_length = 12;
    DecoderState state(aic, enc);
    struct Adapter : StepDecoder {
      DecoderState& s;
      explicit Adapter(DecoderState& state) : s(state) {}
      at::Tensor step(const at::Tensor& t) override { return s.step(t); }
      void select(const at::Tensor& i) override { s.reorder(i); }
    } adapter(state);
    SpecialTokens special{vocab.sos_id(), vocab.eos_id(), {}};
    const auto aic_results = decode(adapter, 3, special, greedy);
    const auto group_results =
        decode_groups(pnaic, enc, {vocab.sos_id(), vocab.eos_id(), vocab.size()}, greedy);
    for (int i = 0; i < 3; ++i) {
      QCOMPARE(group_results[i].hypotheses.front().tokens, aic_results[i].hypotheses.front().tokens);
      QCOMPARE(group_results[i].steps, aic_results[i].steps);
    }
  }

  // M[(i,t),(j,u)] = u <= t for every pair of groups, and changing any later
  // step of any group changes nothing at earlier steps.
  void stepCausalMask() {
    torch::NoGradGuard no_grad;
    const int64_t K = 3, Lg = 4;
    const auto tokens = torch::randint(4, 12, {1, K * Lg}, torch::kLong);
    const auto mask = step_causal_mask(tokens, K, -1)[0];
    for (int64_t a = 0; a < K * Lg; ++a)
      for (int64_t b = 0; b < K * Lg; ++b) QCOMPARE(mask[a][b].item<bool>(), b % Lg <= a % Lg);
    auto model = randomModel(pnaicConfig(K), 13, 6);
    const auto enc = randomEncoding(1, 7);
    const auto before = model->decode(enc, tokens, step_causal_mask(tokens, K, -1));
    auto changed = tokens.clone();
    for (int64_t g = 0; g < K; ++g) changed[0][g * Lg + 3] = (changed[0][g * Lg + 3].item<int64_t>() + 1) % 12 + 1;
    const auto after = model->decode(enc, changed, step_causal_mask(changed, K, -1));
    for (int64_t g = 0; g < K; ++g) {
      const double same = (before[0].narrow(0, g * Lg, 3) - after[0].narrow(0, g * Lg, 3)).abs().max().item<double>();
      QVERIFY2(same == 0.0, "an earlier step saw a later one");
      const double moved = (before[0][g * Lg + 3] - after[0][g * Lg + 3]).abs().max().item<double>();
      QVERIFY(moved > 0.0);
    }
  }

  void incrementalEqualsFull_data() {
    QTest::addColumn<int>("groups");
    QTest::addColumn<bool>("cpuKernels");
    QTest::addColumn<int>("images");  // one image: only its live groups are fed
    for (const int images : {2, 1})
      for (const bool fused : {true, false})
        for (const int groups : {2, 5})
          QTest::addRow("K=%d %s, %d image(s)", groups, fused ? "fused CPU kernels" : "LibTorch operations", images)
              << groups << fused << images;
  }

  // Groups end at different steps (their later positions hidden, the padding
  // of the full layout); two images at once, and one alone.
  void incrementalEqualsFull() {
    QFETCH(int, groups);
    QFETCH(bool, cpuKernels);
    QFETCH(int, images);
    torch::NoGradGuard no_grad;
    const int64_t K = groups, R = images, steps = 5, pad = 0;
    auto model = randomModel(pnaicConfig(K), 14, 8 + K);
    const auto enc = randomEncoding(R, 9);
    torch::manual_seed(10);
    auto words = torch::randint(4, 14, {R, K, steps}, torch::kLong);
    words.select(2, 0).fill_(1);  // SOS
    // Group g of image r is live for the first ends[r][g] steps.
    auto ends = torch::randint(1, steps + 1, {R, K}, torch::kLong);
    ends[0][0] = steps;
    GroupDecoderState state(model, enc, cpuKernels);
    for (int64_t t = 0; t < steps; ++t) {
      const auto live = ends.gt(t);
      const auto got = state.step(words.select(2, t), live);  // R x K x V
      // The full decoder over steps 0..t, group-major, ended positions padded.
      auto layout = words.narrow(2, 0, t + 1).clone();
      for (int64_t r = 0; r < R; ++r)
        for (int64_t g = 0; g < K; ++g)
          for (int64_t u = 0; u <= t; ++u)
            if (u >= ends[r][g].item<int64_t>()) layout[r][g][u] = pad;
      const auto flat = layout.reshape({R, K * (t + 1)});
      const auto full = model->decode(enc, flat, step_causal_mask(flat, K, pad),
                                      cross_attention_mask(flat, pad, enc.size(1)))
                            .view({R, K, t + 1, -1})
                            .select(2, t);
      const auto compared = live.unsqueeze(-1).expand_as(full);
      const double diff = (got - full).abs().masked_select(compared).max().item<double>();
      QVERIFY2(diff < 1e-5, qPrintable(QString("step %1: max |difference| %2").arg(t).arg(diff)));
    }
    QCOMPARE(state.steps(), steps);
  }

  // Every group ends (EOS or DEL) before the limit for these seeds: decoding
  // stops there; DEL groups are not in the caption; steps = the longest group.
  void dropsDeletedGroupsAndStops() {
    torch::NoGradGuard no_grad;
    const auto vocab = shapesVocabulary().with_del();
    const int64_t K = 4, images = 8;
    auto model = randomModel(pnaicConfig(K), vocab.size(), 21);
    model->vocab_linear->bias[vocab.eos_id()] += 2.5;
    model->vocab_linear->bias[vocab.del_id()] += 3.5;
    const auto enc = randomEncoding(images, 22);
    DecodingOptions greedy;
    greedy.search = SearchKind::Greedy;
    greedy.max_length = 20;
    int streamed = 0;
    greedy.on_step = [&](const StepUpdate& u) {
      QCOMPARE(int64_t(u.group_words.size()), K);
      ++streamed;
    };
    const auto results = decode_groups(model, enc, {vocab.sos_id(), vocab.eos_id(), vocab.del_id()}, greedy);
    int eos_groups = 0, del_groups = 0, streamed_expected = 0;
    for (const auto& result : results) {
      const auto& h = result.hypotheses.front();
      QCOMPARE(int64_t(h.groups.size()), K);
      std::vector<int64_t> expected{vocab.sos_id()};
      int longest = 0;
      for (const auto& g : h.groups) {
        QVERIFY(g.end != GroupEnd::length);
        longest = std::max(longest, int(g.tokens.size()) + 1);
        if (g.end == GroupEnd::del) {
          ++del_groups;
        } else {
          ++eos_groups;
          expected.insert(expected.end(), g.tokens.begin(), g.tokens.end());
        }
        for (const auto w : g.tokens) QVERIFY(w != vocab.eos_id() && w != vocab.del_id() && w != vocab.sos_id());
      }
      expected.push_back(vocab.eos_id());
      QCOMPARE(h.tokens, expected);
      QCOMPARE(result.steps, longest);
      streamed_expected += result.steps;
    }
    QVERIFY2(eos_groups > 0 && del_groups > 0, qPrintable(QString("these seeds give both endings: %1 EOS, %2 DEL").arg(eos_groups).arg(del_groups)));
    QCOMPARE(streamed, streamed_expected);
  }

  void refusesWhatItDoesNotDo() {
    const auto vocab = shapesVocabulary().with_del();
    auto model = randomModel(pnaicConfig(2), vocab.size(), 30);
    const auto enc = randomEncoding(1, 31);
    DecodingOptions beam;  // the default: beam 5
    QVERIFY_EXCEPTION_THROWN(decode_groups(model, enc, {1, 2, vocab.del_id()}, beam), std::invalid_argument);
    DecodingOptions greedy;
    greedy.search = SearchKind::Greedy;
    QVERIFY_EXCEPTION_THROWN(decode_groups(model, enc, {1, 2, -1}, greedy), std::invalid_argument);
    auto aic = randomModel(tiny_model_config(), vocab.size(), 32);
    QVERIFY_EXCEPTION_THROWN(GroupDecoderState(aic, enc), std::invalid_argument);
  }
};

QTEST_APPLESS_MAIN(TestPnaicDecoding)
#include "test_pnaic_decoding.moc"

// The fused training kernels against LibTorch's autograd: the window attention's
// values and gradients on odd sizes (a head width and window that are not a
// multiple of any vector width, a mask shared by groups of windows) and on a
// Swin stage's own size; dropout's keep rate, scaling, gradient (the mask the
// forward drew) and its seeding by LibTorch's generator; the batched products on
// odd sizes and transposed views, and a whole captioner's gradients through them.
#include <QtTest/QtTest>
#include <torch/torch.h>

#include "expnet/model/expansion_net.h"
#include "expnet/model/model_config.h"
#include "expnet/model/swin.h"
#include "kernels/cpu/batched_product_training.h"
#include "kernels/cpu/dropout_training.h"
#include "kernels/cpu/window_attention_training.h"

using namespace expnet;

namespace {

// Swin's window attention in LibTorch operations (the model's unfused path).
torch::Tensor attention_by_autograd(const torch::Tensor& qkv, const torch::Tensor& bias, const torch::Tensor& mask,
                                    int64_t heads, double scale) {
  const int64_t B = qkv.size(0), N = qkv.size(1), C = qkv.size(2) / 3;
  const auto parts = qkv.reshape({B, N, 3, heads, C / heads}).permute({2, 0, 3, 1, 4});
  auto scores = torch::matmul(parts[0] * scale, parts[1].transpose(-2, -1)) + bias.unsqueeze(0);
  if (mask.defined()) {
    const int64_t M = mask.size(0);
    scores = (scores.view({B / M, M, heads, N, N}) + mask.unsqueeze(1).unsqueeze(0)).view({B, heads, N, N});
  }
  return torch::matmul(torch::softmax(scores, -1), parts[2]).transpose(1, 2).reshape({B, N, C});
}

double relative_error(const torch::Tensor& ours, const torch::Tensor& reference) {
  return (ours - reference).abs().max().item<double>() / std::max(1e-12, reference.abs().max().item<double>());
}

struct Case {
  const char* name;
  int64_t B, N, heads, D, windows;  // windows 0: no mask
};

}  // namespace

class TestFusedTrainingKernels : public QObject {
  Q_OBJECT

 private slots:
  void windowAttentionMatchesAutograd() {
    const Case cases[] = {{"odd, no mask", 5, 7, 3, 5, 0},
                          {"odd, a mask per 3 windows", 6, 9, 2, 3, 3},
                          {"one token, one head", 2, 1, 1, 1, 0},
                          {"a Swin stage's size, shifted (16 columns and more)", 64, 36, 2, 32, 4}};
    for (const Case& c : cases) {
      torch::manual_seed(static_cast<uint64_t>(c.B * 1000 + c.N));
      const int64_t C = c.heads * c.D;
      const double scale = 1.0 / std::sqrt(static_cast<double>(c.D));
      const auto qkv = torch::randn({c.B, c.N, 3 * C}).mul_(2.0).requires_grad_(true);
      const auto bias = torch::randn({c.heads, c.N, c.N}).requires_grad_(true);
      // Swin's shift mask: 0 or -100 (tokens of other regions)
      const auto mask =
          c.windows > 0 ? torch::randint(0, 2, {c.windows, c.N, c.N}).to(torch::kFloat).mul_(-100.0) : torch::Tensor();
      QVERIFY2(window_attention_training_applies(qkv, bias, mask, c.heads), c.name);

      const auto ours = window_attention_training(qkv, bias, mask, c.heads, scale);
      const auto upstream = torch::randn_like(ours);
      const auto ours_grads = torch::autograd::grad({ours}, {qkv, bias}, {upstream});
      const auto reference = attention_by_autograd(qkv, bias, mask, c.heads, scale);
      const auto reference_grads = torch::autograd::grad({reference}, {qkv, bias}, {upstream});
      QVERIFY2(ours.sizes() == reference.sizes(), c.name);
      // float32 sums in another order, and our exp within 2 ulp of std::exp
      const std::pair<const char*, double> errors[] = {
          {"values", relative_error(ours, reference)},
          {"qkv gradient", relative_error(ours_grads[0], reference_grads[0])},
          {"bias gradient", relative_error(ours_grads[1], reference_grads[1])}};
      for (const auto& [what, error] : errors)
        QVERIFY2(error < 1e-5, qPrintable(QString("%1, %2: relative error %3").arg(c.name, what).arg(error)));
    }
  }

  void theMaskTakesNoGradientAndBadShapesAreNotTaken() {
    const auto qkv = torch::randn({4, 5, 12}, torch::requires_grad());
    const auto bias = torch::randn({2, 5, 5});  // no gradient wanted
    const auto out = window_attention_training(qkv, bias, torch::Tensor(), 2, 0.5);
    const auto grads = torch::autograd::grad({out.sum()}, {qkv});
    QVERIFY(grads[0].defined());
    QCOMPARE(grads[0].sizes(), qkv.sizes());
    QVERIFY(!window_attention_training_applies(qkv.to(torch::kDouble), bias, {}, 2));  // float32 only
    QVERIFY(!window_attention_training_applies(qkv, bias, {}, 3));  // 12 = 3 x 3 x 4 but bias has 2 heads
    QVERIFY(!window_attention_training_applies(qkv, bias, torch::zeros({3, 5, 5}), 2));  // 4 windows, groups of 3
    QVERIFY(!window_attention_training_applies(qkv, torch::randn({2, 5, 4}), {}, 2));
  }

  // The model takes the fused path while training: its outputs and its parameters'
  // gradients are those of LibTorch's operators (set_fused_training_kernels(false)).
  void swinAttentionTrainsThroughTheFusedPath() {
    torch::manual_seed(3);
    SwinWindowAttention attention(48, 4, 3, true);
    {
      torch::NoGradGuard no_grad;  // the module starts from zeros, as before a checkpoint is loaded
      for (auto& p : attention->parameters()) p.normal_(0.0, 0.5);
    }
    const auto x = torch::randn({8, 16, 48});
    const auto mask = torch::randint(0, 2, {4, 16, 16}).to(torch::kFloat).mul_(-100.0);
    const auto upstream = torch::randn({8, 16, 48});
    attention->train();
    auto run = [&](bool fused) {
      set_fused_training_kernels(fused);
      attention->zero_grad();
      const auto out = attention->forward(x, mask);
      out.backward(upstream);
      set_fused_training_kernels(true);
      return std::vector<torch::Tensor>{out.detach(), attention->relative_position_bias_table.grad().clone(),
                                        attention->qkv->weight.grad().clone(), attention->qkv->bias.grad().clone()};
    };
    const auto fused = run(true);
    const auto reference = run(false);
    const char* names[] = {"output", "relative position bias table", "qkv weight", "qkv bias"};
    for (size_t i = 0; i < fused.size(); ++i) {
      QVERIFY2(reference[i].abs().sum().item<double>() > 0, names[i]);
      const double error = relative_error(fused[i], reference[i]);
      QVERIFY2(error < 1e-5, qPrintable(QString("%1: relative error %2").arg(names[i]).arg(error)));
    }
  }

  // Values and both gradients against matmul's autograd: sizes off every vector width
  // (1, 3, 5, 17, 33 rows or columns), 16-column multiples (the unpacked path), operands
  // read through transposes and permutes, two batch dimensions, one operand constant.
  void batchedProductMatchesAutograd() {
    torch::manual_seed(11);
    struct Shape {
      std::vector<int64_t> batch;
      int64_t M, K, N;
      bool a_transposed, b_transposed;
    };
    const std::vector<Shape> shapes = {{{3}, 5, 7, 17, false, false},     {{2}, 1, 3, 1, false, true},
                                       {{4}, 33, 16, 32, true, false},    {{2, 3}, 21, 32, 36, false, true},
                                       {{32}, 24, 36, 128, false, false}, {{5}, 17, 1, 5, true, true}};
    for (const auto& shape : shapes) {
      auto sized = [&](int64_t rows, int64_t cols, bool transposed) {
        std::vector<int64_t> dims = shape.batch;
        dims.push_back(transposed ? cols : rows);
        dims.push_back(transposed ? rows : cols);
        const auto t = torch::randn(dims);
        return transposed ? t.transpose(-1, -2) : t;
      };
      const auto a0 = sized(shape.M, shape.K, shape.a_transposed), b0 = sized(shape.K, shape.N, shape.b_transposed);
      const auto upstream = torch::randn(torch::matmul(a0, b0).sizes());
      {
        torch::NoGradGuard no_graph;  // SCST's drawing: the same product, no node recorded
        const auto plain = batched_product_training(a0.detach().clone().requires_grad_(true), b0);
        QVERIFY(!plain.requires_grad());
        QVERIFY2(relative_error(plain, torch::matmul(a0, b0)) < 1e-5, "values without a graph");
      }
      for (const bool b_constant : {false, true}) {
        const auto leaf_a = a0.detach().clone().requires_grad_(true),
                   leaf_b = b0.detach().clone().requires_grad_(!b_constant);
        const auto ref_a = a0.detach().clone().requires_grad_(true),
                   ref_b = b0.detach().clone().requires_grad_(!b_constant);
        // Transposed views of the leaves reach the kernel as they are (strided).
        const auto a = shape.a_transposed ? leaf_a.transpose(-1, -2).contiguous().transpose(-1, -2) : leaf_a;
        QVERIFY(batched_product_training_applies(a, leaf_b));
        const auto ours = batched_product_training(a, leaf_b);
        const auto reference = torch::matmul(ref_a, ref_b);
        QVERIFY2(relative_error(ours, reference) < 1e-5, "values");
        ours.backward(upstream);
        reference.backward(upstream);
        const double error_a = relative_error(leaf_a.grad(), ref_a.grad());
        QVERIFY2(error_a < 1e-5, qPrintable(QString("grad a: relative error %1").arg(error_a)));
        QCOMPARE(leaf_b.grad().defined(), !b_constant);
        if (!b_constant) {
          const double error_b = relative_error(leaf_b.grad(), ref_b.grad());
          QVERIFY2(error_b < 1e-5, qPrintable(QString("grad b: relative error %1").arg(error_b)));
        }
      }
    }
    QVERIFY(!batched_product_training_applies(torch::randn({4, 3}), torch::randn({2, 3, 5})));     // not batched alike
    QVERIFY(!batched_product_training_applies(torch::randn({2, 4, 3}), torch::randn({3, 3, 5})));  // batch sizes differ
    QVERIFY(!batched_product_training_applies(torch::randn({2, 4, 3}), torch::randn({2, 4, 5})));  // inner sizes differ
    QVERIFY(!batched_product_training_applies(torch::randn({2, 4, 3}, torch::kDouble),
                                              torch::randn({2, 3, 5}, torch::kDouble)));
    QVERIFY(!batched_product_training_applies(torch::randn({0, 4, 3}), torch::randn({0, 3, 5})));
  }

  // A whole captioner (static expansion encoder, dynamic expansion decoder with
  // cross-attention; no dropout) in training mode, fused kernels against LibTorch's
  // operators: every parameter's gradient of one loss, with padding in the masks.
  void captionerGradientsMatchTheUnfusedPath() {
    torch::manual_seed(5);
    const ModelConfig config = tiny_model_config();
    ExpansionNet model(config, 23);
    model->train();
    const int64_t B = 3, T = 6;
    const auto features = torch::randn({B, config.feature_tokens(), config.final_swin_dim});
    auto tokens = torch::randint(3, 23, {B, T}, torch::kLong);
    tokens.index_put_({1, torch::indexing::Slice(4)}, 0);  // padding (pad id 0) at the end of one caption
    auto run = [&](bool fused) {
      set_fused_training_kernels(fused);
      model->zero_grad();
      const auto log_probs = model->decode(model->encode(features), tokens, causal_self_mask(tokens, 0),
                                           cross_attention_mask(tokens, 0, config.feature_tokens()));
      (log_probs * torch::linspace(-1, 1, log_probs.size(-1))).sum().backward();
      set_fused_training_kernels(true);
      std::vector<torch::Tensor> grads;
      for (const auto& p : model->parameters())
        grads.push_back(p.grad().defined() ? p.grad().clone() : torch::Tensor());
      return grads;
    };
    const auto fused = run(true), reference = run(false);
    double largest = 0;
    for (const auto& g : reference)
      if (g.defined()) largest = std::max(largest, g.abs().max().item<double>());
    int compared = 0;
    for (size_t i = 0; i < fused.size(); ++i) {
      QCOMPARE(fused[i].defined(), reference[i].defined());
      if (!fused[i].defined()) continue;
      // Gradients that are zero but for rounding (a key bias: softmax ignores a shift
      // shared by all keys) are held to the scale of the others.
      const double scale = reference[i].abs().max().item<double>();
      if (scale < 1e-3 * largest) {
        QVERIFY((fused[i] - reference[i]).abs().max().item<double>() < 1e-6 * largest);
        continue;
      }
      const double error = relative_error(fused[i], reference[i]);
      QVERIFY2(error < 1e-4, qPrintable(QString("%1: relative error %2")
                                            .arg(QString::fromStdString(model->named_parameters()[i].key()))
                                            .arg(error)));
      ++compared;
    }
    QVERIFY2(compared > 20, qPrintable(QString("only %1 gradients compared").arg(compared)));
  }

  void dropoutKeepsOneMinusPScaledAndItsGradientIsTheMask() {
    for (const int64_t n : {int64_t{1}, int64_t{7}, int64_t{1001}, int64_t{3} << 16}) {  // the last spans 6 blocks
      for (const double p : {0.1, 0.5}) {
        torch::manual_seed(11);
        const auto x = (torch::rand({n}) + 0.5).requires_grad_(true);  // no zeros: a zero output is a dropped element
        const auto out = dropout_training(x, p);
        const auto kept = out.detach() != 0;
        const double scale = 1.0 / (1.0 - p);
        QVERIFY(torch::allclose(out.detach().masked_select(kept), x.detach().masked_select(kept) * scale, 1e-6, 0));
        if (n > 100000) {
          const double rate = kept.to(torch::kDouble).mean().item<double>();
          QVERIFY2(std::abs(rate - (1 - p)) < 0.01, qPrintable(QString("p %1: kept %2").arg(p).arg(rate)));
        }
        const auto upstream = torch::randn({n});
        const auto grad = torch::autograd::grad({out}, {x}, {upstream})[0];
        const auto expected = torch::where(kept, upstream * scale, torch::zeros_like(upstream));
        QVERIFY(torch::allclose(grad, expected, 1e-6, 0));
      }
    }
    // a transposed (non-contiguous) input, 2-D
    torch::manual_seed(5);
    const auto x = torch::rand({37, 53}).add_(0.5).t().requires_grad_(true);
    const auto out = dropout_training(x, 0.3);
    QCOMPARE(out.sizes(), x.sizes());
    QVERIFY(torch::allclose(out.detach().masked_select(out.detach() != 0),
                            (x.detach() / 0.7).masked_select(out.detach() != 0)));
  }

  void dropoutMasksFollowLibTorchsSeedNotTheThreads() {
    const auto x = torch::rand({200003}).add_(0.5);
    torch::manual_seed(42);
    const auto first = dropout_training(x, 0.25);
    const auto second = dropout_training(x, 0.25);  // the generator moved on: another mask
    QVERIFY(!torch::equal(first != 0, second != 0));
    const int threads = at::get_num_threads();
    at::set_num_threads(1);
    torch::manual_seed(42);
    const auto one_thread = dropout_training(x, 0.25);
    at::set_num_threads(threads);
    QVERIFY(torch::equal(first, one_thread));
    QVERIFY(torch::equal(dropout_training(x, 0.0), x));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, dropout_training(x, 1.0));
  }
};

QTEST_GUILESS_MAIN(TestFusedTrainingKernels)
#include "test_fused_training_kernels.moc"

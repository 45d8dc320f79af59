// The fused training kernels against LibTorch's autograd: the window attention's
// values and gradients on odd sizes (a head width and window that are not a
// multiple of any vector width, a mask shared by groups of windows) and on a
// Swin stage's own size; dropout's keep rate, scaling, gradient (the mask the
// forward drew) and its seeding by LibTorch's generator.
#include <QtTest/QtTest>
#include <torch/torch.h>

#include "expnet/model/swin.h"
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

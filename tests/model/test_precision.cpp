// Inference precision (expnet/model/precision.h): option parsing, the fall-back
// on CPUs without bfloat16 hardware, and the bf16 and int8 Linears: which
// products they take, how close they stay to float32, and that stale copies
// are never used; a bf16 decoding step (its row kernels are checked in
// test_decoder_state).
#include <torch/torch.h>

#include <QtTest>

#include <cstdlib>

#include "expnet/decode/decoder_state.h"
#include "expnet/model/expansion_net.h"
#include "expnet/model/layers.h"
#include "expnet/model/precision.h"
#include "expnet/model/swin.h"
#include "kernels/cpu/few_rows_linear.h"
#include "kernels/cpu/swin_bf16_kernels.h"
#include "support/fixtures.h"

using expnet::Precision;

namespace {

double relative_error(const torch::Tensor& x, const torch::Tensor& reference) {
  return ((x - reference).norm() / reference.norm()).item<double>();
}

// Sets EXPNET_CPU_BF16 for one scope.
struct ForcedCpuBf16 {
  explicit ForcedCpuBf16(const char* value) { qputenv("EXPNET_CPU_BF16", value); }
  ~ForcedCpuBf16() { qunsetenv("EXPNET_CPU_BF16"); }
};

}  // namespace

class TestPrecision : public QObject {
  Q_OBJECT

  // A Linear in `precision`: products of 128 rows within `limit` (relative) of
  // float32; 5 rows (a decoding step) exactly float32 in int8, and in bf16 the
  // float32 product with the bfloat16-rounded weights (and inputs, with
  // AVX512_BF16); float32 again once the
  // weights change (the reduced copy is stale) until set_precision again.
  static void checkReducedLinear(Precision precision, double limit) {
    torch::manual_seed(3);
    expnet::Linear linear(96, 80);
    torch::nn::init::normal_(linear->weight, 0.0, 0.1);
    torch::nn::init::normal_(linear->bias, 0.0, 0.1);
    const auto many = torch::randn({2, 64, 96});
    const auto few = torch::randn({5, 96});
    torch::NoGradGuard no_grad;
    const auto fp32_many = linear(many), fp32_few = linear(few);
    linear->set_precision(precision);
    const auto reduced = linear(many);
    QCOMPARE(reduced.scalar_type(), torch::kFloat);
    const double error = relative_error(reduced, fp32_many);
    QVERIFY2(error > 0 && error < limit, qPrintable(QString::number(error)));
    if (precision == Precision::BF16) {
      // With AVX512_BF16 the decoding kernel rounds the input rows too (vdpbf16ps).
      const bool rounds_x = expnet::best_few_rows_isa() == expnet::FewRowsIsa::avx512_bf16;
      const auto few_seen = rounds_x ? few.to(torch::kBFloat16).to(torch::kFloat) : few;
      const auto rounded = torch::linear(few_seen, linear->weight.to(torch::kBFloat16).to(torch::kFloat), linear->bias);
      QVERIFY(torch::allclose(linear(few), rounded, 1e-5, 1e-5));
      QVERIFY(!torch::equal(linear(few), fp32_few));
    } else {
      QVERIFY(torch::equal(linear(few), fp32_few));
    }
    linear->weight.mul_(2);
    QVERIFY(torch::allclose(linear(many), torch::linear(many, linear->weight, linear->bias), 1e-5, 1e-5));
    QVERIFY(torch::allclose(linear(few), torch::linear(few, linear->weight, linear->bias), 1e-5, 1e-5));
    linear->set_precision(precision);
    QVERIFY(relative_error(linear(many), torch::linear(many, linear->weight, linear->bias)) > 0);
  }

 private slots:
  void namesParseAndUnknownOnesAreExplained() {
    QVERIFY(expnet::parse_precision("fp32", "cpu") == Precision::FP32);
    QVERIFY(expnet::parse_precision("bf16", "cpu") == Precision::BF16);
    QCOMPARE(QString::fromStdString(expnet::precision_name(Precision::BF16)), QStringLiteral("bf16"));
    const QString error = expnet_test::errorOf([] { expnet::parse_precision("fp8", "cpu"); });
    QVERIFY2(error.contains("unknown precision 'fp8'") && error.contains("fp32, bf16, int8 or auto"), qPrintable(error));
  }

  void autoAndFallBackFollowTheHardware() {
    {
      ForcedCpuBf16 off("0");
      QVERIFY(!expnet::bf16_is_fast("cpu"));
      QVERIFY(expnet::parse_precision("auto", "cpu") == Precision::FP32);
      std::string note;
      QVERIFY(expnet::effective_precision(Precision::BF16, "cpu", &note) == Precision::FP32);
      QVERIFY2(QString::fromStdString(note).contains("running in fp32 instead"), note.c_str());
      QVERIFY(expnet::effective_precision(Precision::FP32, "cpu", &note) == Precision::FP32 && note.empty());
    }
    {
      ForcedCpuBf16 on("1");
      QVERIFY(expnet::parse_precision("auto", "cpu") == Precision::BF16);
      std::string note = "x";
      QVERIFY(expnet::effective_precision(Precision::BF16, "cpu", &note) == Precision::BF16 && note.empty());
    }
    QVERIFY(expnet::bf16_is_fast("cuda:0"));  // tensor cores, whatever the CPU
    std::string why;
    expnet::bf16_is_fast("cpu", &why);
    QVERIFY2(QString::fromStdString(why).startsWith("bfloat16: "), why.c_str());
  }

  void bf16LinearTakesOnlyLargeInferenceProducts() {
    checkReducedLinear(Precision::BF16, 1e-2);  // bfloat16 keeps 8 bits of mantissa
    expnet::Linear linear(96, 80);
    torch::nn::init::normal_(linear->weight, 0.0, 0.1);
    torch::nn::init::zeros_(linear->bias);
    const auto many = torch::randn({128, 96});
    torch::NoGradGuard no_grad;
    linear->set_precision(Precision::BF16);
    linear->set_precision(Precision::FP32);  // frees the copy: float32 again
    QVERIFY(torch::allclose(linear(many), torch::linear(many, linear->weight, linear->bias), 1e-5, 1e-5));
  }

  void int8LinearIsCloseAndCpuOnly() {
    std::string why;
    if (!expnet::int8_is_available("cpu", &why)) QSKIP(why.c_str());
    checkReducedLinear(Precision::INT8, 3e-2);  // 8-bit weights and activations
    std::string note;
    QVERIFY(expnet::effective_precision(Precision::INT8, "cuda", &note) == Precision::FP32);
    QVERIFY2(QString::fromStdString(note).contains("CPU only"), note.c_str());
    QVERIFY(expnet::parse_precision("int8", "cpu") == Precision::INT8);
  }

  void trainingStaysFloat32() {
    expnet::Linear linear(32, 16);
    torch::nn::init::normal_(linear->weight, 0.0, 0.1);
    torch::nn::init::zeros_(linear->bias);
    linear->set_precision(Precision::BF16);
    const auto x = torch::randn({128, 32});
    const auto y = linear(x);  // autograd on: float32, gradients flow
    QVERIFY(torch::allclose(y, torch::linear(x, linear->weight, linear->bias), 1e-5, 1e-5));
    y.sum().backward();
    QVERIFY(linear->weight.grad().defined());
  }

  // A tiny model in bf16: its encoder output close to float32's. A decoding step
  // of 5 rows (beam 5): its log-probabilities close to float32's but not equal
  // (it read the bfloat16 weights), the same on the fused CPU path and the
  // LibTorch-operation path, and float32's exactly again after FP32.
  void modelEncodeAndDecodeStayCloseInBf16() {
    torch::manual_seed(1);
    const auto config = expnet::tiny_model_config();
    expnet::ExpansionNet model(config, 50);
    model->eval();
    torch::NoGradGuard no_grad;
    const auto enc_out = torch::randn({5, 12, config.d_model});  // 5 rows: one per image
    const auto tokens = torch::tensor({3, 7, 11, 2, 9}, torch::kLong);
    const auto step = [&](bool cpu_kernels) {
      expnet::DecoderState state(model, enc_out, cpu_kernels);
      state.step(tokens);
      return state.step(tokens.flip(0));
    };
    const auto fp32_step = step(true);
    const auto images = torch::randn({1, 3, config.swin_img_size, config.swin_img_size});
    const auto fp32 = model->encode(model->backbone(images));
    model->set_precision(Precision::BF16);
    const auto bf16 = model->encode(model->backbone(images));
    const double error = relative_error(bf16, fp32);
    QVERIFY2(error > 0 && error < 0.05, qPrintable(QString::number(error)));
    const auto fused = step(true), ops = step(false);
    const double difference = (fused - fp32_step).abs().max().item<double>();
    QVERIFY2(difference > 0 && difference < 0.05, qPrintable(QString::number(difference)));
    QVERIFY2(torch::allclose(fused, ops, 1e-4, 1e-4), qPrintable(QString::number((fused - ops).abs().max().item<double>())));
    if (expnet::int8_is_available("cpu")) {
      model->set_precision(Precision::INT8);
      const double int8_error = relative_error(model->encode(model->backbone(images)), fp32);
      QVERIFY2(int8_error > 0 && int8_error < 0.1, qPrintable(QString::number(int8_error)));
    }
    model->set_precision(Precision::FP32);
    QVERIFY(torch::allclose(model->encode(model->backbone(images)), fp32, 1e-5, 1e-5));
    QVERIFY(torch::allclose(step(true), fp32_step, 1e-6, 1e-6));
  }

  // The Swin backbone's bf16 kernels (core/src/kernels/cpu/swin_bf16_kernels.h)
  // against LibTorch in float32, on sizes that leave vector tails (49 keys, 37
  // and 40 channels): within bfloat16's rounding of the output; the windows'
  // token order exactly as roll + partition and their reverse; refusals.
  void swinBf16KernelsMatchLibTorch() {
    using namespace expnet;
    torch::manual_seed(5);
    torch::NoGradGuard no_grad;
    const auto scores = (torch::randn({4, 3, 49, 49}) * 3).to(torch::kBFloat16);
    const auto bias = torch::randn({3, 49, 49});
    const auto mask = torch::where(torch::rand({2, 49, 49}) > 0.7, torch::full({}, -100.0), torch::zeros({}));
    if (!window_softmax_bf16_applies(scores, bias, mask)) QSKIP("this CPU has no AVX512_BF16: the kernels do not run");
    // Softmax of scores + bias + mask (window w takes mask w % 2).
    auto mine = scores.clone();
    window_softmax_bf16_(mine, bias, mask);
    const auto grouped_mask = mask.unsqueeze(1).repeat({2, 1, 1, 1});
    const auto expected = torch::softmax(scores.to(torch::kFloat) + bias + grouped_mask, -1);
    QVERIFY(mine.scalar_type() == torch::kBFloat16);
    QVERIFY2((mine.to(torch::kFloat) - expected).abs().max().item<double>() < 4e-3, "window softmax");
    auto scaled = scores.clone();
    window_softmax_bf16_(scaled, bias, mask, 0.25);
    const auto scaled_ref = torch::softmax(scores.to(torch::kFloat) * 0.25 + bias + grouped_mask, -1);
    QVERIFY2((scaled.to(torch::kFloat) - scaled_ref).abs().max().item<double>() < 4e-3, "scaled window softmax");
    // q, k transposed and v split into heads: LibTorch's reshape and permute, made contiguous.
    const auto qkv = torch::randn({3, 10, 3 * 24}).to(torch::kBFloat16);
    const auto heads = qkv.view({3, 10, 3, 4, 6}).permute({2, 0, 3, 1, 4});
    const auto split = split_heads_bf16(qkv, 4);
    QVERIFY(torch::equal(split.q, heads[0]) && torch::equal(split.v, heads[2]));
    QVERIFY(torch::equal(split.k_transposed, heads[1].transpose(-2, -1)) && split.k_transposed.is_contiguous());
    const auto qkv_bias = torch::randn({3 * 24});
    const auto biased = split_heads_bf16(qkv, 4, qkv_bias);
    const auto heads_biased = (qkv.to(torch::kFloat) + qkv_bias).to(torch::kBFloat16).view({3, 10, 3, 4, 6}).permute({2, 0, 3, 1, 4});
    QVERIFY(torch::equal(biased.q, heads_biased[0]) && torch::equal(biased.v, heads_biased[2]) &&
            torch::equal(biased.k_transposed, heads_biased[1].transpose(-2, -1)));
    QVERIFY(!split_heads_bf16_applies(qkv, 5));
    QVERIFY(!split_heads_bf16_applies(qkv, 4, torch::randn({24})));
    auto plain = scores.clone();
    window_softmax_bf16_(plain, bias, {});
    QVERIFY((plain.to(torch::kFloat) - torch::softmax(scores.to(torch::kFloat) + bias, -1)).abs().max().item<double>() < 4e-3);
    // LayerNorm straight to bfloat16.
    const auto x = torch::randn({5, 37}) * 4 + 1, weight = torch::randn({37}), shift = torch::randn({37});
    const auto normed = layer_norm_to_bf16(x, weight, shift, 1e-5);
    const auto normed_ref = torch::layer_norm(x, {37}, weight, shift, 1e-5);
    QVERIFY(normed.scalar_type() == torch::kBFloat16);
    QVERIFY(relative_error(normed.to(torch::kFloat), normed_ref) < 4e-3);
    // GELU with a bias, in place, and the rows' residual add.
    const auto hidden = (torch::randn({7, 40}) * 3).to(torch::kBFloat16), hidden_bias = torch::randn({40});
    auto activated = hidden.clone();
    gelu_bf16_(activated, hidden_bias);
    const auto gelu_ref = torch::gelu(hidden.to(torch::kFloat) + hidden_bias);
    QVERIFY(relative_error(activated.to(torch::kFloat), gelu_ref) < 4e-3);
    auto residual = torch::randn({7, 40});
    const auto residual_ref = residual + hidden.to(torch::kFloat) + hidden_bias;
    add_rows_bf16_(residual, hidden, hidden_bias);
    QVERIFY(torch::allclose(residual, residual_ref, 1e-6, 1e-6));
    // The token order of shifted windows: resolution 6, window 3, shift 1, two images, 8 channels.
    const auto order = shifted_window_order(6, 3, 1);
    const auto tokens = torch::randn({2, 36, 8});
    const auto gathered = gather_tokens_bf16(tokens, order);
    const auto rolled = torch::roll(tokens.view({2, 6, 6, 8}), {-1, -1}, {1, 2});
    const auto partitioned = rolled.view({2, 2, 3, 2, 3, 8}).permute({0, 1, 3, 2, 4, 5}).reshape({2, 36, 8});
    QVERIFY(torch::equal(gathered, partitioned.to(torch::kBFloat16)));
    const auto rows = torch::randn({2, 36, 8}).to(torch::kBFloat16), row_bias = torch::randn({8});
    const auto reversed = rows.to(torch::kFloat).view({2, 2, 2, 3, 3, 8}).permute({0, 1, 3, 2, 4, 5}).reshape({2, 6, 6, 8});
    const auto back = torch::roll(reversed, {1, 1}, {1, 2}).reshape({2, 36, 8});
    QVERIFY(torch::allclose(add_scattered_tokens(tokens, rows, order, row_bias), tokens + back + row_bias, 1e-6, 1e-6));
    QVERIFY(torch::equal(add_scattered_tokens(tokens, rows, order), tokens + back));
    // Refused, not guessed: float32 scores, a bias of the wrong size, a mask that does not divide the windows.
    QVERIFY(!window_softmax_bf16_applies(scores.to(torch::kFloat), bias, mask));
    QVERIFY(!window_softmax_bf16_applies(scores, bias.narrow(0, 0, 2), mask));
    QVERIFY(!window_softmax_bf16_applies(scores, bias, torch::zeros({3, 49, 49})));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, window_softmax_bf16_(mine, bias.narrow(0, 0, 2).contiguous(), mask));
    QVERIFY(!gelu_bf16_applies(hidden.to(torch::kFloat)));
    QVERIFY(!layer_norm_to_bf16_applies(x, weight.narrow(0, 0, 5), shift));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, shifted_window_order(7, 3, 1));
  }

  // A Swin block with non-zero biases (the random official weights have zero
  // ones): in bf16 the projection's and MLP's biases join our kernels' passes;
  // the block's output stays within bfloat16's error of float32's.
  void swinBlockInBf16KeepsItsBiases() {
    torch::manual_seed(9);
    expnet::SwinBlock block(64, 12, 4, 6, 3, 4.0, true);
    for (auto& p : block->parameters()) {
      if (p.dim() == 1) torch::nn::init::normal_(p, 0.0, 0.5);
      else torch::nn::init::normal_(p, 0.0, 0.1);
    }
    block->eval();
    torch::NoGradGuard no_grad;
    const auto x = torch::randn({2, 144, 64});
    const auto fp32 = block->forward_sliced(x);
    for (auto* linear : {&block->attn->qkv, &block->attn->proj, &block->mlp->fc1, &block->mlp->fc2})
      (*linear)->set_precision(Precision::BF16);
    const auto bf16 = block->forward_sliced(x);
    QCOMPARE(bf16.scalar_type(), torch::kFloat);
    const double error = relative_error(bf16, fp32);
    QVERIFY2(error > 0 && error < 2e-2, qPrintable(QString::number(error)));
  }
};

QTEST_GUILESS_MAIN(TestPrecision)
#include "test_precision.moc"

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
  // float32 product with the bfloat16-rounded weights; float32 again once the
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
      const auto rounded = torch::linear(few, linear->weight.to(torch::kBFloat16).to(torch::kFloat), linear->bias);
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
};

QTEST_GUILESS_MAIN(TestPrecision)
#include "test_precision.moc"

// Incremental decoding (DecoderState) against the full recomputation
// (ExpansionNet::decode) with the tiny fixture's reference weights: the same
// log-probs within 1e-5, teacher-forced and under beam-style reordering.
#include <QtTest>

#include <ATen/Parallel.h>

#include <atomic>
#include <cmath>
#include <string>
#include <limits>
#include <stdexcept>
#include <thread>
#include <vector>

#include "expnet/decode/decoder_state.h"
#include "expnet/model/expansion_net.h"
#include "kernels/cpu/few_rows_linear.h"
#include "kernels/cpu/step_kernels.h"
#include "kernels/cpu/step_threads.h"
#include "reference_tiny.h"
#include "support/fixtures.h"

using expnet_test::compareTensors;

namespace {
constexpr double kTolerance = 1e-5;

enum class Operands { normal, positive, integers };
const char* operand_name(Operands o) {
  return o == Operands::normal ? "N(0,1)" : o == Operands::positive ? "U(0,1)" : "integer";
}
// N(0,1); U(0,1) (all positive: partial sums only grow, rounding errors add up);
// integers in [-8, 8], exact in bfloat16, whose products and sums up to 2048
// terms stay below 2^24: exact in float32 in any order.
torch::Tensor make_operand(at::IntArrayRef sizes, Operands o) {
  if (o == Operands::normal) return torch::randn(sizes);
  if (o == Operands::positive) return torch::rand(sizes);
  return torch::randint(-8, 9, sizes).to(torch::kFloat);
}

// How far y is from the exact x W^T + b, as a fraction of what float32
// summation in any order may add (Higham, Accuracy and Stability, 3.1):
// |y - exact| <= gamma(n) (|x| |W|^T + |b|), gamma(n) = n u / (1 - n u),
// u = 2^-24, n = inputs + 1 (the bias). 0 where y is exact; above 1, the
// kernel loses more than rounding explains.
double summation_error_ratio(const torch::Tensor& y, const torch::Tensor& x, const torch::Tensor& w,
                             const torch::Tensor& b) {
  const auto xd = x.to(torch::kDouble), wd = w.to(torch::kDouble);
  const auto bd = b.defined() ? b.to(torch::kDouble) : torch::Tensor();
  const auto exact = torch::linear(xd, wd, bd);
  const auto scale = torch::linear(xd.abs(), wd.abs(), b.defined() ? bd.abs() : torch::Tensor());
  const double n = static_cast<double>(w.size(1) + 1), u = std::ldexp(1.0, -24), gamma = n * u / (1 - n * u);
  const auto error = (y.to(torch::kDouble) - exact).abs();
  // Where the bound is 0 (every product 0) y must be exactly 0 too.
  return (error / (gamma * scale).clamp_min(std::numeric_limits<double>::min())).max().item<double>();
}

std::string isa_names(int best) {
  static const char* names[] = {"portable", "AVX2+FMA", "AVX-512", "AVX512_BF16"};
  std::string out;
  for (int i = 0; i <= best; ++i) out += (i ? ", " : "") + std::string(names[i]);
  return out;
}
}  // namespace

class TestDecoderState : public QObject {
  Q_OBJECT
  expnet::ExpansionNet model_{nullptr};
  expnet_test::TinyReference reference_;

  // Full recomputation: log-probs of the next token after each row's history.
  torch::Tensor full_last(const torch::Tensor& enc_rows, const std::vector<std::vector<int64_t>>& histories) {
    std::vector<torch::Tensor> rows;
    for (const auto& h : histories) rows.push_back(torch::tensor(h, torch::kLong));
    const auto tokens = torch::stack(rows);
    const auto log_probs = model_->decode(enc_rows, tokens, expnet::causal_self_mask(tokens, reference_.pad_id));
    return log_probs.select(1, tokens.size(1) - 1);
  }

  // Tests with _data run twice: with the fused CPU kernels (what a CPU decodes
  // with) and with the LibTorch-operation path (what other devices run).
  static void addPaths() {
    QTest::addColumn<bool>("cpuKernels");
    QTest::newRow("cpu kernels") << true;
    QTest::newRow("tensor ops") << false;
  }

 private slots:
  void initTestCase() {
    EXPNET_FIXTURE(checkpoint, "reference/tiny/checkpoint.pth");
    const QString error = expnet_test::loadTinyReference(QFileInfo(checkpoint).absolutePath(), model_, reference_);
    QVERIFY2(error.isEmpty(), qPrintable(error));
  }

  void teacherForcedStepsEqualFullDecode_data() { addPaths(); }
  void teacherForcedStepsEqualFullDecode() {
    QFETCH(bool, cpuKernels);
    torch::NoGradGuard no_grad;
    const auto& tokens = reference_.expected.at("decoder_input");
    const auto enc = model_->encode(model_->backbone(reference_.expected.at("images")));
    const auto full = model_->decode(enc, tokens, expnet::causal_self_mask(tokens, reference_.pad_id));
    // The full path is the verified one: check it against the fixture too.
    QVERIFY(compareTensors(full, reference_.expected.at("decoder_logprobs")).max_abs <= 1e-4);
    expnet::DecoderState state(model_, enc, cpuKernels);
    double worst = 0;
    for (int64_t t = 0; t < tokens.size(1); ++t) {
      const auto step = state.step(tokens.select(1, t));
      const auto diff = compareTensors(step, full.select(1, t));
      worst = std::max(worst, diff.max_abs);
      QVERIFY2(diff.max_abs <= kTolerance,
               qPrintable(QStringLiteral("position %1: max |diff| %2 at %3").arg(t).arg(diff.max_abs).arg(diff.where)));
    }
    QCOMPARE(state.length(), tokens.size(1));
    qInfo("incremental vs full, teacher-forced %lld positions: max |diff| = %.3g",
          static_cast<long long>(tokens.size(1)), worst);
  }

  // Up to T_max positions: the row caches grow (doubling) on the way.
  void everyPositionUpToTheLimit_data() { addPaths(); }
  void everyPositionUpToTheLimit() {
    QFETCH(bool, cpuKernels);
    torch::NoGradGuard no_grad;
    const auto& image = reference_.expected.at("images");
    const auto enc = model_->encode(model_->backbone(torch::cat({image, image.flip({2})}, 0)));
    expnet::DecoderState state(model_, enc, cpuKernels);
    std::vector<std::vector<int64_t>> histories = {{}, {}};
    const int64_t V = reference_.vocab_size, T = reference_.config.max_seq_len;
    double worst = 0;
    for (int64_t t = 0; t < T; ++t) {
      std::vector<int64_t> next;
      for (int64_t r = 0; r < 2; ++r) next.push_back(t == 0 ? reference_.sos_id : 3 + (5 * t + 13 * r) % (V - 3));
      for (size_t r = 0; r < 2; ++r) histories[r].push_back(next[r]);
      const auto diff = compareTensors(state.step(torch::tensor(next, torch::kLong)), full_last(enc, histories));
      worst = std::max(worst, diff.max_abs);
      QVERIFY2(diff.max_abs <= kTolerance,
               qPrintable(QStringLiteral("position %1: max |diff| %2 at %3").arg(t).arg(diff.max_abs).arg(diff.where)));
    }
    QCOMPARE(state.length(), T);
    qInfo("incremental vs full, %lld positions (T_max): max |diff| = %.3g", static_cast<long long>(T), worst);
  }

  void reorderingFollowsTheRows_data() { addPaths(); }
  void reorderingFollowsTheRows() {
    QFETCH(bool, cpuKernels);
    torch::NoGradGuard no_grad;
    // Two images (the fixture image and its mirror), 3 rows each after the
    // first step, parents permuted within and across images as beams do.
    const auto& image = reference_.expected.at("images");
    const auto enc = model_->encode(model_->backbone(torch::cat({image, image.flip({3})}, 0)));
    expnet::DecoderState state(model_, enc, cpuKernels);
    std::vector<std::vector<int64_t>> histories = {{}, {}};
    const int64_t V = reference_.vocab_size;
    const auto feed = [&](const std::vector<int64_t>& next) {
      for (size_t r = 0; r < next.size(); ++r) histories[r].push_back(next[r]);
      const auto ours = state.step(torch::tensor(next, torch::kLong));
      const auto expected = full_last(enc.index_select(0, state.row_image()), histories);
      return compareTensors(ours, expected);
    };
    const auto reorder = [&](const std::vector<int64_t>& parents) {
      std::vector<std::vector<int64_t>> next;
      for (const auto p : parents) next.push_back(histories[static_cast<size_t>(p)]);
      histories = next;
      state.reorder(torch::tensor(parents, torch::kLong));
    };
    double worst = feed({reference_.sos_id, reference_.sos_id}).max_abs;
    reorder({0, 0, 0, 1, 1, 1});  // expand to 3 beams per image
    const std::vector<std::vector<int64_t>> parent_steps = {
        {2, 0, 1, 3, 5, 4}, {0, 0, 2, 4, 4, 3}, {1, 2, 0, 5, 3, 3},
        {3, 4, 5, 0, 1, 2},  // images swapped: rows no longer image-major (gathered keys/values)
        {0, 1, 2, 3, 4, 5}, {5, 4, 3, 2, 1, 0},
        // past the caches' first capacity (8 positions): they grow between reorders
        {1, 1, 0, 3, 3, 5}, {2, 0, 1, 4, 5, 3}, {0, 0, 0, 5, 5, 5}, {1, 2, 0, 4, 3, 5}};
    for (size_t s = 0; s < parent_steps.size(); ++s) {
      std::vector<int64_t> next;
      // Real words only (ids 3.. : PAD, SOS, EOS are 0, 1, 2): decoding never feeds padding.
      for (int64_t r = 0; r < 6; ++r) next.push_back(3 + (7 * static_cast<int64_t>(s) + 11 * r) % (V - 3));
      const auto diff = feed(next);
      worst = std::max(worst, diff.max_abs);
      QVERIFY2(diff.max_abs <= kTolerance,
               qPrintable(QStringLiteral("step %1: max |diff| %2 at %3").arg(s).arg(diff.max_abs).arg(diff.where)));
      reorder(parent_steps[s]);
    }
    const auto diff = feed({4, 5, 6, 7, 8, 9});
    worst = std::max(worst, diff.max_abs);
    QVERIFY2(diff.max_abs <= kTolerance, qPrintable(diff.where));
    qInfo("incremental vs full under reordering (2 images x 3 rows, %lld steps): max |diff| = %.3g",
          static_cast<long long>(state.length()), worst);
  }

  void badArgumentsAreErrors() {
    torch::NoGradGuard no_grad;
    expnet::DecoderState state(model_, reference_.expected.at("encoder_output"));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, state.step(torch::tensor({1, 2}, torch::kLong)));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, state.reorder(torch::tensor({1}, torch::kLong)));
    for (int64_t t = 0; t < reference_.config.max_seq_len; ++t) state.step(torch::tensor({1}, torch::kLong));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, state.step(torch::tensor({1}, torch::kLong)));
  }

  // The decoding steps' own matrix kernels (every instruction set this CPU
  // runs) against what float32 summation promises in any order
  // (docs/decoding.md, "Accuracy of the row kernels"): within
  // gamma(n+1) (|x| |W|^T + |b|) of the exact product, computed in double.
  // Sizes leave tails (inputs not a multiple of 16 or 32, outputs not of 4, 6
  // or 48, rows not of 4 or 8) and reach the official model's widest input
  // (2048); all-positive operands are the worst case for rounding (no
  // cancellation). Small integers make every sum exact in any order: there the
  // kernels must equal the exact product, so a lost or doubled term fails
  // however small. The bf16 ones (--precision bf16, up to kFewRowsLimit rows)
  // are held to the same bound with the bfloat16-rounded weights.
  void fewRowsLinearEqualsTorchLinear() {
    torch::NoGradGuard no_grad;
    torch::manual_seed(7);
    const int best = static_cast<int>(expnet::best_few_rows_isa());
    double worst_ratio = 0;
    int cases = 0;
    for (int isa = 0; isa <= best; ++isa) {
      const auto kind = static_cast<expnet::FewRowsIsa>(isa);
      for (const int64_t in : {5, 16, 37, 512, 2048})
        for (const int64_t out : {1, 13, 64})
          for (const int64_t rows : {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 40, 63, 64})
            for (const Operands operands : {Operands::normal, Operands::positive, Operands::integers}) {
              if (in == 2048 && rows > 13 && rows != 40) continue;  // the long input at the row counts decoding takes
              const auto x = make_operand({rows, 1, in}, operands), w = make_operand({out, in}, operands),
                         b = make_operand({out}, operands);
              const QString where = QString("isa %1, %2 rows, %3 -> %4, %5 operands")
                                        .arg(isa).arg(rows).arg(in).arg(out).arg(operand_name(operands));
              const auto with_bias = expnet::few_rows_linear(x, w, b, kind);
              QCOMPARE(with_bias.sizes(), torch::linear(x, w, b).sizes());
              for (const bool bias : {true, false}) {
                const auto y = bias ? with_bias : expnet::few_rows_linear(x, w, {}, kind);
                const double ratio = summation_error_ratio(y, x, w, bias ? b : torch::Tensor());
                QVERIFY2(ratio <= (operands == Operands::integers ? 0.0 : 1.0),
                         qPrintable(where + QString(": error %1 times float32 summation's bound").arg(ratio)));
                worst_ratio = std::max(worst_ratio, ratio);
                ++cases;
              }
              if (rows > expnet::kFewRowsLimit) continue;
              const auto w_bf16 = w.to(torch::kBFloat16), rounded = w_bf16.to(torch::kFloat);
              QVERIFY(expnet::few_rows_linear_bf16_applies(x, w_bf16));
              // The AVX512_BF16 kernel rounds x to bfloat16 too (vdpbf16ps).
              const auto x_seen = kind == expnet::FewRowsIsa::avx512_bf16 ? x.to(torch::kBFloat16).to(torch::kFloat) : x;
              for (const bool bias : {true, false}) {
                const auto y = expnet::few_rows_linear_bf16(x, w_bf16, bias ? b : torch::Tensor(), kind);
                const double ratio = summation_error_ratio(y, x_seen, rounded, bias ? b : torch::Tensor());
                QVERIFY2(ratio <= (operands == Operands::integers ? 0.0 : 1.0),
                         qPrintable("bf16, " + where + QString(": error %1 times float32 summation's bound").arg(ratio)));
                worst_ratio = std::max(worst_ratio, ratio);
                ++cases;
              }
            }
    }
    qInfo("row kernels, ISA families 0..%d (%s): %d products, worst error %.3g of float32 summation's bound", best,
          isa_names(best).c_str(), cases, worst_ratio);
    // The packed path (AVX-512, more than kFewRowsLimit rows), through a
    // cache: outputs that leave a partial panel, and a weight changed in place
    // (the cache must repack it) or replaced by another of a new shape.
    if (best >= static_cast<int>(expnet::FewRowsIsa::avx512)) {
      expnet::PackedWeightCache cache;
      auto w = torch::randn({100, 37});
      const auto b = torch::randn({100});
      for (const int64_t rows : {9, 15, 16, 17, 40, 64}) {
        const auto x = torch::randn({rows, 37});
        const double ratio = summation_error_ratio(expnet::few_rows_linear(x, w, b, cache), x, w, b);
        QVERIFY2(ratio <= 1.0, qPrintable(QString("packed, %1 rows: error %2 times the bound").arg(rows).arg(ratio)));
      }
      const auto x = torch::randn({24, 37});
      w.mul_(-2.0);
      QVERIFY(summation_error_ratio(expnet::few_rows_linear(x, w, {}, cache), x, w, {}) <= 1.0);
      const auto other = torch::randn({49, 37});
      QVERIFY(summation_error_ratio(expnet::few_rows_linear(x, other, {}, cache), x, other, {}) <= 1.0);
    }
    // Above the limit or for other types it is torch::linear itself.
    const auto many = torch::randn({expnet::kBlockedRowsLimit + 1, 8}), w = torch::randn({3, 8});
    QVERIFY(!expnet::few_rows_linear_applies(many, w));
    QVERIFY(torch::equal(expnet::few_rows_linear(many, w, {}), torch::linear(many, w)));
    QVERIFY(!expnet::few_rows_linear_applies(many.narrow(0, 0, 2).to(torch::kDouble), w.to(torch::kDouble)));
    // The bf16 kernels take no more rows, no float32 weights and no other x: refused, not guessed.
    const auto w_bf16 = w.to(torch::kBFloat16);
    QVERIFY(!expnet::few_rows_linear_bf16_applies(many, w_bf16));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, expnet::few_rows_linear_bf16(many, w_bf16, {}));
    QVERIFY(!expnet::few_rows_linear_bf16_applies(many.narrow(0, 0, 2), w));
    QVERIFY(!expnet::few_rows_linear_bf16_applies(many.narrow(0, 0, 2).to(torch::kDouble), w_bf16));
    QVERIFY(!expnet::few_rows_linear_bf16_applies(torch::randn({2, 7}), w_bf16));
  }

  // The decoding step's own log_softmax (core/src/kernels/cpu/step_kernels.h, with
  // our vectorised exponential) against LibTorch's: vocabulary-sized rows,
  // lengths that leave vector tails, large logits, banned entries (-1e9) and
  // -inf, on one and on several threads.
  void logSoftmaxRowsEqualsTorch() {
    torch::NoGradGuard no_grad;
    torch::manual_seed(11);
    const int before = at::get_num_threads();
    for (const int threads : {1, 2})
      for (const int64_t rows : {1, 5, 40})
        for (const int64_t n : {1, 7, 50, 10000, 10003}) {
          at::set_num_threads(threads);
          auto x = torch::randn({rows, n}) * 8;
          if (n > 7) {
            x[0][3] = -1e9;
            x[rows - 1][n - 1] = -std::numeric_limits<float>::infinity();
            x[rows - 1][0] = 80.f;
          }
          const auto ours = expnet::log_softmax_rows_cpu(x);
          const auto expected = torch::log_softmax(x, -1);
          const auto finite = expected.isfinite();
          QVERIFY(torch::equal(ours.isfinite(), finite));
          const auto relative = ((ours - expected).abs() / expected.abs().clamp_min(1.0)).masked_select(finite);
          const double worst = relative.max().item<double>();
          QVERIFY2(worst < 2e-6, qPrintable(QString("%1 threads, %2 rows of %3: differs by %4 (relative)")
                                                .arg(threads).arg(rows).arg(n).arg(worst)));
        }
    at::set_num_threads(before);
    QVERIFY(!expnet::log_softmax_rows_cpu_applies(torch::randn({2, 3, 4})));
    QVERIFY(!expnet::log_softmax_rows_cpu_applies(torch::randn({2, 3}, torch::kDouble)));
    QVERIFY(!expnet::log_softmax_rows_cpu_applies(torch::randn({3, 2}).t()));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, expnet::log_softmax_rows_cpu(torch::randn({2, 3}, torch::kDouble)));
  }

  // The decoding threads (core/src/kernels/cpu/step_threads.h): every index exactly
  // once, parts in whole granules, for several thread counts (each count makes
  // a fresh pool whose first run is posted at once), many runs in a row (a
  // lost wake-up would hang here), errors rethrown on the caller, and two
  // callers at once (one of them runs alone).
  void parallelStepCoversEveryIndexOnce() {
    const int before = at::get_num_threads();
    for (const int threads : {1, 2, 3, 2}) {
      at::set_num_threads(threads);
      for (const int64_t n : {1, 2, 7, 64, 1000})
        for (const int64_t granule : {1, 4, 6}) {
          std::vector<std::atomic<int>> seen(static_cast<size_t>(n));
          std::atomic<int> misaligned{0};
          expnet::parallel_step(n, granule, [&](int64_t first, int64_t last) {
            if (first % granule != 0) ++misaligned;
            for (int64_t i = first; i < last; ++i) ++seen[static_cast<size_t>(i)];
          });
          QCOMPARE(misaligned.load(), 0);
          for (int64_t i = 0; i < n; ++i)
            QVERIFY2(seen[static_cast<size_t>(i)] == 1, qPrintable(QString("threads %1, n %2, granule %3: index %4 ran %5 times")
                                                                    .arg(threads).arg(n).arg(granule).arg(i).arg(seen[static_cast<size_t>(i)].load())));
        }
      std::atomic<int64_t> sum{0};
      for (int run = 0; run < 20000; ++run)
        expnet::parallel_step(2, 1, [&](int64_t first, int64_t last) { sum += last - first; });
      QCOMPARE(sum.load(), int64_t{40000});
      QVERIFY_EXCEPTION_THROWN(expnet::parallel_step(8, 1, [](int64_t, int64_t last) {
                                 if (last == 8) throw std::runtime_error("last part failed");  // a worker's part
                               }),
                               std::runtime_error);
    }
    at::set_num_threads(2);
    std::atomic<int64_t> total{0};
    auto caller = [&] {
      for (int run = 0; run < 2000; ++run)
        expnet::parallel_step(16, 1, [&](int64_t first, int64_t last) { total += last - first; });
    };
    std::thread other(caller);
    caller();
    other.join();
    QCOMPARE(total.load(), int64_t{2 * 2000 * 16});
    at::set_num_threads(before);
  }
};

QTEST_GUILESS_MAIN(TestDecoderState)
#include "test_decoder_state.moc"

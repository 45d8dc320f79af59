// Training building blocks: RAdam against Liu et al.'s rule and against
// torch.optim.RAdam, the learning-rate schedules with the spec's numbers, the
// label-smoothed cross-entropy against a PyTorch KLDivLoss computation, and
// the SCST baseline / loss / sampling; the XE and SCST benchmarks report every phase.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include <torch/torch.h>

#include <cmath>
#include <sstream>

#include "expnet/data/data_loader.h"
#include "expnet/metrics/cider_reward.h"
#include "expnet/model/expansion_net.h"
#include "expnet/model/layers.h"
#include "expnet/model/model_config.h"
#include "expnet/train/losses.h"
#include "expnet/train/lr_schedule.h"
#include "expnet/train/radam.h"
#include "expnet/train/train_bench.h"
#include "expnet/train/train_steps.h"
#include "support/fixtures.h"
#include "train/autocast_scope.h"

using namespace expnet;

namespace {

QJsonArray to_json(const torch::Tensor& t) {
  QJsonArray out;
  const auto c = t.contiguous().to(torch::kDouble);
  if (c.dim() == 1) {
    for (int64_t i = 0; i < c.size(0); ++i) out.append(c[i].item<double>());
  } else {
    for (int64_t i = 0; i < c.size(0); ++i) out.append(to_json(c[i]));
  }
  return out;
}

QJsonObject torch_peer(const QString& mode, const QJsonObject& request) {
  const QString dir = expnet_test::makeTempDir(QStringLiteral("train_peer"));
  const QString path = dir + "/request.json";
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly)) qFatal("cannot write %s", qPrintable(path));
  f.write(QJsonDocument(request).toJson(QJsonDocument::Compact));
  f.close();
  const auto r = expnet_test::runProcess(expnet_test::torchPython(),
                                         {QStringLiteral(EXPNET_TRAIN_TEST_DIR "/torch_peer.py"), mode, path});
  if (r.exitCode != 0) qFatal("torch peer failed: %s", r.err.constData());
  return QJsonDocument::fromJson(r.out).object();
}

// Liu et al.'s update written out on plain doubles, independently of RAdam.
struct ScalarRAdam {
  double m = 0, v = 0;
  int step = 0;
  double update(double p, double g, double lr) {
    const double b1 = 0.9, b2 = 0.98, eps = 1e-9;
    m = b1 * m + (1 - b1) * g;
    v = b2 * v + (1 - b2) * g * g;
    ++step;
    const double b2t = std::pow(b2, step);
    const double rho_inf = 2 / (1 - b2) - 1;
    const double rho = rho_inf - 2 * step * b2t / (1 - b2t);
    if (rho < 5) return p;
    const double r = std::sqrt((rho - 4) * (rho - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho));
    return p - lr * r * std::sqrt(1 - b2t) / (1 - std::pow(b1, step)) * m / (std::sqrt(v) + eps);
  }
};

}  // namespace

// SOS 0, EOS 1, PAD 2 (the tiny vocabularies of the SCST tests), captions up to 6 words.
static ScstOptions tinyScstOptions() {
  ScstOptions opt;
  opt.sos_id = 0;
  opt.eos_id = 1;
  opt.pad_id = 2;
  opt.max_len = 6;
  return opt;
}

class TestTraining : public QObject {
  Q_OBJECT

 private slots:
  void radamFollowsLiuRuleStepByStep() {
    torch::manual_seed(1);
    auto p = torch::randn({6}, torch::kDouble).requires_grad_(true);
    RAdam opt({p}, RAdamOptions(1e-2));
    std::vector<ScalarRAdam> ref(6);
    std::vector<double> expected(6);
    for (int i = 0; i < 6; ++i) expected[i] = p[i].item<double>();
    const auto initial = p.detach().clone();
    for (int step = 1; step <= 12; ++step) {
      const auto g = torch::randn({6}, torch::kDouble);
      p.mutable_grad() = g.clone();
      opt.step();
      for (int i = 0; i < 6; ++i) expected[i] = ref[i].update(expected[i], g[i].item<double>(), 1e-2);
      for (int i = 0; i < 6; ++i) QVERIFY(std::abs(p[i].item<double>() - expected[i]) <= 1e-14);
      if (step <= 5) QVERIFY2(torch::equal(p.detach(), initial), "RAdam moved a parameter while rho_t < 5");
      if (step == 6) QVERIFY(!torch::equal(p.detach(), initial));
    }
    QVERIFY(radam_step_factors(5, 0.9, 0.98).step_size < 0);
    QVERIFY(radam_step_factors(6, 0.9, 0.98).step_size > 0);
  }

  // RAdam moves the parameters that share a step count as one list (multi-tensor
  // operators): parameters whose gradient is missing on some steps fall behind the
  // others and must still each follow Liu et al.'s rule at their own step count.
  void radamParametersAtDifferentStepsEachFollowTheRule() {
    torch::manual_seed(3);
    const std::vector<int64_t> sizes = {4, 1, 7};
    std::vector<torch::Tensor> params;
    std::vector<std::vector<double>> expected;
    std::vector<std::vector<ScalarRAdam>> reference;
    for (const int64_t size : sizes) {
      params.push_back(torch::randn({size}, torch::kDouble).requires_grad_(true));
      expected.emplace_back(params.back().data_ptr<double>(), params.back().data_ptr<double>() + size);
      reference.emplace_back(size);
    }
    RAdam opt(params, RAdamOptions(1e-2));
    for (int step = 1; step <= 14; ++step) {
      for (size_t k = 0; k < params.size(); ++k) {
        // Parameter 1 has no gradient on steps 2 and 3, parameter 2 none on step 5 onwards to 8.
        const bool skipped = (k == 1 && (step == 2 || step == 3)) || (k == 2 && step >= 5 && step <= 8);
        if (skipped) {
          params[k].mutable_grad() = torch::Tensor();
          continue;
        }
        const auto g = torch::randn({sizes[k]}, torch::kDouble);
        params[k].mutable_grad() = g;
        for (int64_t i = 0; i < sizes[k]; ++i)
          expected[k][i] = reference[k][i].update(expected[k][i], g[i].item<double>(), 1e-2);
      }
      opt.step();
      for (size_t k = 0; k < params.size(); ++k)
        for (int64_t i = 0; i < sizes[k]; ++i)
          QVERIFY2(std::abs(params[k][i].item<double>() - expected[k][i]) <= 1e-14,
                   qPrintable(QString("parameter %1, element %2, step %3").arg(k).arg(i).arg(step)));
    }
    QCOMPARE(reference[0][0].step, 14);
    QCOMPARE(reference[1][0].step, 12);
    QCOMPARE(reference[2][0].step, 10);
  }

  // clip_gradient_norm against LibTorch's clip_grad_norm_ on the same gradients: equal
  // norms and equal clipped gradients, clipping or not, a parameter without a gradient.
  void clipGradientNormEqualsLibTorchs_data() {
    QTest::addColumn<double>("max_norm");
    QTest::newRow("clips") << 0.5;
    QTest::newRow("does not clip") << 100.0;
    QTest::newRow("no limit") << std::numeric_limits<double>::infinity();
  }
  void clipGradientNormEqualsLibTorchs() {
    QFETCH(double, max_norm);
    torch::manual_seed(5);
    std::vector<torch::Tensor> ours, theirs;
    for (const int64_t size : {3, 17, 1, 40}) {
      ours.push_back(torch::randn({size}).requires_grad_(true));
      theirs.push_back(ours.back().detach().clone().requires_grad_(true));
      if (size == 1) continue;  // this one has no gradient
      const auto g = torch::randn({size}) * 0.3;
      ours.back().mutable_grad() = g.clone();
      theirs.back().mutable_grad() = g.clone();
    }
    const double norm = clip_gradient_norm(ours, max_norm);
    QCOMPARE(norm, torch::nn::utils::clip_grad_norm_(theirs, max_norm));
    for (size_t k = 0; k < ours.size(); ++k) {
      QCOMPARE(ours[k].grad().defined(), theirs[k].grad().defined());
      if (ours[k].grad().defined()) QVERIFY(torch::equal(ours[k].grad(), theirs[k].grad()));
    }
    if (max_norm < norm)
      QVERIFY(
          std::abs(
              torch::stack(at::_foreach_norm({ours[0].grad(), ours[1].grad(), ours[3].grad()})).norm().item<double>() -
              max_norm) < 1e-5);
    QCOMPARE(clip_gradient_norm({torch::zeros({2}, torch::requires_grad())}, 1.0), 0.0);
  }

  void radamMatchesTorchFromSameState_data() {
    QTest::addColumn<int>("step");
    QTest::newRow("step 6") << 6;
    QTest::newRow("step 7") << 7;
    QTest::newRow("step 250") << 250;
  }

  void radamMatchesTorchFromSameState() {
    QFETCH(int, step);
    torch::manual_seed(step);
    auto p = torch::randn({3, 5}, torch::kDouble).requires_grad_(true);
    const auto p0 = p.detach().clone();
    const auto exp_avg = torch::randn({3, 5}, torch::kDouble) * 0.1;
    const auto exp_avg_sq = torch::rand({3, 5}, torch::kDouble) * 0.01;
    const auto grad = torch::randn({3, 5}, torch::kDouble);
    const double lr = 3e-4;
    QJsonObject req{{"param", to_json(p.detach())}, {"exp_avg", to_json(exp_avg)}, {"exp_avg_sq", to_json(exp_avg_sq)},
                    {"grad", to_json(grad)}, {"lr", lr}, {"step", step - 1}};

    RAdam opt({p}, RAdamOptions(lr));
    p.mutable_grad() = torch::zeros_like(p);
    opt.step();  // creates the state, then it is overwritten with the chosen one
    auto& state = static_cast<RAdamParamState&>(*opt.state().begin()->second);
    state.step(step - 1);
    state.exp_avg().copy_(exp_avg);
    state.exp_avg_sq().copy_(exp_avg_sq);
    {
      torch::NoGradGuard ng;
      p.copy_(p0);  // the first step moved nothing, but be explicit
    }
    p.mutable_grad() = grad.clone();
    opt.step();

    const auto theirs = torch_peer("radam", req);
    QVERIFY(!theirs.isEmpty());
    const auto flat = [](const QJsonValue& v) {
      std::vector<double> out;
      for (const auto& row : v.toArray())
        for (const auto& x : row.toArray()) out.push_back(x.toDouble());
      return torch::tensor(out, torch::kDouble).view({3, 5});
    };
    const double diff = (p.detach() - flat(theirs["param"])).abs().max().item<double>();
    QVERIFY2(diff < 1e-14, qPrintable(QString("param differs by %1").arg(diff)));
    QVERIFY((state.exp_avg() - flat(theirs["exp_avg"])).abs().max().item<double>() < 1e-15);
    QVERIFY((state.exp_avg_sq() - flat(theirs["exp_avg_sq"])).abs().max().item<double>() < 1e-15);
    QVERIFY((p.detach() - p0).abs().max().item<double>() > 0);
  }

  void radamStateSurvivesSerialization() {
    torch::manual_seed(3);
    auto a = torch::randn({4}).requires_grad_(true);
    auto b = a.detach().clone().requires_grad_(true);
    RAdam opt_a({a}, RAdamOptions(1e-2));
    for (int i = 0; i < 7; ++i) {
      a.mutable_grad() = torch::randn({4});
      opt_a.step();
    }
    { torch::NoGradGuard ng; b.copy_(a); }
    std::stringstream buffer;
    torch::serialize::OutputArchive out;
    opt_a.save(out);
    out.save_to(buffer);
    RAdam opt_b({b}, RAdamOptions(5.0));
    torch::serialize::InputArchive in;
    in.load_from(buffer);
    opt_b.load(in);
    QCOMPARE(opt_b.param_groups()[0].options().get_lr(), 1e-2);
    for (int i = 0; i < 3; ++i) {
      const auto g = torch::randn({4});
      a.mutable_grad() = g.clone();
      b.mutable_grad() = g.clone();
      opt_a.step();
      opt_b.step();
    }
    QVERIFY(torch::equal(a, b));
  }

  void referenceScheduleHasSpecNumbers() {
    LrSchedule s;
    s.kind = LrScheduleKind::reference;
    s.lr = 2e-4;
    s.warmup = 10000;
    s.anneal_factor = 0.8;
    s.anneal_every_epochs = 2;
    s.batches_per_epoch = 11830;
    QVERIFY(std::abs(s.rate(0) - 2e-8) < 1e-20);
    QVERIFY(std::abs(s.rate(10000 - 10) - 2e-5) < 1e-18);
    QVERIFY(std::abs(s.rate(10000) - 2e-4) < 1e-18);
    QVERIFY(std::abs(s.rate(5000) - 2e-4 / 5000) < 1e-18);  // not linear: lr/(W - it)
    QVERIFY(std::abs(s.rate(2 * 11830) - 2e-4 * 0.8) < 1e-18);
    QVERIFY(std::abs(s.rate(4 * 11830 + 5) - 2e-4 * 0.64) < 1e-18);
    QCOMPARE(s.rate(200 * 11830), 5e-7);  // min_lr floor after warm-up
    // no warm-up, x0.8 every epoch (stage C)
    LrSchedule c{LrScheduleKind::reference, 1e-4, 0, 0.8, 1, 100, 5e-7};
    QCOMPARE(c.rate(0), 1e-4);
    QVERIFY(std::abs(c.rate(100) - 0.8e-4) < 1e-18);
  }

  void linearAndFixedSchedules() {
    LrSchedule lin{LrScheduleKind::linear_warmup, 1e-3, 10, 0.5, 1, 100, 0.0};
    QVERIFY(std::abs(lin.rate(0) - 1e-4) < 1e-18);
    QVERIFY(std::abs(lin.rate(4) - 5e-4) < 1e-18);
    QCOMPARE(lin.rate(50), 1e-3);
    QCOMPARE(lin.rate(150), 5e-4);
    LrSchedule fixed{LrScheduleKind::fixed, 2e-6, 0, 0.5, 1, 10, 5e-7};
    QCOMPARE(fixed.rate(0), 2e-6);
    QCOMPARE(fixed.rate(1000), 2e-6);
    QCOMPARE(parse_lr_schedule_kind("linear"), LrScheduleKind::linear_warmup);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, parse_lr_schedule_kind("cosine"));
  }

  void labelSmoothingMatchesTorchKl() {
    torch::manual_seed(5);
    const int64_t V = 9, pad = 7;
    const auto log_probs = torch::log_softmax(torch::randn({3, 5, V}, torch::kDouble), -1);
    auto targets = torch::randint(0, V, {3, 5}, torch::kLong);
    targets.index_put_({0, 4}, pad);
    targets.index_put_({2, 3}, pad);
    targets.index_put_({2, 4}, pad);
    targets.index_put_({1, 0}, 8);  // SOS-like column as a target
    int64_t count = 0;
    const double ours = label_smoothing_loss(log_probs, targets, pad, 0.1, &count).item<double>();
    const int64_t expected_count = targets.ne(pad).sum().item<int64_t>();
    QCOMPARE(count, expected_count);
    const auto theirs = torch_peer(
        "xe", QJsonObject{{"log_probs", to_json(log_probs)}, {"targets", to_json(targets)}, {"pad", static_cast<qint64>(pad)},
                          {"smoothing", 0.1}});
    QVERIFY(!theirs.isEmpty());
    QVERIFY2(std::abs(ours - theirs["loss"].toDouble()) < 1e-12,
             qPrintable(QString("ours %1 torch %2").arg(ours, 0, 'g', 17).arg(theirs["loss"].toDouble(), 0, 'g', 17)));
    // Gradient flows only into non-pad positions.
    auto lp = log_probs.clone().requires_grad_(true);
    label_smoothing_loss(lp, targets, pad).backward();
    QCOMPARE(lp.grad()[0][4].abs().sum().item<double>(), 0.0);
    QVERIFY(lp.grad()[0][3].abs().sum().item<double>() > 0);
    // Without smoothing it is the mean NLL of the targets.
    const auto nll = torch::nll_loss(log_probs.reshape({-1, V}), targets.reshape({-1}), {}, at::Reduction::Mean, pad);
    QVERIFY(std::abs(label_smoothing_loss(log_probs, targets, pad, 0.0).item<double>() - nll.item<double>()) < 1e-12);
  }

  // `expnet bench train` and `bench scst` at a tiny batch: every phase timed, the
  // step at least their sum, SCST's samples as long as asked at most.
  void benchmarksTimeEveryPhase() {
    TrainBenchOptions o;
    o.data_dir = (expnet_test::makeTempDir(QStringLiteral("bench_phases")) + "/shapes").toStdString();
    o.shapes_images = 40;
    o.batch = 2;
    o.steps = 1;
    o.warmup = 0;
    o.workers = 1;
    o.precision = TrainPrecision::fp32;
    const auto xe = bench_training(o);
    QCOMPARE(xe.precision, std::string("fp32"));
    for (double phase : {xe.data_ms, xe.backbone_fwd_ms, xe.encdec_fwd_ms, xe.loss_ms, xe.backward_ms, xe.optimizer_ms})
      QVERIFY(phase > 0 && phase <= xe.step_ms);
    QVERIFY(xe.images_per_s > 0);
    o.max_len = 6;
    const auto scst = bench_scst(o);
    for (double phase : {scst.data_ms, scst.backbone_fwd_ms, scst.sample_ms, scst.reward_ms, scst.loss_ms, scst.backward_ms,
                         scst.optimizer_ms})
      QVERIFY(phase > 0 && phase <= scst.step_ms);
    QVERIFY2(scst.mean_sampled_words >= 1 && scst.mean_sampled_words <= 6, qPrintable(QString::number(scst.mean_sampled_words)));
    QVERIFY(scst.parameters > 0 && scst.parameters < xe.parameters);  // the backbone is frozen there
    o.samples_per_image = 1;
    QVERIFY(expnet_test::errorOf([&] { bench_scst(o); }).contains("--samples >= 2"));
  }

  void scstBaselineIsMeanOfOtherSamples() {
    const auto adv = scst_advantages({1, 2, 3, 4, 5, 0, 0, 0, 0, 10}, 5);
    QCOMPARE(adv[0], 1 - (2 + 3 + 4 + 5) / 4.0);
    QCOMPARE(adv[4], 5 - (1 + 2 + 3 + 4) / 4.0);
    QCOMPARE(adv[5], -2.5);
    QCOMPARE(adv[9], 10.0);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, scst_advantages({1, 2, 3}, 2));
    // loss = mean over samples of adv * -(sum log p)
    const auto lp = torch::tensor({-1.0, -2.0, 0.0, -0.5, -0.5, -0.5}, torch::kDouble).view({2, 3});
    const double loss = scst_policy_loss(lp, {2.0, -1.0}).item<double>();
    QCOMPARE(loss, (2.0 * 3.0 + -1.0 * 1.5) / 2.0);
  }

  void scstSamplesAndLossOnTinyModel() {
    torch::manual_seed(11);
    const std::vector<std::string> words{"SOS", "EOS", "PAD", "UNK", "a", "red", "blue", "circle", "square"};
    auto config = tiny_model_config();
    ExpansionNet model(config, static_cast<int64_t>(words.size()));
    model->train();
    const auto features = torch::randn({2, config.feature_tokens(), config.final_swin_dim});
    CiderDReward reward({{{"a", "red", "circle"}, {"red", "circle"}}, {{"a", "blue", "square"}}});
    reward.set_vocabulary(words, 1);
    const ScstOptions opt = tinyScstOptions();
    const auto samples = scst_sample(*model, features, opt);
    QCOMPARE(samples.tokens.size(0), int64_t(10));
    QVERIFY(samples.tokens.size(1) <= 6);
    for (size_t r = 0; r < samples.ids.size(); ++r) {
      const auto& ids = samples.ids[r];
      QVERIFY(!ids.empty());
      const bool ended = ids.back() == 1;
      QVERIFY(ended || static_cast<int64_t>(ids.size()) == samples.tokens.size(1));
      // log-probs after EOS are zero and tokens there are PAD
      for (int64_t t = static_cast<int64_t>(ids.size()); t < samples.tokens.size(1); ++t) {
        QCOMPARE(samples.tokens[r][t].item<int64_t>(), int64_t(2));
        QCOMPARE(samples.token_log_probs[r][t].item<double>(), 0.0);
      }
      for (size_t t = 0; t < ids.size(); ++t) QVERIFY(samples.token_log_probs[r][t].item<double>() < 0);
    }
    const auto result = scst_loss(*model, features, {0, 1}, reward, opt);
    QCOMPARE(result.rewards.size(), size_t(10));
    QVERIFY(std::isfinite(result.loss.item<double>()));
    result.loss.backward();
    bool any_grad = false;
    for (const auto& p : model->parameters())
      if (p.grad().defined() && p.grad().abs().sum().item<double>() > 0) any_grad = true;
    QVERIFY(any_grad);
  }

  // The drawn words are scored in one teacher-forced pass: without dropout its
  // log-probs must be those of the step-by-step distribution they were drawn from.
  void scstScoresAreTheDrawingDistribution() {
    torch::manual_seed(5);
    auto config = tiny_model_config();
    ExpansionNet model(config, 9);
    model->eval();
    const auto features = torch::randn({2, config.feature_tokens(), config.final_swin_dim});
    const ScstOptions opt = tinyScstOptions();
    const auto samples = scst_sample(*model, features, opt);
    torch::NoGradGuard no_grad;
    const auto enc = model->encode(features).repeat_interleave(opt.samples_per_image, 0);
    auto prefix = torch::full({samples.tokens.size(0), 1}, opt.sos_id, torch::kLong);
    int64_t compared = 0;
    for (int64_t t = 0; t < samples.tokens.size(1); ++t) {
      const auto step = model->decode(enc, prefix, causal_self_mask(prefix, -1)).select(1, t);
      for (size_t r = 0; r < samples.ids.size(); ++r) {
        if (t >= static_cast<int64_t>(samples.ids[r].size())) continue;
        const double expected = step[static_cast<int64_t>(r)][samples.ids[r][static_cast<size_t>(t)]].item<double>();
        QVERIFY(std::abs(samples.token_log_probs[static_cast<int64_t>(r)][t].item<double>() - expected) < 1e-5);
        ++compared;
      }
      prefix = torch::cat({prefix, samples.tokens.select(1, t).unsqueeze(1)}, 1);
    }
    QVERIFY(compared >= 10);
  }

  // A bf16 training step (the config's "precision": bfloat16 autocast, float32
  // master weights and loss) against the same step in float32: the calibration
  // model from one seed, 4 images and captions, no dropout. bfloat16 keeps 8
  // significant bits (0.4% a rounding). On an AVX2 EPYC (our emulated bf16
  // products, layers.h; float32 log-probabilities): loss 6.6e-4 relative, gradient
  // cosine 0.997, norm ratio 0.993 (LibTorch's own bf16 products there: 3.3e-4, 0.992, 0.978). The bounds leave
  // room for other CPUs' bf16 instructions and fail when a layer goes wrong in bf16.
  void bf16StepFollowsFp32WithinBounds() {
    torch::manual_seed(7);
    expnet::ExpansionNet model(expnet::calibration_model_config(), 40);
    model->set_dropout(expnet::DropoutRates{});
    model->train();
    const auto images = torch::rand({4, 3, 96, 96});
    expnet::Batch batch;
    batch.image_indices = {0, 1, 2, 3};
    batch.caption_items = {0, 1, 2, 3};
    batch.length = 9;
    batch.tokens = {1, 5, 6, 7, 8, 9, 10, 2, 0,  1, 11, 12, 13, 2, 0, 0, 0, 0,
                    1, 14, 15, 16, 17, 18, 19, 20, 2,  1, 21, 22, 2, 0, 0, 0, 0, 0};
    batch.caption_lengths = {8, 5, 9, 4};
    expnet::XeStepOptions xe;
    xe.pad_id = 0;
    const auto step = [&](expnet::AutocastMode mode) {
      model->zero_grad();
      torch::Tensor loss;
      {
        expnet::AutocastScope scope(mode);
        loss = expnet::xe_step(*model, model->backbone(images), batch, xe).loss;
      }
      loss.backward();
      std::vector<torch::Tensor> grads;
      for (const auto& p : model->parameters())
        grads.push_back(p.grad().defined() ? p.grad().flatten().clone() : torch::zeros({p.numel()}));
      return std::make_pair(loss.item<double>(), torch::cat(grads));
    };
    const auto [fp32_loss, fp32_grad] = step(expnet::AutocastMode::off);
    const auto [bf16_loss, bf16_grad] = step(expnet::AutocastMode::cpu_bfloat16);
    const double loss_error = std::abs(bf16_loss - fp32_loss) / fp32_loss;
    const double cosine =
        (fp32_grad * bf16_grad).sum().item<double>() / (fp32_grad.norm().item<double>() * bf16_grad.norm().item<double>());
    const double norm_ratio = bf16_grad.norm().item<double>() / fp32_grad.norm().item<double>();
    qInfo("bf16 against fp32: loss %.6f / %.6f (relative %.2e), gradient cosine %.6f, norm ratio %.4f", bf16_loss,
          fp32_loss, loss_error, cosine, norm_ratio);
    QVERIFY2(loss_error < 0.01, "the bf16 loss is more than 1% from the fp32 loss");
    QVERIFY2(cosine > 0.97, "the bf16 gradient points elsewhere than the fp32 gradient");
    QVERIFY2(std::abs(norm_ratio - 1) < 0.1, "the bf16 gradient's norm is more than 10% from the fp32 one");
  }

  // Under CPU bf16 autocast where the CPU has no bfloat16 products (EXPNET_CPU_BF16=0
  // says so anywhere), Linear, batched_matmul and conv2d_forward multiply the
  // bfloat16-rounded operands in float32: autocast's arithmetic as the issue states it
  // (bfloat16 operands, float32 sums, a bfloat16 result). Held to the exact (float64) products of the rounded
  // operands rounded once: the output equal to the float32 product rounded, the
  // gradients within one bfloat16 rounding, on odd sizes; and LibTorch's autocast gives
  // the same dtypes. (LibTorch 1.13's own bf16 product on an AVX2 CPU sums some layouts
  // in bfloat16: 72% of this Linear's input gradients were off by more than a rounding.)
  void emulatedBf16ProductsAreAutocastsArithmetic() {
    torch::manual_seed(11);
    const auto rounded = [](const torch::Tensor& t) { return t.detach().to(torch::kBFloat16).to(torch::kFloat); };
    const auto exact = [&](const torch::Tensor& t) { return rounded(t).to(torch::kDouble); };
    // Within one rounding of the exact value's bfloat16 (8 significant bits).
    const auto within_rounding = [](const torch::Tensor& got, const torch::Tensor& exact_value) {
      return ((got.to(torch::kDouble) - exact_value).abs() <= exact_value.abs() / 256 + 1e-30).all().item<bool>();
    };
    // One product under bf16 autocast: its output, the gradients of its inputs and the
    // output's gradient (the float32 weights of the sum, rounded by the cast back).
    const auto run = [](const char* cpu_bf16, const std::vector<torch::Tensor>& inputs, const auto& product) {
      qputenv("EXPNET_CPU_BF16", cpu_bf16);
      std::vector<torch::Tensor> leaves;
      for (const auto& t : inputs) leaves.push_back(t.detach().clone().requires_grad_(true));
      torch::Tensor y;
      {
        expnet::AutocastScope scope(expnet::AutocastMode::cpu_bfloat16);
        y = product(leaves);
      }
      qunsetenv("EXPNET_CPU_BF16");
      torch::manual_seed(5);
      const auto weights = torch::randn(y.sizes());
      (y.to(torch::kFloat) * weights).sum().backward();
      std::vector<torch::Tensor> out{y.detach()};
      for (const auto& leaf : leaves) out.push_back(leaf.grad());
      out.push_back(weights.to(torch::kBFloat16).to(torch::kDouble));
      return out;
    };

    const auto x = torch::randn({5, 11, 37}), w = torch::randn({29, 37}) * 0.2, bias = torch::randn({29}) * 0.2;
    // The module's own parameters are the weight's and bias's leaves, as in a training step.
    const auto linear_run = [&](const char* cpu_bf16) {
      expnet::Linear linear(37, 29);
      linear->train();
      {
        torch::NoGradGuard no_grad;
        linear->weight.copy_(w);
        linear->bias.copy_(bias);
      }
      auto out =
          run(cpu_bf16, {x}, [&](const std::vector<torch::Tensor>& in) { return linear->forward_bf16_out(in[0]); });
      out.insert(out.begin() + 2, {linear->weight.grad(), linear->bias.grad()});
      return out;  // output, x's, weight's and bias's gradients, the output's gradient
    };
    const auto e = linear_run("0"), n = linear_run("1");
    QCOMPARE(e[0].scalar_type(), torch::kBFloat16);
    QCOMPARE(n[0].scalar_type(), torch::kBFloat16);
    QVERIFY2(torch::equal(e[0], torch::linear(rounded(x), rounded(w), rounded(bias)).to(torch::kBFloat16)),
             "the emulated Linear is not the rounded operands' float32 product");
    const auto g = e[4].reshape({55, 29});
    QVERIFY2(within_rounding(e[1], g.mm(exact(w)).reshape({5, 11, 37})), "Linear: the input's gradient");
    QVERIFY2(within_rounding(e[2], g.t().mm(exact(x).reshape({55, 37}))), "Linear: the weight's gradient");
    QVERIFY2(within_rounding(e[3], g.sum(0)), "Linear: the bias's gradient");
    for (size_t i = 1; i < 4; ++i) QCOMPARE(e[i].scalar_type(), n[i].scalar_type());

    // A convolution with zero padding (the Swin's conv merging, the patch embedding).
    torch::nn::Conv2d conv(torch::nn::Conv2dOptions(5, 7, 3).padding(1));
    conv->train();
    const auto image = torch::randn({2, 5, 9, 11});
    const auto conv_run = [&](const char* cpu_bf16) {
      conv->zero_grad();
      auto out = run(cpu_bf16, {image},
                     [&](const std::vector<torch::Tensor>& in) { return expnet::conv2d_forward(*conv, in[0]); });
      out.insert(out.begin() + 2, {conv->weight.grad().clone(), conv->bias.grad().clone()});
      return out;  // output, the image's, weight's and bias's gradients, the output's gradient
    };
    const auto ec = conv_run("0"), nc = conv_run("1");
    QCOMPARE(ec[0].scalar_type(), torch::kBFloat16);
    QCOMPARE(nc[0].scalar_type(), torch::kBFloat16);
    namespace F = torch::nn::functional;
    QVERIFY2(torch::equal(ec[0], F::conv2d(rounded(image), rounded(conv->weight),
                                           F::Conv2dFuncOptions().bias(rounded(conv->bias)).padding(1))
                                     .to(torch::kBFloat16)),
             "the emulated convolution is not the rounded operands' float32 convolution");
    {
      auto xd = exact(image).requires_grad_(true), wd = exact(conv->weight).requires_grad_(true),
           bd = exact(conv->bias).requires_grad_(true);
      (F::conv2d(xd, wd, F::Conv2dFuncOptions().bias(bd).padding(1)) * ec[4]).sum().backward();
      QVERIFY2(within_rounding(ec[1], xd.grad()), "convolution: the image's gradient");
      QVERIFY2(within_rounding(ec[2], wd.grad()), "convolution: the weight's gradient");
      QVERIFY2(within_rounding(ec[3], bd.grad()), "convolution: the bias's gradient");
    }

    // Batched products, one operand transposed, in training mode (our fused product
    // underneath) and in eval mode (LibTorch's matmul).
    const auto a = torch::randn({3, 2, 7, 13}), b = torch::randn({3, 2, 5, 13});
    for (const bool training : {true, false}) {
      const auto product = [training](const std::vector<torch::Tensor>& in) {
        return expnet::batched_matmul(in[0], in[1].transpose(-1, -2), training);
      };
      const auto eb = run("0", {a, b}, product), nb = run("1", {a, b}, product);
      QCOMPARE(eb[0].scalar_type(), torch::kBFloat16);
      QCOMPARE(nb[0].scalar_type(), torch::kBFloat16);
      QVERIFY2(torch::equal(eb[0], torch::matmul(rounded(a), rounded(b).transpose(-1, -2)).to(torch::kBFloat16)),
               "the emulated product is not the rounded operands' float32 product");
      QVERIFY2(within_rounding(eb[1], torch::matmul(eb[3], exact(b))), "batched_matmul: the left operand's gradient");
      QVERIFY2(within_rounding(eb[2], torch::matmul(eb[3].transpose(-1, -2), exact(a))),
               "batched_matmul: the right operand's gradient");
    }
  }
};

QTEST_GUILESS_MAIN(TestTraining)
#include "test_training.moc"

// PNAIC training pieces (docs/training.md, "PNAIC"): the curriculum f(m), the
// group division draws on fixed seeds (group counts, DEL placement, EOS on the
// valid groups), the group-major layout, the PNAIC cross-entropy going down on
// a tiny batch, and the distillation targets file (interrupted and resumed,
// torn tail, checksum mismatch, another teacher).
#include <QtTest>

#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>

#include "expnet/data/data_loader.h"
#include "expnet/model/expansion_net.h"
#include "expnet/model/model_config.h"
#include "expnet/train/distillation_targets.h"
#include "expnet/train/pnaic_targets.h"
#include "expnet/system/digest.h"
#include "expnet/train/train_steps.h"
#include "pnaic_test_util.h"
#include "support/fixtures.h"

using namespace expnet;
namespace fs = std::filesystem;

namespace {

std::vector<int64_t> iota_words(int64_t n, int64_t first = 10) {
  std::vector<int64_t> w(static_cast<size_t>(n));
  std::iota(w.begin(), w.end(), first);
  return w;
}

std::vector<size_t> sizes(const std::vector<std::vector<int64_t>>& groups) {
  std::vector<size_t> out;
  for (const auto& g : groups) out.push_back(g.size());
  return out;
}

// The words of the valid groups, in order: what the caption must be again.
std::vector<int64_t> valid_words(const GroupDivision& d) {
  std::vector<int64_t> out;
  for (size_t g = 0; g < d.groups.size(); ++g)
    if (!d.invalid[g]) out.insert(out.end(), d.groups[g].begin(), d.groups[g].end());
  return out;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A fake teacher for the file tests: caption i is {"w<i>", "x"}; counts its calls
// and throws on the chunk starting at `fail_at`.
struct CountingTeacher {
  size_t calls = 0, images = 0, fail_at = SIZE_MAX;
  TeacherCaptions fn() {
    return [this](size_t first, size_t count) {
      if (first == fail_at) throw std::runtime_error("interrupted");
      ++calls;
      images += count;
      std::vector<std::vector<std::string>> out;
      for (size_t i = first; i < first + count; ++i) out.push_back({"w" + std::to_string(i), "x"});
      return out;
    };
  }
};

DistillationSpec file_spec(const QString& dir, const std::string& teacher_sha) {
  DistillationSpec spec;
  spec.dir = dir.toStdString();
  spec.teacher = "teacher.pth";
  spec.teacher_sha1 = teacher_sha;
  for (int i = 0; i < 10; ++i) spec.images.push_back("img/" + std::to_string(i) + ".png");
  spec.chunk = 3;
  return spec;
}

}  // namespace

class TestPnaicTraining : public QObject {
  Q_OBJECT

 private slots:
  // FIPS 180's SHA-1 test vectors (c10::sha1 under the hood).
  void sha1KnownAnswers() {
    QCOMPARE(sha1_hex(""), std::string("da39a3ee5e6b4b0d3255bfef95601890afd80709"));
    QCOMPARE(sha1_hex("abc"), std::string("a9993e364706816aba3e25717850c26c9cd0d89d"));
    QCOMPARE(sha1_hex(std::string(1000000, 'a')), std::string("34aa973cd4c4daa4f61eeb2bdbad27316534016f"));
  }

  void curriculumRate() {
    QCOMPARE(curriculum_rate(0, 1000, 0.01), 0.01);
    QCOMPARE(curriculum_rate(1000, 1000, 0.01), 1.0);
    QCOMPARE(curriculum_rate(5000, 1000, 0.01), 1.0);
    QVERIFY(std::abs(curriculum_rate(250, 1000, 0.01) - std::sqrt(0.25 * (1 - 1e-4) + 1e-4)) < 1e-12);
    QCOMPARE(curriculum_rate(0, 1000, 0.3), 0.3);
    QCOMPARE(curriculum_rate(3, 0, 0.01), 1.0);  // no schedule length: equal groups
    double last = 0;
    for (int64_t m = 0; m <= 100; ++m) {  // rises monotonically from c0 to 1
      const double f = curriculum_rate(m, 100, 0.01);
      QVERIFY(f >= last);
      last = f;
    }
  }

  void equalAndRandomCuts() {
    QCOMPARE(sizes(equal_groups(iota_words(7), 3)), (std::vector<size_t>{3, 2, 2}));
    QCOMPARE(sizes(equal_groups(iota_words(10), 5)), (std::vector<size_t>{2, 2, 2, 2, 2}));
    // Fewer words than groups: one word each, then groups that are just EOS.
    QCOMPARE(sizes(equal_groups(iota_words(2), 5)), (std::vector<size_t>{1, 1, 0, 0, 0}));
    QCOMPARE(sizes(equal_groups({}, 2)), (std::vector<size_t>{0, 0}));
    std::mt19937_64 rng(42);
    for (int trial = 0; trial < 200; ++trial) {
      const auto words = iota_words(3 + trial % 12);
      const auto groups = random_groups(words, 4, rng);
      QCOMPARE(groups.size(), size_t(4));
      if (words.size() < 4) {  // not enough gaps: the even division
        QCOMPARE(groups, equal_groups(words, 4));
        continue;
      }
      std::vector<int64_t> joined;
      for (const auto& g : groups) {
        QVERIFY(!g.empty());  // distinct cuts between words: no empty group
        joined.insert(joined.end(), g.begin(), g.end());
      }
      QCOMPARE(joined, words);
    }
    // The same seed draws the same cuts.
    std::mt19937_64 a(7), b(7);
    QCOMPARE(random_groups(iota_words(12), 5, a), random_groups(iota_words(12), 5, b));
  }

  void divisionDrawsOnFixedSeeds() {
    const auto words = iota_words(9);
    std::mt19937_64 rng(2026);
    int deletions = 0, equal = 0;
    const int trials = 4000;
    for (int trial = 0; trial < trials; ++trial) {
      const auto d = draw_group_division(words, 4, 0.5, 0.5, rng);
      QCOMPARE(d.groups.size(), size_t(4));  // always K groups
      QCOMPARE(valid_words(d), words);       // the valid groups are the caption
      const auto invalid = std::count(d.invalid.begin(), d.invalid.end(), true);
      QCOMPARE(invalid, d.deletion ? 1L : 0L);
      deletions += d.deletion;
      equal += d.equal;
      if (d.deletion) {
        // The pseudo group follows the group it copies and is a non-empty prefix of it.
        const size_t at = static_cast<size_t>(std::find(d.invalid.begin(), d.invalid.end(), true) - d.invalid.begin());
        QVERIFY(at >= 1);
        const auto& source = d.groups[at - 1];
        const auto& copy = d.groups[at];
        QVERIFY(!copy.empty() && copy.size() <= source.size());
        QVERIFY(std::equal(copy.begin(), copy.end(), source.begin()));
        if (d.equal) {  // equal cuts into K-1 = 3 groups, the copy between them
          std::vector<size_t> valid;
          for (size_t g = 0; g < d.groups.size(); ++g)
            if (!d.invalid[g]) valid.push_back(d.groups[g].size());
          QCOMPARE(valid, (std::vector<size_t>{3, 3, 3}));
        }
      } else if (d.equal) {
        QCOMPARE(sizes(d.groups), (std::vector<size_t>{3, 2, 2, 2}));
      }
    }
    QVERIFY2(std::abs(deletions / double(trials) - 0.5) < 0.04, qPrintable(QString::number(deletions)));
    QVERIFY2(std::abs(equal / double(trials) - 0.5) < 0.04, qPrintable(QString::number(equal)));
    // p = 0 never deletes, p = 1 always does (K >= 2); K = 1 never can; f = 1 is always equal.
    std::mt19937_64 r2(5);
    for (int trial = 0; trial < 100; ++trial) {
      QVERIFY(!draw_group_division(words, 3, 1.0, 0.0, r2).deletion);
      const auto always = draw_group_division(words, 3, 1.0, 1.0, r2);
      QVERIFY(always.deletion && always.equal);
      QCOMPARE(always.groups.size(), size_t(3));
      QVERIFY(!draw_group_division(words, 1, 0.0, 1.0, r2).deletion);
      QVERIFY(!draw_group_division({}, 3, 0.0, 1.0, r2).deletion);  // nothing to copy
    }
    // Fixed seed, fixed draw: equal cuts into K-1 = 2 groups {10..14} {15..18}, then a copy.
    std::mt19937_64 r3(11), r4(11);
    const auto x = draw_group_division(words, 3, 1.0, 1.0, r3);
    QCOMPARE(x.groups, draw_group_division(words, 3, 1.0, 1.0, r4).groups);
    QCOMPARE(x.invalid, (x.invalid[1] ? std::vector<bool>{false, true, false} : std::vector<bool>{false, false, true}));
  }

  void layoutIsGroupMajor() {
    GroupDivision a;  // K = 2: "10 11 12" + "13", no deletion
    a.groups = {{10, 11, 12}, {13}};
    a.invalid = {false, false};
    GroupDivision b;  // "20" + pseudo copy "20" ending with DEL
    b.groups = {{20}, {20}};
    b.invalid = {false, true};
    const PnaicTokens tok{1, 2, 9, 0};  // SOS, EOS, DEL, PAD
    const auto laid = layout_group_batch({a, b}, 2, tok, 22);
    QCOMPARE(laid.steps, int64_t(4));  // the longest group's 3 words + 1
    const auto expect = [](std::vector<int64_t> v) { return torch::tensor(v, torch::kLong).view({1, -1}); };
    QVERIFY(torch::equal(laid.tokens[0].view({1, -1}), expect({1, 10, 11, 12, 1, 13, 0, 0})));
    QVERIFY(torch::equal(laid.targets[0].view({1, -1}), expect({10, 11, 12, 2, 13, 2, 0, 0})));
    QVERIFY(torch::equal(laid.tokens[1].view({1, -1}), expect({1, 20, 0, 0, 1, 20, 0, 0})));
    QVERIFY(torch::equal(laid.targets[1].view({1, -1}), expect({20, 2, 0, 0, 20, 9, 0, 0})));
    // An empty group is SOS -> EOS.
    GroupDivision c;
    c.groups = {{5}, {}};
    c.invalid = {false, false};
    const auto short_one = layout_group_batch({c}, 2, tok, 22);
    QVERIFY(torch::equal(short_one.targets, expect({5, 2, 2, 0})));
    // Too long for the model, a wrong group count, DEL missing: named errors.
    QVERIFY(expnet_test::errorOf([&] { layout_group_batch({a}, 2, tok, 3); }).contains("max_seq_len 3"));
    QVERIFY(expnet_test::errorOf([&] { layout_group_batch({a}, 3, tok, 22); }).contains("K = 3"));
    QVERIFY(expnet_test::errorOf([&] { layout_group_batch({b}, 2, {1, 2, -1, 0}, 22); }).contains("DEL"));
  }

  void pnaicLossDecreasesOnATinyBatch() {
    torch::manual_seed(3);
    // Vocabulary ids: PAD 0, SOS 1, EOS 2, words 3..10, DEL 11.
    const int64_t vocab = 12;
    ExpansionNet model(expnet_test::tiny_model(2), vocab);
    model->set_dropout(DropoutRates{});
    Batch batch;
    const std::vector<std::vector<int64_t>> captions = {{3, 4, 5, 6}, {7, 8, 9}, {3, 8, 10, 4, 5}, {6, 7}};
    batch.length = 7;
    for (size_t i = 0; i < captions.size(); ++i) {
      batch.image_indices.push_back(i);
      batch.caption_items.push_back(static_cast<int64_t>(i));
      std::vector<int64_t> row{1};
      row.insert(row.end(), captions[i].begin(), captions[i].end());
      row.push_back(2);
      row.resize(7, 0);
      batch.tokens.insert(batch.tokens.end(), row.begin(), row.end());
    }
    torch::Tensor features;
    {
      torch::NoGradGuard no_grad;
      features = model->backbone(torch::rand({4, 3, 32, 32}));
    }
    PnaicStepOptions opt;
    opt.groups = 2;
    opt.tokens = {1, 2, 11, 0};
    opt.total_steps = 60;
    // The step's divisions are those draw_batch_divisions makes: the divisor
    // counts every group's words plus its EOS/DEL.
    opt.draw_seed = 99;
    int64_t expected_tokens = 0;
    for (const auto& d : draw_batch_divisions(batch, opt))
      for (const auto& g : d.groups) expected_tokens += static_cast<int64_t>(g.size()) + 1;
    QCOMPARE(pnaic_xe_step(*model, features, batch, opt).target_tokens, expected_tokens);

    std::vector<torch::Tensor> params;
    for (auto& p : model->parameters())
      if (p.requires_grad()) params.push_back(p);
    torch::optim::Adam adam(params, torch::optim::AdamOptions(3e-3));
    std::vector<double> losses;
    for (int64_t step = 0; step < 60; ++step) {
      opt.step = step;
      opt.draw_seed = static_cast<uint64_t>(step);
      adam.zero_grad();
      const auto r = pnaic_xe_step(*model, features, batch, opt);
      r.loss.backward();
      adam.step();
      losses.push_back(r.loss.item<double>());
    }
    const double first = (losses[0] + losses[1] + losses[2]) / 3, last = (losses[57] + losses[58] + losses[59]) / 3;
    QVERIFY2(std::isfinite(last) && last < 0.6 * first, qPrintable(QString("%1 -> %2").arg(first).arg(last)));
  }

  void distillationTargetsResume() {
    const QString dir = expnet_test::makeTempDir("pnaic_distillation");
    const std::string sha = sha1_hex("teacher A");
    const auto spec = file_spec(dir, sha);
    const std::string path = distillation_targets_path(spec);
    QCOMPARE(path, dir.toStdString() + "/targets-" + sha.substr(0, 16) + ".jsonl");

    // Interrupted during the third chunk: the first two stay on disk.
    CountingTeacher interrupted;
    interrupted.fail_at = 6;
    QVERIFY(expnet_test::errorOf([&] { make_distillation_targets(spec, interrupted.fn()); }).contains("interrupted"));
    QCOMPARE(interrupted.images, size_t(6));
    QVERIFY(expnet_test::errorOf([&] { read_distillation_targets(spec); }).contains("not complete"));

    // The rerun captions only what is missing.
    CountingTeacher rest;
    const auto resumed = make_distillation_targets(spec, rest.fn());
    QCOMPARE(resumed.reused, size_t(6));
    QCOMPARE(resumed.computed, size_t(4));
    QCOMPARE(rest.images, size_t(4));
    QCOMPARE(resumed.captions.size(), size_t(10));
    for (size_t i = 0; i < 10; ++i) QCOMPARE(resumed.captions[i], (std::vector<std::string>{"w" + std::to_string(i), "x"}));
    QVERIFY(resumed.discarded.empty());

    // Complete: reused as is, the teacher never asked, the file untouched.
    const auto before = read_text(path);
    CountingTeacher none;
    const auto again = make_distillation_targets(spec, none.fn());
    QCOMPARE(none.calls, size_t(0));
    QCOMPARE(again.reused, size_t(10));
    QCOMPARE(read_text(path), before);
    QCOMPARE(read_distillation_targets(spec).captions, resumed.captions);

    // A torn last line (an append cut short) is dropped and nothing else.
    { std::ofstream(path, std::ios::app) << "{\"chunk\":4,\"first\":12,\"capt"; }  // not a raw string: moc miscounts its brace
    const auto torn = make_distillation_targets(spec, none.fn());
    QCOMPARE(torn.reused, size_t(10));
    QCOMPARE(read_text(path), before);

    // A chunk whose words changed fails its checksum: recaptioned from there on.
    std::string text = before;
    const auto at = text.find("\"w4\"");
    QVERIFY(at != std::string::npos);
    text.replace(at, 4, "\"zz\"");
    { std::ofstream(path, std::ios::trunc | std::ios::binary) << text; }
    CountingTeacher repair;
    const auto repaired = make_distillation_targets(spec, repair.fn());
    QVERIFY2(repaired.discarded.find("chunk 1 fails its checksum") != std::string::npos, repaired.discarded.c_str());
    QCOMPARE(repaired.reused, size_t(3));
    QCOMPARE(repair.images, size_t(7));
    QCOMPARE(read_text(path), before);

    // Another teacher: another file, captioned from scratch; the first one is left alone.
    const auto other_spec = file_spec(dir, sha1_hex("teacher B"));
    CountingTeacher other;
    const auto b = make_distillation_targets(other_spec, other.fn());
    QVERIFY(b.path != path);
    QCOMPARE(other.images, size_t(10));
    QCOMPARE(read_text(path), before);
    // The same name holding another teacher's header (a copied file) is not reused either.
    fs::copy_file(path, b.path, fs::copy_options::overwrite_existing);
    CountingTeacher recopy;
    const auto c = make_distillation_targets(other_spec, recopy.fn());
    QVERIFY2(c.discarded.find("another teacher") != std::string::npos, c.discarded.c_str());
    QCOMPARE(recopy.images, size_t(10));
    // Other images (the dataset changed): not reused.
    auto fewer = spec;
    fewer.images.pop_back();
    CountingTeacher changed;
    const auto d = make_distillation_targets(fewer, changed.fn());
    QVERIFY2(d.discarded.find("images") != std::string::npos, d.discarded.c_str());
    QCOMPARE(changed.images, size_t(9));
  }
};

QTEST_GUILESS_MAIN(TestPnaicTraining)
#include "test_pnaic_training.moc"

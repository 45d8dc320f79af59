// A PNAIC training run end to end on a tiny random teacher and a few shapes
// images (docs/training.md, "PNAIC"): the distillation targets are made once and
// reused on --resume, the checkpoints are PNAIC models with DEL, validation
// decodes groups; and every bad input is a named error before training starts.
#include <QtTest>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>

#include "expnet/checkpoint/pth_file.h"
#include "expnet/checkpoint/pth_writer.h"
#include "expnet/checkpoint/state_dict.h"
#include "expnet/model/expansion_net.h"
#include "expnet/model/model_config.h"
#include "expnet/text/vocabulary.h"
#include "expnet/train/pnaic_teacher.h"
#include "expnet/train/run_store.h"
#include "expnet/train/train_config.h"
#include "expnet/train/trainer.h"
#include "pnaic_test_util.h"
#include "support/fixtures.h"

using namespace expnet;
namespace fs = std::filesystem;

namespace {

using expnet_test::save_model;
using expnet_test::teacher_vocab;

ModelConfig tiny(int64_t groups = 0) { return expnet_test::tiny_model(groups); }
std::string recipe(const std::string& teacher, const std::string& extra = "") {
  return expnet_test::pnaic_recipe(teacher, extra);
}

TrainOptions quiet(const QString& out, bool resume = false) {
  TrainOptions o;
  o.out_dir = out.toStdString();
  o.progress = false;
  o.resume = resume;
  return o;
}

std::string targets_file(const QString& out) {
  for (const auto& e : fs::directory_iterator(out.toStdString() + "/distillation")) return e.path().string();
  return "";
}

}  // namespace

class TestPnaicRun : public QObject {
  Q_OBJECT

 private slots:
  void runDistilsOnceAndResumes() {
    torch::set_num_threads(1);
    const QString dir = expnet_test::makeTempDir("pnaic_run");
    const auto teacher = save_model(dir, "teacher.pth", tiny(), teacher_vocab());
    const auto config = TrainConfig::from_json(recipe(teacher), "tiny recipe");
    const QString out = dir + "/run";
    const auto outcome = run_training(config, quiet(out));
    QCOMPARE(outcome.status, std::string("finished"));
    QCOMPARE(outcome.steps, int64_t(6));

    // The student: the teacher's model with K = 2, the teacher's words plus DEL.
    PthFile file(outcome.final_checkpoint);
    const auto meta = read_metadata(file);
    QVERIFY(meta.config_json && meta.vocabulary_json);
    QCOMPARE(ModelConfig::from_json(*meta.config_json).pnaic_groups, int64_t(2));
    const auto vocab = Vocabulary::from_json(*meta.vocabulary_json);
    QCOMPARE(vocab.del_id(), teacher_vocab().size());
    QCOMPARE(vocab.size(), teacher_vocab().size() + 1);

    // One targets file, complete: header + one chunk line per 64 training images.
    const auto targets = targets_file(out);
    QVERIFY(targets.find("/distillation/targets-") != std::string::npos);
    std::ifstream in(targets);
    int lines = 0;
    for (std::string line; std::getline(in, line);) ++lines;
    QCOMPARE(lines, 2);
    const auto written = fs::last_write_time(targets);

    // The run store has the curve and the validations (greedy group decoding).
    RunStore store(out.toStdString() + "/runs.sqlite");
    const auto run = store.find_run("tiny-pnaic");
    QCOMPARE(store.validations(run.id).size(), size_t(2));
    QVERIFY(!store.samples(run.id).empty());

    // --resume (here of a finished run): the targets are verified and reused, not remade.
    const auto again = run_training(config, quiet(out, true));
    QCOMPARE(again.status, std::string("finished"));
    QVERIFY(fs::last_write_time(targets) == written);
  }

  void badInputIsNamedBeforeTraining() {
    const QString dir = expnet_test::makeTempDir("pnaic_bad_input");
    const auto teacher = save_model(dir, "teacher.pth", tiny(), teacher_vocab());
    const auto student_vocab = teacher_vocab().with_del();
    const auto error_of = [&](const std::string& text, const QString& out) {
      return expnet_test::errorOf([&] { run_training(TrainConfig::from_json(text, "recipe"), quiet(out)); });
    };
    // Each refused before the data, the store or a checkpoint exists.
    const auto nothing_made = [](const QString& out) {
      return !fs::exists(out.toStdString() + "/shapes") && !fs::exists(out.toStdString() + "/runs.sqlite") &&
             !fs::exists(out.toStdString() + "/distillation") && !fs::exists(out.toStdString() + "/checkpoints");
    };

    // A teacher that is itself PNAIC.
    const auto pnaic_teacher = save_model(dir, "pnaic_teacher.pth", tiny(2), student_vocab);
    QString e = error_of(recipe(pnaic_teacher), dir + "/a");
    QVERIFY2(e.contains("itself a PNAIC model") && e.contains(QString::fromStdString(pnaic_teacher)), qPrintable(e));
    QVERIFY(nothing_made(dir + "/a"));

    // K < 1: negative in the recipe, or given nowhere.
    e = expnet_test::errorOf([&] {
      auto text = recipe(teacher);
      text.replace(text.find("\"pnaic_groups\": 2"), 17, "\"pnaic_groups\": -1");
      TrainConfig::from_json(text, "recipe");
    });
    QVERIFY2(e.contains("pnaic_groups (K) must be >= 1"), qPrintable(e));
    auto no_k = recipe(teacher);
    no_k.replace(no_k.find("\"pnaic_groups\": 2, "), 19, "");
    e = error_of(no_k, dir + "/b");
    QVERIFY2(e.contains("K < 1") && e.contains("set pnaic_groups"), qPrintable(e));
    QVERIFY(nothing_made(dir + "/b"));

    // A PNAIC init checkpoint without DEL in its vocabulary.
    const auto no_del = save_model(dir, "no_del.pth", tiny(2), teacher_vocab());
    e = error_of(recipe(teacher, R"("init_checkpoint": ")" + no_del + R"(",)"), dir + "/c");
    QVERIFY2(e.contains("without DEL") && e.contains(QString::fromStdString(no_del)), qPrintable(e));
    QVERIFY(nothing_made(dir + "/c"));

    // A run checkpoint whose vocabulary is not the teacher's plus DEL.
    const auto other_vocab = save_model(dir, "other_vocab.pth", tiny(2), teacher_vocab("green").with_del());
    e = error_of(recipe(teacher, R"("init_checkpoint": ")" + other_vocab + R"(",)"), dir + "/d");
    QVERIFY2(e.contains("vocabulary differs from the teacher") && e.contains(QString::fromStdString(other_vocab)),
             qPrintable(e));
    QVERIFY(nothing_made(dir + "/d"));

    // The recipe's model is not the teacher's (beyond pnaic_groups).
    auto wider = nlohmann::json::parse(expnet_test::tiny_model_json());
    wider["ff"] = 128;
    e = error_of(recipe(teacher, R"("model": )" + wider.dump() + ","), dir + "/e");
    QVERIFY2(e.contains("differs from the config of teacher") && e.contains("ff"), qPrintable(e));
    QVERIFY(nothing_made(dir + "/e"));
    // ... while the teacher's own model with pnaic_groups is accepted.
    auto same = nlohmann::json::parse(expnet_test::tiny_model_json());
    same["pnaic_groups"] = 2;
    const auto config = TrainConfig::from_json(recipe(teacher, R"("model": )" + same.dump() + ","), "recipe");
    const auto run = prepare_pnaic_run(config, "cpu", "recipe");
    QCOMPARE(run.student_config.pnaic_groups, int64_t(2));
    QCOMPARE(run.student_vocab.words(), student_vocab.words());

    // A missing teacher, an AIC init checkpoint, mixed stages.
    e = error_of(recipe(dir.toStdString() + "/nowhere.pth"), dir + "/f");
    QVERIFY2(e.contains("nowhere.pth") && e.contains("does not exist"), qPrintable(e));
    e = error_of(recipe(teacher, R"("init_checkpoint": ")" + teacher + R"(",)"), dir + "/g");
    QVERIFY2(e.contains("is an AIC checkpoint"), qPrintable(e));
    e = expnet_test::errorOf([&] {
      auto text = recipe(teacher);
      text.replace(text.find("\"stages\": ["), 11, R"("stages": [{"objective": "xe"}, )");
      TrainConfig::from_json(text, "recipe");
    });
    QVERIFY2(e.contains("only pnaic stages"), qPrintable(e));
  }
};

QTEST_GUILESS_MAIN(TestPnaicRun)
#include "test_pnaic_run.moc"

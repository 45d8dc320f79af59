// The engine side of the Runs page: a real `expnet train` holds its run's lock
// (live while it trains, "interrupted" once SIGKILLed, a second trainer on the
// run refused), logs wall_s that continues on --resume, registers its store,
// and a run whose training throws ends "failed" with the reason; one folder
// holds one run (two trainers started together on it: one is refused); the registry
// of stores; trash and restore of runs (own folder and store, a shared store,
// refusals that change nothing).
#include <QElapsedTimer>
#include <QProcess>
#include <QtTest>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <sstream>

#include "expnet/system/paths.h"
#include "expnet/train/run_lock.h"
#include "expnet/train/run_registry.h"
#include "expnet/train/run_store.h"
#include "expnet/train/run_trash.h"
#include "support/fixtures.h"

using namespace expnet;
namespace fs = std::filesystem;

namespace {

const QString kConfig = QStringLiteral(EXPNET_TRAIN_TEST_DIR "/tiny_train.json");

QStringList train_args(const QString& config, const QString& out, bool resume) {
  QStringList a{"train", "--config", config, "--out", out, "--threads", "1", "--no-progress", "--json"};
  if (resume) a << "--resume";
  return a;
}

std::string canonical(const std::string& path) { return fs::weakly_canonical(fs::absolute(path)).string(); }

std::string file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// tiny_train.json under another name, `change`d, written into `dir`.
template <typename Change>
QString write_recipe(const std::string& dir, const std::string& name, Change change) {
  auto recipe = nlohmann::json::parse(file_text(kConfig.toStdString()));
  recipe["name"] = name;
  change(recipe);
  const std::string path = dir + "/" + name + ".json";
  std::ofstream(path) << recipe.dump();
  return QString::fromStdString(path);
}

// A data folder of its own for each test (the trainer, a child process, inherits it).
std::string fresh_home(const QString& name) {
  const QString home = expnet_test::makeTempDir(name);
  qputenv("EXPNET_HOME", home.toUtf8());
  return home.toStdString();
}

// A finished run with rows in every table and a run folder with a checkpoint.
int64_t make_run(const std::string& store_path, const std::string& name, const std::string& out_dir) {
  fs::create_directories(out_dir + "/checkpoints");
  fs::create_directories(fs::path(store_path).parent_path());
  RunStore store(store_path);
  const int64_t id = store.create_run(name, R"({"name":")" + name + R"("})", out_dir);
  store.add_stage(id, 0, "xe", "{}");
  store.add_stage(id, 1, "scst", "{}");
  std::vector<StepRecord> steps;
  for (int i = 1; i <= 5; ++i) steps.push_back({id, i / 4, 0, i, 1.0 / i, 1e-4, 1.0, 10.0 * i, i == 3, 0.5 * i});
  store.log_steps(steps);
  store.log_validation({id, 0, 0, 3, 0.5, 0.4, 0.3, 0.2, 0.4, 0.9});
  store.log_validation({id, 1, 0, 5, 0.6, 0.5, 0.4, 0.3, 0.5, 1.1});
  store.log_samples({{id, 0, 0, "a.png", "a circle", "a red circle"}, {id, 1, 0, "b.png", "a square", "a blue square"}});
  store.set_notes(id, "notes of " + name);
  store.set_tags(id, "tag-" + name);
  store.set_status(id, "finished");
  std::ofstream(out_dir + "/checkpoints/final.pth") << "weights of " << name;
  return id;
}

// Everything stored about a run but its id: equal before trashing and after restoring.
std::string describe(const std::string& store_path, const std::string& name) {
  RunStore store(store_path);
  const auto r = store.find_run(name);
  std::ostringstream o;
  o << r.name << '|' << r.status << '|' << r.config_json << '|' << r.out_dir << '|' << r.created_at << '|'
    << r.updated_at << '|' << r.notes << '|' << r.tags << '|' << r.error << '|' << r.steps << '|' << r.last_step << '|'
    << r.wall_s << '|' << r.images_per_s << '|' << r.best_cider.value_or(-1) << '|' << r.best_stage << r.best_epoch << '\n';
  for (const auto& s : store.steps(r.id))
    o << s.stage << s.epoch << s.step << ',' << s.loss << ',' << s.grad_norm << ',' << s.skipped << ',' << s.wall_s << ';';
  for (const auto& v : store.validations(r.id)) o << v.stage << v.epoch << v.step << ',' << v.cider_d << ';';
  for (const auto& c : store.samples(r.id)) o << c.image << ',' << c.caption << ',' << c.reference << ';';
  for (const auto& [index, stage] : store.stages(r.id)) o << index << stage << ';';
  return o.str();
}

bool registered(const std::string& store_path) {
  for (const auto& known : known_run_stores())
    if (known.path == canonical(store_path)) return known.exists;
  return false;
}

size_t entries(const std::string& dir) {
  size_t n = 0;
  for (auto it = fs::directory_iterator(dir); it != fs::directory_iterator(); ++it) ++n;
  return n;
}

}  // namespace

class TestRunRegistry : public QObject {
  Q_OBJECT

 private slots:
  void registryListsStoresInOrderAndForgets() {
    const std::string home = fresh_home("registry_home");
    const std::string default_store = home + "/data/runs.sqlite";
    QVERIFY(known_run_stores().empty());
    QVERIFY(!fs::exists(default_store));  // reading creates nothing
    forget_run_store("/nowhere/runs.sqlite");
    QVERIFY(!fs::exists(default_store));

    const std::string dir = expnet_test::makeTempDir("registry_stores").toStdString();
    { RunStore b(dir + "/b.sqlite"); }
    register_run_store(dir + "/b.sqlite");
    register_run_store(dir + "/a.sqlite");                 // not there (yet): registered all the same
    register_run_store(dir + "/../registry_stores/b.sqlite");  // the same store again
    register_run_store(default_run_store_path());           // the default store is listed anyway
    const auto known = known_run_stores();
    QCOMPARE(known.size(), size_t(3));
    QCOMPARE(known[0].path, canonical(default_store));
    QVERIFY(known[0].exists);
    QCOMPARE(known[1].path, canonical(dir + "/b.sqlite"));
    QVERIFY(known[1].exists);
    QCOMPARE(known[2].path, canonical(dir + "/a.sqlite"));
    QVERIFY(!known[2].exists);
    forget_run_store(dir + "/b.sqlite");
    const auto left = known_run_stores();
    QCOMPARE(left.size(), size_t(2));
    QCOMPARE(left[1].path, canonical(dir + "/a.sqlite"));
  }

  // One real trainer: live and locked while it trains, interrupted once killed,
  // a second trainer refused, then resumed to the end with wall_s continuing.
  void trainerHoldsItsRunsLock() {
    fresh_home("registry_live_home");
    const QString out = expnet_test::makeTempDir("registry_live");
    const std::string store = canonical(out.toStdString() + "/runs.sqlite");
    // Whole epochs of XE (a few seconds): time to see it live before it ends.
    const QString config = write_recipe(expnet_test::makeTempDir("registry_live_config").toStdString(), "tiny-live",
                                        [](nlohmann::json& recipe) {
                                          recipe["stages"][0]["max_batches_per_epoch"] = 0;
                                          recipe["stages"][0]["epochs"] = 3;
                                        });
    QProcess trainer;
    trainer.start(expnet_test::cliPath(), train_args(config, out, false));
    QVERIFY(trainer.waitForStarted());
    std::optional<RunInfo> run;
    QElapsedTimer timer;
    timer.start();
    // Running, a step logged and checkpointed (so --resume continues from it).
    while (timer.elapsed() < 180000 && trainer.state() == QProcess::Running) {
      if (run_store_file_version(store) == kRunStoreVersion) {
        run = RunStore(store).find_run_by_name("tiny-live");
        if (run && run->status == "running" && run->steps > 0 && fs::exists(out.toStdString() + "/checkpoints/latest.json"))
          break;
      }
      QTest::qWait(20);
    }
    QVERIFY2(trainer.state() == QProcess::Running, trainer.readAllStandardError().constData());
    const auto pid = static_cast<pid_t>(trainer.processId());
    ::kill(pid, SIGSTOP);  // holds still (and holds its lock) while we look
    QVERIFY(run.has_value());
    const int64_t id = run->id;
    QVERIFY(run_is_live(store, id));
    QCOMPARE(run_status(*run, true), std::string("running"));
    const QString taken = expnet_test::errorOf([&] { RunLock second(store, id); });
    QVERIFY2(taken.contains("is being trained by pid " + QString::number(pid)), qPrintable(taken));
    QVERIFY(registered(store));

    ::kill(pid, SIGKILL);
    QVERIFY(trainer.waitForFinished(30000));
    QVERIFY(!run_is_live(store, id));
    run = RunStore(store).find_run("tiny-live");
    QCOMPARE(run->status, std::string("running"));  // as the killed trainer left it
    QCOMPARE(run_status(*run, run_is_live(store, id)), std::string("interrupted"));

    // Another trainer on a run someone holds fails before training, and leaves the run alone.
    {
      RunLock held(store, id);
      const auto refused = expnet_test::runProcess(expnet_test::cliPath(), train_args(config, out, true));
      QVERIFY(refused.exitCode != 0);
      QVERIFY2(refused.err.contains("is being trained by pid " + QByteArray::number(::getpid())), refused.err.constData());
      const auto after = RunStore(store).find_run("tiny-live");
      QCOMPARE(after.status, std::string("running"));
      QCOMPARE(after.error, std::string());
    }

    // The steps kept get a large wall_s: a resume that continued from them
    // logs only more; one that started over from 0 would log less.
    {
      RunStore s(store);
      for (auto step : s.steps(id)) {
        step.wall_s = 1000 + step.step;
        s.log_step(step);
      }
    }
    const auto resumed = expnet_test::runProcess(expnet_test::cliPath(), train_args(config, out, true));
    QVERIFY2(resumed.exitCode == 0, resumed.err.constData());
    RunStore s(store);
    const auto done = s.find_run("tiny-live");
    QCOMPARE(done.status, std::string("finished"));
    QVERIFY(!run_is_live(store, id));
    QVERIFY(!fs::exists(run_lock_path(store, id)));  // a clean end removes it
    double last = 0;
    for (const auto& step : s.steps(id)) {
      QVERIFY2(step.wall_s > 1000 && step.wall_s >= last, qPrintable(QString("step %1: wall_s %2").arg(step.step).arg(step.wall_s)));
      last = step.wall_s;
    }
    QCOMPARE(done.wall_s, last);
    QVERIFY(done.images_per_s > 0);

    forget_run_store(store);
    QVERIFY(!registered(store));
  }

  // One folder holds one run: two trainers of different runs started on one
  // --out together (or 50 or 200 ms apart), ten times: one trains to the end,
  // the other is refused naming it, before it wrote anything (no row in the
  // store, no checkpoint). Afterwards the folder stays the first run's: a run
  // of another name, new or --resume, is refused too, and the first's files
  // are left as they were.
  void oneFolderHoldsOneRun() {
    fresh_home("folder_lock_home");
    const std::string configs = expnet_test::makeTempDir("folder_lock_config").toStdString();
    const auto shorter = [](nlohmann::json& recipe) {
      recipe["stages"] = nlohmann::json::array({recipe["stages"][0]});
      recipe["stages"][0]["epochs"] = 1;
      recipe["stages"][0]["max_batches_per_epoch"] = 2;
    };
    const QString recipes[2] = {write_recipe(configs, "race-a", shorter), write_recipe(configs, "race-b", shorter)};
    for (int round = 0; round < 10; ++round) {
      const QString out = expnet_test::makeTempDir(QStringLiteral("folder_lock_%1").arg(round));
      const int gap_ms = round % 3 == 0 ? 0 : round % 3 == 1 ? 50 : 200;
      QProcess trainers[2];
      trainers[0].start(expnet_test::cliPath(), train_args(recipes[round % 2], out, false));
      if (gap_ms > 0) QTest::qWait(gap_ms);
      trainers[1].start(expnet_test::cliPath(), train_args(recipes[1 - round % 2], out, false));
      for (auto& t : trainers) QVERIFY(t.waitForFinished(180000));
      const bool first_won = trainers[0].exitCode() == 0;
      const QString where = QStringLiteral("round %1 (%2 ms apart)").arg(round).arg(gap_ms);
      QVERIFY2(first_won != (trainers[1].exitCode() == 0), qPrintable(where + ": exactly one trainer may succeed"));
      const std::string winner = first_won == (round % 2 == 0) ? "race-a" : "race-b";
      const std::string loser = winner == "race-a" ? "race-b" : "race-a";
      const QByteArray refusal = trainers[first_won ? 1 : 0].readAllStandardError();
      QVERIFY2(refusal.contains("is in use by the run '" + QByteArray::fromStdString(winner) + "'") ||
                   refusal.contains("holds the checkpoints of the run '" + QByteArray::fromStdString(winner) + "'"),
               qPrintable(where + ": " + refusal));
      const auto runs = RunStore(canonical(out.toStdString() + "/runs.sqlite")).list_runs();
      QCOMPARE(runs.size(), size_t(1));
      QCOMPARE(runs[0].name, winner);
      QCOMPARE(runs[0].status, std::string("finished"));
      QVERIFY(fs::exists(out.toStdString() + "/final.pth"));
      if (round > 0) continue;

      // Later: the folder is the winner's, for new runs and resumes of other names alike.
      const std::string final_before = file_text(out.toStdString() + "/final.pth");
      const QString loser_recipe = recipes[loser == "race-a" ? 0 : 1];
      for (const bool resume : {false, true}) {
        const auto refused = expnet_test::runProcess(expnet_test::cliPath(), train_args(loser_recipe, out, resume));
        QVERIFY(refused.exitCode != 0);
        QVERIFY2(refused.err.contains("holds the checkpoints of the run '" + QByteArray::fromStdString(winner) + "'"),
                 refused.err.constData());
      }
      QCOMPARE(RunStore(canonical(out.toStdString() + "/runs.sqlite")).list_runs().size(), size_t(1));
      QVERIFY(file_text(out.toStdString() + "/final.pth") == final_before);
      // A folder that cannot hold a run says why, in one line.
      const auto blocked = expnet_test::runProcess(
          expnet_test::cliPath(), train_args(loser_recipe, out + "/final.pth/sub", false));
      QVERIFY(blocked.exitCode != 0);
      QVERIFY2(blocked.err.contains("cannot create the run folder") && blocked.err.contains("choose a writable --out"),
               blocked.err.constData());
    }
  }

  // --resume continues a run only with the recipe it was started with: a
  // changed learning rate, seed, epoch count, batch or stage list is refused,
  // naming each changed key with its old and new value, and the run's record
  // (status, config, steps) stays as it was; the same recipe resumes.
  void resumeWithAnotherRecipeIsRefused() {
    fresh_home("resume_recipe_home");
    const std::string configs = expnet_test::makeTempDir("resume_recipe_config").toStdString();
    const QString out = expnet_test::makeTempDir("resume_recipe");
    const auto shorter = [](nlohmann::json& recipe) {
      recipe["stages"] = nlohmann::json::array({recipe["stages"][0]});
      recipe["stages"][0]["epochs"] = 1;
      recipe["stages"][0]["max_batches_per_epoch"] = 2;
    };
    const QString recipe = write_recipe(configs, "recipe", shorter);
    const auto first = expnet_test::runProcess(expnet_test::cliPath(), train_args(recipe, out, false));
    QVERIFY2(first.exitCode == 0, first.err.constData());
    const std::string store = canonical(out.toStdString() + "/runs.sqlite");
    const std::string before = describe(store, "recipe");
    const std::vector<std::pair<std::function<void(nlohmann::json&)>, QByteArray>> changes{
        {[](nlohmann::json& r) { r["stages"][0]["lr"] = 0.005; }, "stages[0].lr 0.001 -> 0.005"},
        {[](nlohmann::json& r) { r["seed"] = 8; }, "seed 7 -> 8"},
        {[](nlohmann::json& r) { r["stages"][0]["epochs"] = 3; }, "stages[0].epochs 1 -> 3"},
        {[](nlohmann::json& r) { r["stages"][0]["batch"] = 5; }, "stages[0].batch 3 -> 5"},
        {[](nlohmann::json& r) { r["stages"].push_back(r["stages"][0]); }, "stages[1].accumulate — -> 2"}};
    for (const auto& [change, expected] : changes) {
      const QString changed = write_recipe(configs, "recipe", [&](nlohmann::json& r) {
        shorter(r);
        change(r);
      });
      const auto refused = expnet_test::runProcess(expnet_test::cliPath(), train_args(changed, out, true));
      QVERIFY(refused.exitCode != 0);
      QVERIFY2(refused.err.contains("--resume: the config differs from the one run 'recipe' was started with") &&
                   refused.err.contains(expected),
               refused.err.constData());
      QCOMPARE(describe(store, "recipe"), before);
    }
    const QString same = write_recipe(configs, "recipe", shorter);
    const auto resumed = expnet_test::runProcess(expnet_test::cliPath(), train_args(same, out, true));
    QVERIFY2(resumed.exitCode == 0, resumed.err.constData());
    QCOMPARE(RunStore(store).find_run("recipe").status, std::string("finished"));
  }

  // The first stage is frozen and its feature cache folder cannot be made (a
  // file has its name): training throws after the run exists.
  void runThatThrowsEndsFailed() {
    fresh_home("registry_failed_home");
    const std::string out = expnet_test::makeTempDir("registry_failed").toStdString();
    const QString config = write_recipe(expnet_test::makeTempDir("registry_failed_config").toStdString(), "tiny-fails",
                                        [](nlohmann::json& recipe) {
                                          recipe["stages"] = nlohmann::json::array(
                                              {{{"name", "frozen"}, {"objective", "xe"}, {"backbone", "frozen"},
                                                {"batch", 3}, {"lr", 1e-3}, {"schedule", "fixed"}, {"epochs", 1},
                                                {"max_batches_per_epoch", 2}}});
                                        });
    std::ofstream(out + "/features") << "a file where the feature cache folder goes";
    const auto result = expnet_test::runProcess(expnet_test::cliPath(), train_args(config, QString::fromStdString(out), false));
    QVERIFY(result.finished);
    QVERIFY(result.exitCode != 0);
    const std::string store = canonical(out + "/runs.sqlite");
    const auto run = RunStore(store).find_run("tiny-fails");
    QCOMPARE(run.status, std::string("failed"));
    QVERIFY2(QString::fromStdString(run.error).contains("features"), run.error.c_str());
    QVERIFY2(result.err.contains(QByteArray::fromStdString(run.error)), result.err.constData());
    QVERIFY(!run_is_live(store, run.id));
    QCOMPARE(run_status(run, false), std::string("failed"));
    QVERIFY(!fs::exists(run_lock_path(store, run.id)));
  }

  void trashAndRestoreRunWithItsOwnFolder() {
    fresh_home("trash_own_home");
    const std::string folder = expnet_test::makeTempDir("trash_own").toStdString() + "/alpha";
    const std::string store = folder + "/runs.sqlite";
    const int64_t id = make_run(store, "alpha", folder);
    register_run_store(store);
    const std::string before = describe(store, "alpha");

    const TrashedRun t = trash_run(store, "alpha");
    QVERIFY(!fs::exists(folder));  // the store went with it
    QVERIFY(t.moved_folder);
    QCOMPARE(t.out_dir, canonical(folder));
    QCOMPARE(t.store_path, canonical(store));
    QCOMPARE(t.run_name, std::string("alpha"));
    QVERIFY(t.trash_dir.rfind(canonical(trash_root()) + "/", 0) == 0);
    QVERIFY(QString::fromStdString(t.trash_dir).endsWith("Z-alpha"));
    QCOMPARE(file_text(t.trash_dir + "/folder/checkpoints/final.pth"), std::string("weights of alpha"));
    QCOMPARE(RunStore(t.trash_dir + "/runs.sqlite").find_run("alpha").id, id);
    QCOMPARE(describe(t.trash_dir + "/runs.sqlite", "alpha"), before);
    QVERIFY(RunStore(t.trash_dir + "/folder/runs.sqlite").list_runs().empty());
    const auto manifest = nlohmann::json::parse(file_text(t.trash_dir + "/trash.json"));
    QCOMPARE(manifest.at("store_path").get<std::string>(), t.store_path);
    QVERIFY(manifest.at("moved_folder").get<bool>());
    QVERIFY(manifest.contains("trashed_at"));
    QVERIFY(!registered(store));  // its file is gone with the folder

    const TrashedRun read = read_trashed_run(t.trash_dir);
    QCOMPARE(read.trash_dir, t.trash_dir);
    QCOMPARE(read.out_dir, t.out_dir);
    QCOMPARE(read.store_path, t.store_path);
    QVERIFY(read.moved_folder);
    restore_run(read);
    QVERIFY(!fs::exists(t.trash_dir));
    QCOMPARE(file_text(folder + "/checkpoints/final.pth"), std::string("weights of alpha"));
    QCOMPARE(RunStore(store).find_run("alpha").id, id);
    QCOMPARE(describe(store, "alpha"), before);
    QVERIFY(registered(store));
    QVERIFY(!expnet_test::errorOf([&] { read_trashed_run(t.trash_dir); }).isEmpty());
  }

  void trashAndRestoreRunOfASharedStore() {
    fresh_home("trash_shared_home");
    const std::string root = expnet_test::makeTempDir("trash_shared").toStdString();
    const std::string store = root + "/shared.sqlite";
    const int64_t one_id = make_run(store, "one", root + "/one");
    const int64_t two_id = make_run(store, "two", root + "/two");
    const std::string one = describe(store, "one"), two = describe(store, "two");

    TrashedRun t = trash_run(store, "one");
    QVERIFY(!fs::exists(root + "/one"));
    QVERIFY(fs::exists(store));
    QCOMPARE(file_text(root + "/two/checkpoints/final.pth"), std::string("weights of two"));
    QVERIFY(!RunStore(store).find_run_by_name("one"));
    QCOMPARE(RunStore(store).list_runs().size(), size_t(1));
    QCOMPARE(describe(store, "two"), two);
    restore_run(t);
    QCOMPARE(RunStore(store).find_run("one").id, one_id);
    QCOMPARE(describe(store, "one"), one);
    QCOMPARE(describe(store, "two"), two);

    // Refusals leave the trash as it is: the folder's place taken, then the name.
    t = trash_run(store, "one");
    fs::create_directories(root + "/one");
    QString error = expnet_test::errorOf([&] { restore_run(t); });
    QVERIFY2(error.contains("occupied"), qPrintable(error));
    QVERIFY(fs::exists(t.trash_dir + "/folder/checkpoints/final.pth"));
    fs::remove(root + "/one");
    const int64_t newcomer = RunStore(store).create_run("one", "{}", root + "/elsewhere");
    error = expnet_test::errorOf([&] { restore_run(t); });
    QVERIFY2(error.contains("has a run named 'one'"), qPrintable(error));
    QVERIFY(fs::exists(t.trash_dir + "/folder/checkpoints/final.pth"));
    QVERIFY(fs::exists(t.trash_dir + "/runs.sqlite"));
    QVERIFY(!fs::exists(root + "/one"));
    RunStore(store).rename_run(newcomer, "one-new");
    restore_run(t);
    QCOMPARE(describe(store, "one"), one);

    // A restored run whose id was taken meanwhile gets a new one, its rows with it.
    t = trash_run(store, "one-new");
    t = trash_run(store, "two");
    const int64_t three = RunStore(store).create_run("three", "{}", root + "/three");
    QCOMPARE(three, two_id);  // SQLite gave the freed id again
    restore_run(t);
    const auto restored = RunStore(store).find_run("two");
    QVERIFY(restored.id != two_id);
    QCOMPARE(describe(store, "two"), two);
    QVERIFY(RunStore(store).steps(three).empty());
  }

  void liveOrEntangledRunsAreNotTrashed() {
    const std::string home = fresh_home("trash_refused_home");
    const std::string folder = expnet_test::makeTempDir("trash_refused").toStdString() + "/busy";
    const std::string store = folder + "/runs.sqlite";
    const int64_t id = make_run(store, "busy", folder);
    const std::string before = describe(store, "busy");
    const size_t trashed = entries(trash_root());
    {
      RunLock trainer(canonical(store), id);  // this process plays the trainer
      const QString error = expnet_test::errorOf([&] { trash_run(store, "busy"); });
      QVERIFY2(error.contains("run 'busy' is running (pid " + QString::number(::getpid()) + "): stop it first"),
               qPrintable(error));
    }
    QCOMPARE(describe(store, "busy"), before);
    QVERIFY(fs::exists(folder + "/checkpoints/final.pth"));
    QCOMPARE(entries(trash_root()), trashed);

    // A run folder holding expnet's data folder is never moved.
    const std::string elsewhere = expnet_test::makeTempDir("trash_refused_store").toStdString() + "/runs.sqlite";
    make_run(elsewhere, "greedy", home);
    const std::string greedy = describe(elsewhere, "greedy");
    const QString error = expnet_test::errorOf([&] { trash_run(elsewhere, "greedy"); });
    QVERIFY2(error.contains("data folder"), qPrintable(error));
    QCOMPARE(describe(elsewhere, "greedy"), greedy);
    QCOMPARE(entries(trash_root()), trashed);

    // Nor one holding a store with other runs in it.
    make_run(store, "guest", folder + "-guest");
    const QString shared = expnet_test::errorOf([&] { trash_run(store, "busy"); });
    QVERIFY2(shared.contains("other runs too"), qPrintable(shared));
    QCOMPARE(describe(store, "busy"), before);
  }
};

QTEST_GUILESS_MAIN(TestRunRegistry)
#include "test_run_registry.moc"

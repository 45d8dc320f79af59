// expnet runs follow (expnet/train/run_follow.h): a store's rows as JSON lines
// with cursors. Continuing from any line's cursor gives exactly the rows after
// it (none lost, none twice); a live run (its lock held) is followed while rows
// arrive, and the follow ends by itself with the run's final status; bad cursors,
// newer stores and missing runs are one-line errors.
#include <QElapsedTimer>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <atomic>
#include <filesystem>
#include <thread>

#include "expnet/remote/run_mirror.h"
#include "expnet/train/run_follow.h"
#include "expnet/train/run_lock.h"
#include "expnet/train/run_store.h"
#include "support/fixtures.h"

using namespace expnet;
using nlohmann::json;

namespace {

std::vector<json> follow_all(const FollowOptions& options) {
  std::vector<json> lines;
  follow_run_store(options, [&](const std::string& line) { lines.push_back(json::parse(line)); });
  return lines;
}

// "step 12 of run 1", ... for every row-carrying line: what a mirror would hold.
std::vector<std::string> rows_of(const std::vector<json>& lines) {
  std::vector<std::string> rows;
  for (const auto& line : lines) {
    const std::string type = line["type"];
    if (type == "step") rows.push_back("step " + std::to_string(line["step"].get<int64_t>()));
    if (type == "validation") rows.push_back("validation " + std::to_string(line["epoch"].get<int64_t>()));
    if (type == "sample") rows.push_back("sample " + line["caption"].get<std::string>());
  }
  return rows;
}

void fill(RunStore& store, int64_t run, int64_t from_step, int64_t to_step) {
  std::vector<StepRecord> steps;
  for (int64_t s = from_step; s <= to_step; ++s) {
    StepRecord r;
    r.run = run;
    r.step = s;
    r.epoch = s / 10;
    r.loss = 5.0 / static_cast<double>(s);
    steps.push_back(r);
  }
  store.log_steps(steps);
}

void validate(RunStore& store, int64_t run, int64_t epoch, double cider_d) {
  ValidationRecord v;
  v.run = run;
  v.epoch = epoch;
  v.cider_d = cider_d;
  store.log_validation(v);
}

}  // namespace

class TestRunFollow : public QObject {
  Q_OBJECT
 private slots:
  void everyCursorContinuesExactly() {
    const std::string path = expnet_test::makeTempDir("follow_cursor").toStdString() + "/runs.sqlite";
    {
      RunStore store(path);
      const int64_t a = store.create_run("a", "{}", "/tmp/a"), b = store.create_run("b; $(x) 'q'", "{}", "/tmp/b");
      store.add_stage(a, 0, "xe", "{}");
      fill(store, a, 1, 30);
      fill(store, b, 1, 12);
      validate(store, a, 1, 0.5);
      store.log_samples({{a, 0, 1, "img.jpg", "a red circle", "a red circle"}});
      store.set_status(a, "finished");
      store.set_status(b, "failed", "out of memory");
    }
    FollowOptions options;
    options.store = path;
    const auto all = follow_all(options);
    QCOMPARE(all.front()["type"].get<std::string>(), std::string("hello"));
    QCOMPARE(all.front()["version"].get<int>(), kFollowFormatVersion);
    QCOMPARE(all.back()["type"].get<std::string>(), std::string("end"));
    const auto rows = rows_of(all);
    QCOMPARE(rows.size(), size_t(30 + 12 + 1 + 1));
    std::map<std::string, std::string> status;
    for (const auto& line : all)
      if (line["type"] == "run") status[line["name"]] = line["status"];
    QCOMPARE(status["a"], std::string("finished"));
    QCOMPARE(status["b; $(x) 'q'"], std::string("failed"));
    // From each line's cursor: exactly the rows after that line.
    for (size_t i = 0; i < all.size(); ++i) {
      FollowOptions again = options;
      again.since = FollowCursor::parse(all[i]["cursor"]);
      const auto rest = rows_of(follow_all(again));
      const auto before = rows_of(std::vector<json>(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(i + 1)));
      std::vector<std::string> joined = before;
      joined.insert(joined.end(), rest.begin(), rest.end());
      QVERIFY2(joined == rows, qPrintable(QString("from line %1 (%2): %3 + %4 rows, %5 expected")
                                              .arg(i)
                                              .arg(QString::fromStdString(all[i]["cursor"]))
                                              .arg(before.size())
                                              .arg(rest.size())
                                              .arg(rows.size())));
    }
    // One run only: the other's rows are skipped.
    FollowOptions one = options;
    one.run = "b; $(x) 'q'";
    QCOMPARE(rows_of(follow_all(one)).size(), size_t(12));
  }

  // A mirror fed half the lines, closed (a studio quit), reopened and fed from
  // its own cursor equals the store table by table; it shows the host's status.
  void aMirrorEqualsTheStoreAcrossARestart() {
    const QString dir = expnet_test::makeTempDir("follow_mirror");
    const std::string path = dir.toStdString() + "/runs.sqlite", copy = dir.toStdString() + "/mirror.sqlite";
    {
      RunStore store(path);
      const int64_t a = store.create_run("a", "{\"k\": 1}", "/tmp/a");
      store.add_stage(a, 0, "xe", "{}");
      fill(store, a, 1, 40);
      validate(store, a, 2, 0.25);
      store.log_samples({{a, 0, 2, "i.jpg", "a red circle", "a red circle"}, {a, 0, 2, "j.jpg", "two", "two"}});
      store.set_status(a, "failed", "disk full");
    }
    FollowOptions options;
    options.store = path;
    std::vector<std::string> lines;
    follow_run_store(options, [&](const std::string& line) { lines.push_back(line); });
    {
      RunMirror mirror(copy, "gpu1", "runs/a/runs.sqlite");
      mirror.apply(std::vector<std::string>(lines.begin(), lines.begin() + 20));
    }
    RunMirror mirror(copy, "gpu1", "runs/a/runs.sqlite");
    FollowOptions rest = options;
    rest.since = FollowCursor::parse(mirror.cursor());
    std::vector<std::string> more;
    follow_run_store(rest, [&](const std::string& line) { more.push_back(line); });
    mirror.apply(more);
    const RunStore original(path, RunStore::Open::read_only), mirrored(copy, RunStore::Open::read_only);
    const auto run = original.list_runs().front();
    const auto seen = mirrored.list_runs();
    QCOMPARE(seen.size(), size_t(1));
    QCOMPARE(seen.front().id, run.id);
    QCOMPARE(seen.front().status, std::string("failed"));
    QCOMPARE(seen.front().error, std::string("disk full"));
    QCOMPARE(seen.front().config_json, run.config_json);
    QCOMPARE(mirrored.steps(run.id).size(), original.steps(run.id).size());
    for (size_t i = 0; i < original.steps(run.id).size(); ++i)
      QCOMPARE(mirrored.steps(run.id)[i].loss, original.steps(run.id)[i].loss);
    QCOMPARE(mirrored.validations(run.id).size(), size_t(1));
    QCOMPARE(mirrored.samples(run.id).size(), size_t(2));
    QCOMPARE(mirrored.stages(run.id).size(), size_t(1));
    // Every line again (a second follower of the same mirror, or a follow from an older cursor): nothing doubles.
    mirror.apply(lines);
    QCOMPARE(mirrored.steps(run.id).size(), original.steps(run.id).size());
    QCOMPARE(mirrored.validations(run.id).size(), size_t(1));
    QCOMPARE(mirrored.samples(run.id).size(), size_t(2));
    const auto origin = mirror_origin(copy);
    QVERIFY(origin && origin->host == "gpu1" && origin->remote_store == "runs/a/runs.sqlite");
    QVERIFY(!mirror_origin(path));
    // Not a mirror of another host's store, nor of a local store with runs.
    QVERIFY(expnet_test::errorOf([&] { RunMirror(copy, "gpu2", "runs/a/runs.sqlite"); }).contains("mirrors runs/a/runs.sqlite on gpu1"));
    QVERIFY(expnet_test::errorOf([&] { RunMirror(path, "gpu1", "x"); }).contains("local run store"));
    QVERIFY(expnet_test::errorOf([&] { mirror.apply({"{\"type\": \"hello\", \"version\": 7, \"expnet\": \"9.0\"}"}); })
                .contains("speaks follow format 7, and this one (" EXPNET_VERSION ") reads format 1"));
  }

  // A run killed and resumed from its last checkpoint deletes its later steps and
  // validations and logs them again: the mirror drops them too, also when the run is
  // stopped again before it reaches them, and a second run's rows stay.
  void aResumedRunsDroppedRowsLeaveTheMirror() {
    const QString dir = expnet_test::makeTempDir("follow_rewind");
    const std::string path = dir.toStdString() + "/runs.sqlite", copy = dir.toStdString() + "/mirror.sqlite";
    RunStore store(path);
    const int64_t a = store.create_run("a", "{}", "/tmp/a"), b = store.create_run("b", "{}", "/tmp/b");
    store.add_stage(a, 0, "xe", "{}");
    fill(store, a, 1, 30);
    fill(store, b, 1, 12);
    for (int64_t epoch = 1; epoch <= 3; ++epoch) store.log_validation({a, 0, epoch, 10 * epoch, 0, 0, 0, 0, 0, 0.1 * double(epoch)});
    store.set_status(a, "interrupted", "");
    store.set_status(b, "finished", "");
    RunMirror mirror(copy, "gpu1", "runs/a/runs.sqlite");
    FollowOptions options;
    options.store = path;
    const auto mirrorNow = [&] {
      options.since = mirror.cursor().empty() ? FollowCursor{} : FollowCursor::parse(mirror.cursor());
      std::vector<std::string> lines;
      follow_run_store(options, [&](const std::string& line) { lines.push_back(line); });
      mirror.apply(lines);
      return lines;
    };
    const auto all = mirrorNow();
    // Resumed from the checkpoint at step 10, stopped again at step 15 (other losses this time).
    store.truncate_after(a, 10);
    std::vector<StepRecord> again;
    for (int64_t s = 11; s <= 15; ++s) again.push_back({a, 0, 1, s, 7.0 / double(s)});
    store.log_steps(again);
    mirrorNow();
    const RunStore mirrored(copy, RunStore::Open::read_only);
    const auto same = [&](int64_t run) {
      const auto there = store.steps(run), here = mirrored.steps(run);
      QCOMPARE(here.size(), there.size());
      for (size_t i = 0; i < there.size(); ++i) {
        QCOMPARE(here[i].step, there[i].step);
        QCOMPARE(here[i].loss, there[i].loss);
      }
      QCOMPARE(mirrored.validations(run).size(), store.validations(run).size());
    };
    same(a);
    QCOMPARE(mirrored.steps(a).size(), size_t(15));
    QCOMPARE(mirrored.validations(a).size(), size_t(1));
    same(b);
    QCOMPARE(mirrored.steps(b).size(), size_t(12));
    // Every line of the first follow again (a follow from an older cursor): the rewound rows stay gone.
    mirror.apply(all);
    const auto rest = mirrorNow();
    QVERIFY(rest.size() > 0);
    same(a);
    same(b);
  }

  void aLiveRunIsFollowedUntilItEnds() {
    const std::string path = expnet_test::makeTempDir("follow_live").toStdString() + "/runs.sqlite";
    RunStore store(path);
    const int64_t run = store.create_run("live", "{}", "/tmp/live");
    store.set_status(run, "running");
    auto lock = std::make_unique<RunLock>(path, run);
    std::vector<json> lines;
    std::mutex mutex;
    FollowOptions options;
    options.store = path;
    options.poll_ms = 50;
    options.heartbeat_s = 0.2;
    std::thread follower([&] {
      follow_run_store(options, [&](const std::string& line) {
        std::lock_guard<std::mutex> hold(mutex);
        lines.push_back(json::parse(line));
      });
    });
    for (int64_t chunk = 0; chunk < 5; ++chunk) {
      fill(store, run, chunk * 20 + 1, chunk * 20 + 20);
      std::this_thread::sleep_for(std::chrono::milliseconds(120));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // quiet: "alive" lines
    fill(store, run, 101, 107);  // the last rows, written just before the trainer lets go
    store.set_status(run, "finished");
    lock.reset();
    follower.join();  // ends by itself
    QCOMPARE(rows_of(lines).size(), size_t(107));
    QCOMPARE(lines.back()["type"].get<std::string>(), std::string("end"));
    std::vector<std::string> statuses;
    bool alive = false;
    for (const auto& line : lines) {
      if (line["type"] == "run") statuses.push_back(line["status"]);
      alive = alive || line["type"] == "alive";
    }
    QCOMPARE(statuses.front(), std::string("running"));
    QCOMPARE(statuses.back(), std::string("finished"));
    QVERIFY(alive);
  }

  // A run being resumed still shows how it ended before: with wait_for_start the
  // follow goes on until its trainer takes the run (then until it ends), or
  // until the wait is over; without it the follow ends at once.
  void aRunBeingResumedIsWaitedFor() {
    const std::string path = expnet_test::makeTempDir("follow_resume").toStdString() + "/runs.sqlite";
    RunStore store(path);
    const int64_t run = store.create_run("again", "{}", "/tmp/again");
    store.set_status(run, "interrupted");
    FollowOptions options;
    options.store = path;
    options.run = "again";
    options.poll_ms = 50;
    QElapsedTimer clock;
    clock.start();
    QCOMPARE(follow_all(options).back()["type"].get<std::string>(), std::string("end"));
    QVERIFY(clock.elapsed() < 2000);
    options.wait_for_start_s = 0.6;
    clock.restart();
    follow_all(options);  // nobody resumes it: over after the wait
    QVERIFY2(clock.elapsed() >= 600, qPrintable(QString::number(clock.elapsed())));
    options.wait_for_start_s = 30;
    std::vector<std::string> statuses;
    std::thread follower([&] {
      follow_run_store(options, [&](const std::string& line) {
        const auto j = json::parse(line);
        if (j["type"] == "run") statuses.push_back(j["status"]);
      });
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    auto lock = std::make_unique<RunLock>(path, run);  // the resumed trainer takes its run
    store.set_status(run, "running");
    fill(store, run, 1, 10);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    store.set_status(run, "finished");
    clock.restart();
    lock.reset();
    follower.join();  // ends with the run, long before the 30 s
    QVERIFY(clock.elapsed() < 5000);
    QCOMPARE(statuses.front(), std::string("interrupted"));
    QCOMPARE(statuses.back(), std::string("finished"));
  }

  void badCursorsStoresAndRunsAreOneLineErrors() {
    const QString dir = expnet_test::makeTempDir("follow_errors");
    const std::string path = dir.toStdString() + "/runs.sqlite";
    {
      RunStore store(path);
      store.create_run("r", "{}", "/tmp/r");
    }
    QVERIFY(expnet_test::errorOf([] { FollowCursor::parse("v2:1:2:3"); }).contains("follow format 2, and this expnet reads format 1"));
    QVERIFY(expnet_test::errorOf([] { FollowCursor::parse("v1:1:x:3"); }).contains("is not a follow cursor"));
    QVERIFY(expnet_test::errorOf([] { FollowCursor::parse(";rm"); }).contains("is not a follow cursor"));
    FollowOptions missing;
    missing.store = path;
    missing.run = "nope";
    missing.wait_for_run_s = 0.3;
    missing.poll_ms = 50;
    QVERIFY(expnet_test::errorOf([&] { follow_all(missing); }).contains("no run 'nope' appeared"));
    const auto cli = expnet_test::runProcess(expnet_test::cliPath(),
                                             {"runs", "follow", "--store", QString::fromStdString(path), "--since", "v9:0:0:0"});
    QCOMPARE(cli.exitCode, 1);
    QVERIFY2(cli.err.contains("follow format 9"), cli.err.constData());
    // A store of a newer schema, as a newer expnet on a host would leave it.
    const auto newer = expnet_test::runProcess("/usr/bin/python3", {"-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); "
                                                                          "c.execute('PRAGMA user_version = 9'); c.commit()",
                                                                    QString::fromStdString(path)});
    QCOMPARE(newer.exitCode, 0);
    FollowOptions options;
    options.store = path;
    QVERIFY(expnet_test::errorOf([&] { follow_all(options); }).contains("is of schema 9, newer than this expnet"));
  }
};

QTEST_MAIN(TestRunFollow)
#include "test_run_follow.moc"

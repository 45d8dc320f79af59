// Run store: round trip of every record kind (and the version 2 fields), unique
// names, a reader connection reading while a writer thread logs (WAL); opening
// old, newer and damaged files (migration with its .bak, refusals that leave the
// file byte for byte as it was); list_runs' speed on 50 runs x 10,000 steps.
#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QtTest>

#include <sys/stat.h>

#include <sqlite3.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <thread>

#include "expnet/train/run_store.h"
#include "support/fixtures.h"

using namespace expnet;
namespace fs = std::filesystem;

namespace {

// The tables as expnet wrote them before schema versions (user_version 0).
const char* kVersion1Schema = R"sql(
PRAGMA journal_mode=WAL;
CREATE TABLE runs(
  id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, status TEXT NOT NULL, config TEXT NOT NULL,
  out_dir TEXT NOT NULL, created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ','now')),
  updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ','now')));
CREATE TABLE stages(
  run INTEGER NOT NULL REFERENCES runs(id), idx INTEGER NOT NULL, name TEXT NOT NULL, config TEXT NOT NULL,
  PRIMARY KEY(run, idx));
CREATE TABLE steps(
  run INTEGER NOT NULL, stage INTEGER NOT NULL, epoch INTEGER NOT NULL, step INTEGER NOT NULL,
  loss REAL, lr REAL, grad_norm REAL, images_per_s REAL, skipped INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY(run, step));
CREATE TABLE validation(
  run INTEGER NOT NULL, stage INTEGER NOT NULL, epoch INTEGER NOT NULL, step INTEGER NOT NULL,
  bleu1 REAL, bleu2 REAL, bleu3 REAL, bleu4 REAL, rouge_l REAL, cider_d REAL,
  PRIMARY KEY(run, stage, epoch));
CREATE TABLE samples(
  run INTEGER NOT NULL, stage INTEGER NOT NULL, epoch INTEGER NOT NULL,
  image TEXT NOT NULL, caption TEXT NOT NULL, reference TEXT NOT NULL);
CREATE INDEX samples_run ON samples(run, stage, epoch);
INSERT INTO runs(id, name, status, config, out_dir) VALUES(1, 'old', 'finished', '{"name":"old"}', '/tmp/old');
INSERT INTO stages VALUES(1, 0, 'xe', '{}');
INSERT INTO steps VALUES(1, 0, 0, 1, 4.0, 1e-4, 1.0, 20.0, 0);
INSERT INTO steps VALUES(1, 0, 0, 2, 3.5, 1e-4, 1.0, 30.0, 0);
INSERT INTO steps VALUES(1, 0, 1, 3, 3.0, 1e-4, 1.0, 0.0, 1);
INSERT INTO validation VALUES(1, 0, 0, 2, 0.5, 0.4, 0.3, 0.2, 0.4, 0.75);
INSERT INTO samples VALUES(1, 0, 0, 'a.png', 'a red circle', 'a red circle');
)sql";

// Raw SQL on a file, as another program (or an older expnet) would write it.
void exec_sql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) throw std::runtime_error("cannot open " + path);
  char* message = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message);
  const std::string text = message ? message : "";
  sqlite3_free(message);
  sqlite3_close(db);
  if (rc != SQLITE_OK) throw std::runtime_error(path + ": " + text);
}

// The first column of the first row, as text ("" when none).
std::string query_one(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* stmt = nullptr;
  std::string out;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK && sqlite3_step(stmt) == SQLITE_ROW) {
    const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    out = text ? text : "";
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return out;
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A store of one run with 3,000 steps (about 100 KB), closed cleanly (no -wal left).
void store_of_3000_steps(const std::string& path) {
  RunStore store(path);
  const int64_t run = store.create_run("steps", "{}", "/tmp/steps");
  std::vector<StepRecord> steps;
  for (int i = 1; i <= 3000; ++i) steps.push_back({run, 0, 0, i, 1.0, 1e-4, 1.0, 10.0, false, i * 0.1});
  store.log_steps(steps);
}

// Opening `path` throws a message naming it and saying it was not modified; the
// file keeps every byte and gets no -wal/-shm beside it.
void expect_refused_untouched(const std::string& path, const std::string& reason_part) {
  const std::string before = file_bytes(path);
  const QString error = expnet_test::errorOf([&] { RunStore store(path); });
  QVERIFY2(error.contains(QString::fromStdString(path)), qPrintable(error));
  QVERIFY2(error.contains("it was not modified"), qPrintable(error));
  QVERIFY2(error.contains(QString::fromStdString(reason_part)), qPrintable(error));
  QVERIFY(file_bytes(path) == before);
  QVERIFY(!fs::exists(path + "-wal"));
  QVERIFY(!fs::exists(path + "-shm"));
}

}  // namespace

class TestRunStore : public QObject {
  Q_OBJECT

 private slots:
  void roundTrip() {
    const std::string path = expnet_test::makeTempDir("run_store_rt").toStdString() + "/runs.sqlite";
    QCOMPARE(run_store_file_version(path), 0);  // absent
    RunStore store(path);
    QCOMPARE(run_store_file_version(path), kRunStoreVersion);
    const int64_t run = store.create_run("demo", R"({"preset":"shapes-demo"})", "/tmp/out");
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, store.create_run("demo", "{}", "/tmp/x"));
    store.add_stage(run, 0, "A", R"({"objective":"xe"})");
    store.add_stage(run, 1, "C", R"({"objective":"scst"})");
    const auto fresh = store.find_run("demo");
    QCOMPARE(fresh.steps, int64_t(0));
    QCOMPARE(fresh.last_step, int64_t(0));
    QCOMPARE(fresh.images_per_s, 0.0);
    QCOMPARE(fresh.wall_s, 0.0);
    QVERIFY(!fresh.best_cider.has_value());
    store.log_steps({{run, 0, 0, 1, 4.5, 1e-4, 2.0, 30.0, false, 1.5},
                     {run, 0, 0, 2, 4.0, 2e-4, 1.5, 0.0, true, 2.5},  // no speed: not in the mean
                     {run, 1, 0, 3, 3.0, 2e-4, 1.5, 40.0, false, 4.0}});
    store.log_validation({run, 0, 0, 2, 0.5, 0.4, 0.3, 0.2, 0.45, 1.25});
    store.log_validation({run, 1, 0, 3, 0.5, 0.4, 0.3, 0.2, 0.45, 1.25});  // a tie: the earliest counts
    store.log_validation({run, 0, 1, 2, 0.5, 0.4, 0.3, 0.2, 0.45, 1.0});
    store.log_samples({{run, 0, 0, "img1.png", "a red circle", "a red circle on black"}});
    const auto info = store.find_run("demo");
    QCOMPARE(info.id, run);
    QCOMPARE(info.steps, int64_t(3));
    QCOMPARE(info.last_step, int64_t(3));
    QCOMPARE(info.images_per_s, 35.0);
    QCOMPARE(info.wall_s, 4.0);
    QVERIFY(info.best_cider.has_value());
    QCOMPARE(*info.best_cider, 1.25);
    QCOMPARE(info.best_stage, int64_t(0));
    QCOMPARE(info.best_epoch, int64_t(0));
    QCOMPARE(info.status, std::string("running"));  // validation marks it
    QCOMPARE(store.find_run(std::to_string(run)).name, std::string("demo"));
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, store.find_run("nope"));
    const auto steps = store.steps(run);
    QCOMPARE(steps.size(), size_t(3));
    QCOMPARE(steps[1].loss, 4.0);
    QVERIFY(steps[1].skipped);
    QCOMPARE(steps[2].wall_s, 4.0);
    QCOMPARE(store.validations(run)[0].bleu4, 0.2);
    QCOMPARE(store.samples(run)[0].caption, std::string("a red circle"));
    QCOMPARE(store.stages(run).size(), size_t(2));
    store.truncate_after(run, 1);
    QCOMPARE(store.steps(run).size(), size_t(1));
    QCOMPARE(store.validations(run).size(), size_t(0));
    QCOMPARE(store.find_run("demo").wall_s, 1.5);
  }

  void statusNotesTagsAndNames() {
    const std::string path = expnet_test::makeTempDir("run_store_user").toStdString() + "/runs.sqlite";
    RunStore store(path);
    const int64_t a = store.create_run("a", "{}", "/tmp/a");
    const int64_t b = store.create_run("b", "{}", "/tmp/b");
    store.set_status(a, "failed", "out of memory in stage 2");
    QCOMPARE(store.find_run("a").status, std::string("failed"));
    QCOMPARE(store.find_run("a").error, std::string("out of memory in stage 2"));
    store.set_status(a, "running", "ignored unless failed");
    QCOMPARE(store.find_run("a").error, std::string());
    store.set_notes(a, "lr too high?\nsecond line");
    store.set_tags(a, "baseline, shapes");
    QCOMPARE(store.find_run("a").notes, std::string("lr too high?\nsecond line"));
    QCOMPARE(store.find_run("a").tags, std::string("baseline, shapes"));
    QCOMPARE(store.find_run("b").notes, std::string());
    const QString taken = expnet_test::errorOf([&] { store.rename_run(a, "b"); });
    QVERIFY2(taken.contains("'b' is taken by run " + QString::number(b)), qPrintable(taken));
    QVERIFY(!expnet_test::errorOf([&] { store.rename_run(a, ""); }).isEmpty());
    QVERIFY(!expnet_test::errorOf([&] { store.set_notes(999, "x"); }).isEmpty());
    QVERIFY(!expnet_test::errorOf([&] { store.rename_run(999, "c"); }).isEmpty());
    store.rename_run(a, "a2");
    QCOMPARE(store.find_run(std::to_string(a)).name, std::string("a2"));
    QVERIFY(!store.find_run_by_name("a"));
    store.rename_run(a, "a2");  // its own name: nothing to do
  }

  void version1StoreIsBackedUpAndMigrated() {
    const std::string dir = expnet_test::makeTempDir("run_store_v1").toStdString();
    const std::string path = dir + "/runs.sqlite";
    exec_sql(path, kVersion1Schema);
    QCOMPARE(run_store_file_version(path), 1);
    {
      RunStore store(path);
      const auto run = store.find_run("old");
      QCOMPARE(run.steps, int64_t(3));
      QCOMPARE(run.last_step, int64_t(3));
      QCOMPARE(run.images_per_s, 25.0);
      QCOMPARE(run.wall_s, 0.0);  // version 1 steps have none
      QCOMPARE(*run.best_cider, 0.75);
      QCOMPARE(run.notes, std::string());
      QCOMPARE(store.samples(run.id).size(), size_t(1));
      QCOMPARE(store.stages(run.id).size(), size_t(1));
      QCOMPARE(store.steps(run.id)[2].skipped, true);
      store.set_notes(run.id, "migrated");
      store.log_step({run.id, 0, 1, 4, 2.5, 1e-4, 1.0, 10.0, false, 12.0});
      QCOMPARE(store.find_run("old").wall_s, 12.0);
    }
    QCOMPARE(run_store_file_version(path), kRunStoreVersion);
    QCOMPARE(query_one(path, "PRAGMA user_version"), std::string("2"));
    QCOMPARE(query_one(path, "SELECT COUNT(*) FROM run_stores"), std::string("0"));
    // The copy is the version 1 file: old columns, its rows, user_version 0.
    const std::string backup = path + ".v1.bak";
    QVERIFY(fs::exists(backup));
    QCOMPARE(query_one(backup, "PRAGMA user_version"), std::string("0"));
    QCOMPARE(query_one(backup, "SELECT COUNT(*) FROM steps"), std::string("3"));
    QCOMPARE(query_one(backup, "SELECT COUNT(*) FROM pragma_table_info('runs') WHERE name = 'notes'"), std::string("0"));
    QCOMPARE(query_one(backup, "SELECT COUNT(*) FROM sqlite_master WHERE name = 'run_stores'"), std::string("0"));
    QCOMPARE(run_store_file_version(backup), 1);
    // Opening again migrates nothing and copies nothing.
    { RunStore again(path); QCOMPARE(again.find_run("old").notes, std::string("migrated")); }
    QVERIFY(!fs::exists(path + ".v1.1.bak"));

    // An earlier copy is never replaced: the next one gets the next name.
    const std::string other = dir + "/other.sqlite";
    exec_sql(other, kVersion1Schema);
    std::ofstream(other + ".v1.bak") << "an older copy";
    { RunStore store(other); QCOMPARE(store.find_run("old").steps, int64_t(3)); }
    QCOMPARE(file_bytes(other + ".v1.bak"), std::string("an older copy"));
    QCOMPARE(query_one(other + ".v1.1.bak", "SELECT COUNT(*) FROM steps"), std::string("3"));
  }

  void newerStoreIsRefusedUntouched() {
    const std::string dir = expnet_test::makeTempDir("run_store_newer").toStdString();
    const std::string path = dir + "/runs.sqlite";
    exec_sql(path, std::string(kVersion1Schema) + "PRAGMA user_version = 99;");
    QVERIFY(!fs::exists(path + "-wal"));  // a clean close: the WAL was folded in
    expect_refused_untouched(path, "newer expnet (schema 99; this one reads up to 2)");
    const std::string before = file_bytes(path);
    QCOMPARE(run_store_file_version(path), 99);
    QVERIFY(file_bytes(path) == before);
    QVERIFY(!fs::exists(path + "-wal"));
    QVERIFY(!fs::exists(path + "-shm"));
    QVERIFY(!fs::exists(path + ".v1.bak"));
  }

  void damagedFilesAreRefusedUntouched() {
    const std::string dir = expnet_test::makeTempDir("run_store_damaged").toStdString();
    const std::string noise = dir + "/noise.sqlite";
    {
      std::mt19937 random(7);
      std::ofstream out(noise, std::ios::binary);
      for (int i = 0; i < 8192; ++i) out.put(static_cast<char>(random() & 0xff));
    }
    expect_refused_untouched(noise, "not a SQLite database");
    QCOMPARE(run_store_file_version(noise), -1);

    // A real store, cut in half (a copy that stopped midway).
    const std::string cut = dir + "/cut.sqlite";
    store_of_3000_steps(cut);
    QVERIFY(!fs::exists(cut + "-wal"));
    const auto size = fs::file_size(cut);
    QVERIFY(size > 40000);
    fs::resize_file(cut, size / 2);
    expect_refused_untouched(cut, "damaged");

    // Some other program's SQLite database is not made a run store.
    const std::string foreign = dir + "/foreign.sqlite";
    exec_sql(foreign, "CREATE TABLE photos(path TEXT); INSERT INTO photos VALUES('x.jpg');");
    expect_refused_untouched(foreign, "not a run store (its tables: photos)");
    QCOMPARE(run_store_file_version(foreign), 0);
  }

  // What a store path can be besides a store (issue 45): a folder or a FIFO
  // (never opened: SQLite would wait on it), a store whose tables are gone, a
  // page that fails to read (its reason, not "not an error"), and a version 2
  // store labelled version 1 (migrated, not failed on "duplicate column name").
  // `expnet runs list|show` on a full disk: a finished run's store (no -wal or
  // -shm beside it) is read without creating anything. Needs root to mount a
  // small tmpfs; elsewhere skipped, saying so.
  void listingOnAFullDiskWritesNothing() {
    if (::geteuid() != 0) QSKIP("needs root to mount a full tmpfs (CI runs it)");
    QTemporaryDir dir;
    const QString root = dir.path() + "/full";
    QVERIFY(QDir().mkpath(root));
    const auto mounted = expnet_test::runProcess("mount", {"-t", "tmpfs", "-o", "size=512k", "tmpfs", root});
    if (mounted.exitCode != 0) QSKIP(qPrintable("cannot mount a tmpfs here: " + QString::fromUtf8(mounted.err)));
    struct Unmount {
      QString path;
      ~Unmount() { expnet_test::runProcess("umount", {"-l", path}); }
    } unmount{root};
    const std::string path = (root + "/runs.sqlite").toStdString();
    {
      RunStore store(path);
      store.set_status(store.create_run("ended-run", "{}", root.toStdString()), "finished");
    }
    QVERIFY(!QFileInfo::exists(root + "/runs.sqlite-wal") && !QFileInfo::exists(root + "/runs.sqlite-shm"));
    {
      std::ofstream filler((root + "/filler").toStdString(), std::ios::binary);
      const std::string block(4096, 'x');
      while (filler.write(block.data(), static_cast<std::streamsize>(block.size())) && filler.flush()) {
      }
    }
    for (const QStringList& args : {QStringList{"runs", "list", "--store", root + "/runs.sqlite"},
                                    QStringList{"runs", "show", "ended-run", "--store", root + "/runs.sqlite"}}) {
      const auto r = expnet_test::runProcess(expnet_test::cliPath(), args, 20000);
      QVERIFY2(r.exitCode == 0 && r.out.contains("finished"), qPrintable(args.join(' ') + ": " + r.err));
    }
    QVERIFY(!QFileInfo::exists(root + "/runs.sqlite-wal") && !QFileInfo::exists(root + "/runs.sqlite-shm"));
  }

  void oddStoresSayWhatTheyAre() {
    const std::string dir = expnet_test::makeTempDir("run_store_odd").toStdString();
    fs::create_directories(dir + "/folder.sqlite");
    const std::string fifo = dir + "/pipe.sqlite";
    QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
    for (const auto mode : {RunStore::Open::create, RunStore::Open::existing}) {
      const QString folder = expnet_test::errorOf([&] { RunStore store(dir + "/folder.sqlite", mode); });
      QVERIFY2(folder.contains("folder") && !folder.contains("does not exist"), qPrintable(folder));
      QElapsedTimer clock;
      clock.start();
      const QString pipe = expnet_test::errorOf([&] { RunStore store(fifo, mode); });
      QVERIFY2(pipe.contains("FIFO") && !pipe.contains("does not exist"), qPrintable(pipe));
      QVERIFY(clock.elapsed() < 5000);
    }
    QCOMPARE(run_store_file_version(fifo), -1);

    const std::string tableless = dir + "/tableless.sqlite";
    exec_sql(tableless, "CREATE TABLE notes(x TEXT); PRAGMA user_version = 2;");
    expect_refused_untouched(tableless, "tables runs, stages, steps, validation, samples are missing");

    // A page in the middle overwritten: whichever way SQLite reports it, a reason of its own.
    const std::string paged = dir + "/paged.sqlite";
    store_of_3000_steps(paged);
    {
      std::fstream file(paged, std::ios::in | std::ios::out | std::ios::binary);
      file.seekp(static_cast<std::streamoff>(fs::file_size(paged) / 2 / 4096 * 4096));
      const std::string junk(4096, '\xA5');
      file.write(junk.data(), static_cast<std::streamsize>(junk.size()));
    }
    const QString damaged = expnet_test::errorOf([&] { RunStore store(paged); });
    QVERIFY2(damaged.contains("damaged") && !damaged.contains("not an error"), qPrintable(damaged));

    // Version 2's tables and columns under user_version 1: migrated as they are.
    const std::string mislabelled = dir + "/mislabelled.sqlite";
    {
      RunStore store(mislabelled);
      store.set_notes(store.create_run("kept", "{}", "/tmp/kept"), "notes survive");
    }
    exec_sql(mislabelled, "PRAGMA user_version = 1;");
    {
      RunStore store(mislabelled);
      QCOMPARE(store.find_run("kept").notes, std::string("notes survive"));
    }
    QCOMPARE(run_store_file_version(mislabelled), kRunStoreVersion);
  }

  void notARunStoreIsAClearError() {
    const std::string path = expnet_test::makeTempDir("run_store_bad").toStdString() + "/runs.sqlite";
    std::ofstream(path) << "this is not sqlite at all, just some text that is long enough to be a header....";
    try {
      RunStore store(path);
      QFAIL("opened a text file as a run store");
    } catch (const std::runtime_error& e) {
      QVERIFY(std::string(e.what()).find(path) != std::string::npos);
    }
  }

  // The studio lists every run of every store: one query for 50 runs of 10,000 steps each.
  // A store the user may not write: `expnet runs list` reads a current one; an older one,
  // which would need migrating, is refused with what to do. Run as user nobody (root writes anything).
  void readOnlyStoresAreReadNotMigrated() {
    if (::geteuid() != 0 || !QFileInfo::exists("/usr/bin/setpriv")) QSKIP("needs root and setpriv to run as nobody");
    QTemporaryDir dir;  // under /tmp: a folder user nobody may enter
    QVERIFY(dir.isValid());
    fs::permissions(dir.path().toStdString(), fs::perms(0755));
    const std::string current = dir.path().toStdString() + "/current.sqlite", old = dir.path().toStdString() + "/old.sqlite";
    {
      RunStore store(current);
      store.create_run("kept", "{}", "/tmp/kept");
    }
    exec_sql(old, kVersion1Schema);
    const std::string oldBytes = file_bytes(old);
    const auto as_nobody = [](const std::string& store) {
      return expnet_test::runProcess("/usr/bin/setpriv", {"--reuid=65534", "--regid=65534", "--clear-groups",
                                                          expnet_test::cliPath(), "runs", "list", "--store",
                                                          QString::fromStdString(store)});
    };
    auto r = as_nobody(current);
    if (r.err.contains("Permission denied") && !r.err.contains("run store")) QSKIP("user nobody cannot run the CLI here");
    QVERIFY2(r.exitCode == 0 && r.out.contains("kept"), (r.out + r.err).constData());
    r = as_nobody(old);
    QVERIFY(r.exitCode != 0);
    QVERIFY2(r.err.contains("read-only") && r.err.contains("chmod u+w"), r.err.constData());
    QCOMPARE(file_bytes(old), oldBytes);
    QVERIFY(!fs::exists(old + ".v1.bak"));
  }

  // Readers (expnet runs, the pages) open with Open::existing: nothing is created.
  void readersNeverCreateAStore() {
    const std::string dir = expnet_test::makeTempDir("run_store_existing").toStdString();
    const std::string absent = dir + "/absent.sqlite", empty = dir + "/empty.sqlite";
    std::ofstream{empty};
    QString error = expnet_test::errorOf([&] { RunStore store(absent, RunStore::Open::existing); });
    QVERIFY2(error.contains("does not exist"), qPrintable(error));
    QVERIFY(!fs::exists(absent));
    error = expnet_test::errorOf([&] { RunStore store(empty, RunStore::Open::existing); });
    QVERIFY2(error.contains("empty (0 bytes)"), qPrintable(error));
    QCOMPARE(fs::file_size(empty), uintmax_t(0));
  }

  void listRunsIsFastFor50RunsOf10000Steps() {
    const std::string path = expnet_test::makeTempDir("run_store_speed").toStdString() + "/runs.sqlite";
    {
      RunStore store(path);
      for (int r = 0; r < 50; ++r) {
        const int64_t run = store.create_run("run-" + std::to_string(r), "{}", "/tmp/r");
        std::vector<StepRecord> steps;
        steps.reserve(10000);
        for (int i = 1; i <= 10000; ++i)
          steps.push_back({run, i / 5000, i / 1000, i, 1.0 / i, 1e-4, 1.0, 20.0 + (i % 2) * 20.0, false, i * 0.5});
        store.log_steps(steps);
        for (int e = 0; e < 10; ++e) store.log_validation({run, e / 5, e % 5, e * 1000, 0, 0, 0, 0, 0, e == 7 ? 2.0 : 1.0});
      }
    }
    RunStore store(path);  // a fresh connection, as a reader opens it
    QElapsedTimer timer;
    timer.start();
    const auto runs = store.list_runs();
    const qint64 first_ms = timer.elapsed();
    timer.restart();
    store.list_runs();
    const qint64 second_ms = timer.elapsed();
    qDebug("list_runs, 50 runs x 10,000 steps: %lld ms (first), %lld ms (again)", static_cast<long long>(first_ms),
           static_cast<long long>(second_ms));
    QCOMPARE(runs.size(), size_t(50));
    QCOMPARE(runs[49].steps, int64_t(10000));
    QCOMPARE(runs[49].last_step, int64_t(10000));
    QCOMPARE(runs[49].images_per_s, 30.0);
    QCOMPARE(runs[49].wall_s, 5000.0);
    QCOMPARE(*runs[49].best_cider, 2.0);
    QCOMPARE(runs[49].best_stage, int64_t(1));
    QCOMPARE(runs[49].best_epoch, int64_t(2));
    QVERIFY2(first_ms < 200, "list_runs must stay well under 200 ms");
  }

  void readerReadsWhileWriterWrites() {
    const std::string path = expnet_test::makeTempDir("run_store_rw").toStdString() + "/runs.sqlite";
    int64_t run = 0;
    {
      RunStore setup(path);
      run = setup.create_run("live", "{}", "/tmp/out");
    }
    std::atomic<bool> done{false};
    std::atomic<int> writer_errors{0};
    const int total = 400;
    std::thread writer([&] {
      try {
        RunStore store(path);
        for (int i = 1; i <= total; ++i) {
          store.log_step({run, 0, 0, i, 1.0 / i, 1e-4, 1.0, 10.0, false});
          if (i % 100 == 0) store.log_validation({run, 0, i / 100, i, 0, 0, 0, 0, 0, i / 100.0});
        }
      } catch (...) {
        ++writer_errors;
      }
      done = true;
    });
    RunStore reader(path);
    size_t last = 0;
    int reads = 0;
    bool monotonic = true;
    while (!done || reads == 0) {
      const auto steps = reader.steps(run);
      if (steps.size() < last) monotonic = false;
      for (size_t i = 0; i < steps.size(); ++i)
        if (steps[i].step != static_cast<int64_t>(i + 1)) monotonic = false;  // a prefix, no torn rows
      last = steps.size();
      reader.validations(run);
      reader.list_runs();
      ++reads;
    }
    writer.join();
    QCOMPARE(writer_errors.load(), 0);
    QVERIFY(monotonic);
    QVERIFY(reads > 1);
    QCOMPARE(reader.steps(run).size(), size_t(total));
    QCOMPARE(*reader.find_run("live").best_cider, 4.0);
  }
};

QTEST_GUILESS_MAIN(TestRunStore)
#include "test_run_store.moc"

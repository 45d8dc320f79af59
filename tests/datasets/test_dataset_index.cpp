// The dataset index built straight from the file (streaming Karpathy reader)
// against the one built from load_dataset, the cached index (staleness,
// versions), cancellation, sorting by caption length and by an evaluation's
// scores, errors with file:line, and `expnet dataset query --sort`.
#include <QDir>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QtTest>

#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <csignal>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <thread>

#include "expnet/data/dataset.h"
#include "expnet/data/dataset_index.h"
#include "expnet/data/shapes_dataset.h"
#include "expnet/text/caption_text.h"
#include "support/fixtures.h"

using namespace expnet;
using expnet_test::errorOf;
namespace fs = std::filesystem;

namespace {

std::string write(const QString& dir, const std::string& name, const std::string& text) {
  const std::string path = dir.toStdString() + "/" + name;
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// Every row of every query, as text (blobs as hex by the queries themselves).
QStringList rows(const std::string& db_path, const std::vector<std::string>& queries) {
  sqlite3* db = nullptr;
  sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  QStringList out;
  for (const auto& sql : queries) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) {
      out << QStringLiteral("cannot prepare: %1: %2").arg(QString::fromStdString(sql), sqlite3_errmsg(db));
      continue;
    }
    while (sqlite3_step(stmt) == SQLITE_ROW) {
      QStringList fields;
      for (int c = 0; c < sqlite3_column_count(stmt); ++c) {
        const auto* text = sqlite3_column_text(stmt, c);
        fields << (text ? QString::fromUtf8(reinterpret_cast<const char*>(text)) : QStringLiteral("NULL"));
      }
      out << QString::fromStdString(sql.substr(0, 30)) + ": " + fields.join('|');
    }
    sqlite3_finalize(stmt);
  }
  sqlite3_close(db);
  return out;
}

// All of an index but its creation time: schema, tables and the full-text index's own b-tree.
QStringList index_contents(const std::string& db) {
  return rows(db, {"SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name",
                   "SELECT key, value FROM meta WHERE key <> 'created' ORDER BY key", "SELECT * FROM splits ORDER BY id",
                   "SELECT * FROM images ORDER BY cocoid", "SELECT * FROM captions ORDER BY id", "SELECT * FROM tokens ORDER BY word",
                   "SELECT id, hex(block) FROM captions_fts_data ORDER BY id",
                   "SELECT segid, hex(term), pgno FROM captions_fts_idx ORDER BY segid, term",
                   "SELECT k, v FROM captions_fts_config ORDER BY k"});
}

void exec(const std::string& db_path, const std::string& sql) {
  sqlite3* db = nullptr;
  sqlite3_open(db_path.c_str(), &db);
  char* message = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message);
  const std::string error = message ? message : "";
  sqlite3_free(message);
  sqlite3_close(db);
  if (rc != SQLITE_OK) throw std::runtime_error(error);
}

// A Karpathy file with what the reader must get right: escapes, unicode, keys in
// any order, tokens-only sentences, imgid and position ids, non-integer numbers,
// repeated keys (the last wins), values it skips, nested extras.
const char* kTrickyKarpathy = R"({"dataset":"x","info":{"nested":[1,2,{"a":null,"b":true,"c":-1.5e3}]},"images":[
 {"sentids":[0,1],"cocoid":11,"filepath":"train2014","filename":"a.jpg","split":"train",
  "sentences":[{"tokens":["ignored"],"raw":"A dog, on grass.","imgid":0,"sentid":0},{"raw":"a dog runs \u00e9t\u00e9 \"quoted\"\n"}]},
 {"filename":"b.jpg","imgid":7,"split":"restval","cocoid":2.5,"sentences":[{"raw":"Two dogs"},{"raw":"","tokens":["x","Y",3,"z"]}]},
 {"split":"val","filename":"c.jpg","sentences":[{"raw":"A CAT \u2014 on a mat!"}],"width":640,"height":480.5},
 {"filename":"d.jpg","split":"TEST","cocoid":14,"sentences":[],"extra":{"deep":[[[]]],"s":"\ud83d\ude00"}},
 {"filename":"e\u002ejpg","split":"validation","cocoid":-3,"sentences":[{"tokens":["a","bird"]},{"raw":null,"tokens":["unicode","\u00dcn\u00efc\u00f6d\u00e9","日本"]}]},
 {"filename":"f.jpg","split":"train","filename":"g.jpg","cocoid":20,"width":32,"sentences":[{"raw":"first"}],"sentences":[{"raw":"second one"}]}
],"annotations_note":"not COCO"})";

// `images` Karpathy images: 5 captions of 4-11 words each, "dog" in some.
std::string synthetic_karpathy(int images) {
  std::string out = "{\"images\":[";
  for (int i = 0; i < images; ++i) {
    out += std::string(i ? "," : "") + "{\"cocoid\":" + std::to_string(i + 1) + ",\"filename\":\"im" + std::to_string(i) +
           ".jpg\",\"split\":\"" + (i % 10 == 0 ? "val" : "train") + "\",\"sentences\":[";
    for (int c = 0; c < 5; ++c) {
      std::string raw = i % 7 == c ? "a dog" : "a cat";
      for (int w = 0; w < (i + c) % 8 + 2; ++w) raw += " word" + std::to_string((i * 5 + c + w) % 300);
      out += std::string(c ? "," : "") + "{\"raw\":\"" + raw + ".\"}";
    }
    out += "]}";
  }
  return out + "]}";
}

// The mean cleaned-token count of an image's captions, as the index should store it.
double mean_length(const DatasetImage& image) {
  if (image.captions.empty()) return 0;
  size_t words = 0;
  for (const auto& caption : image.captions) words += clean_caption(caption.raw).size();
  return static_cast<double>(words) / static_cast<double>(image.captions.size());
}

std::vector<int64_t> ids_of(const IndexPage& page) {
  std::vector<int64_t> ids;
  for (const auto& image : page.images) ids.push_back(image.cocoid);
  return ids;
}

// Every page of a query, concatenated.
std::vector<int64_t> all_pages(const DatasetIndex& index, IndexQuery query) {
  std::vector<int64_t> ids;
  for (query.page = 1;; ++query.page) {
    const auto page = ids_of(index.query(query));
    if (page.empty()) return ids;
    ids.insert(ids.end(), page.begin(), page.end());
  }
}

// The documented evaluation store (expnet/metrics/sample_evaluation.h), with its samples.
struct Sample {
  int64_t evaluation_id, cocoid;
  double cider;  // < 0: failed (error, no score)
  double bleu;
};
std::string write_evaluation_store(const QString& dir, const std::vector<Sample>& samples) {
  const std::string path = dir.toStdString() + "/evaluations.sqlite";
  std::string sql = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);
INSERT INTO meta VALUES('version', '1');
CREATE TABLE evaluations(id INTEGER PRIMARY KEY, checkpoint_sha256 TEXT, options TEXT, model TEXT, dataset TEXT, split TEXT,
                         created TEXT, UNIQUE(checkpoint_sha256, options, dataset, split));
INSERT INTO evaluations VALUES(1, 'aa', '{}', 'demo', 'd.json', 'all', '2026-11-26'), (2, 'bb', '{}', 'demo', 'd.json', 'all', '2026-11-26');
CREATE TABLE samples(evaluation_id INTEGER, cocoid INTEGER, image TEXT, caption TEXT, cider_d REAL, bleu4 REAL, error TEXT,
                     PRIMARY KEY(evaluation_id, cocoid));
)sql";
  for (const auto& s : samples) {
    const std::string id = std::to_string(s.cocoid);
    sql += "INSERT INTO samples VALUES(" + std::to_string(s.evaluation_id) + ", " + id + ", 'im" + id + ".jpg', " +
           (s.cider < 0 ? "NULL, NULL, NULL, 'cannot decode');\n"
                        : "'model caption " + id + "', " + std::to_string(s.cider) + ", " + std::to_string(s.bleu) + ", NULL);\n");
  }
  exec(path, sql);
  return path;
}

}  // namespace

class TestDatasetIndex : public QObject {
  Q_OBJECT
 private:
  // The from-file index equals build_dataset_index(load_dataset(path)), row for row.
  void compareBuilds(const std::string& path, const DatasetLoadOptions& options = {}) {
    const std::string folder = fs::path(path).parent_path().string();
    const std::string from_file = folder + "/from_file.sqlite", in_memory = folder + "/in_memory.sqlite";
    const IndexBuildReport streamed = build_dataset_index_from_file(path, from_file, options);
    const Dataset dataset = load_dataset(path, options);
    const IndexBuildReport loaded = build_dataset_index(dataset, in_memory);
    QCOMPARE(streamed.images, static_cast<int64_t>(dataset.images.size()));
    QCOMPARE(streamed.captions, loaded.captions);
    QCOMPARE(streamed.words, loaded.words);
    const QStringList expected = index_contents(in_memory), actual = index_contents(from_file);
    QVERIFY(expected.size() > 20);
    for (int i = 0; i < std::min(expected.size(), actual.size()); ++i) QCOMPARE(actual[i], expected[i]);
    QCOMPARE(actual.size(), expected.size());
  }

 private slots:
  void fromFileEqualsInMemoryOnATrickyKarpathyFile() {
    const QString dir = expnet_test::makeTempDir("index_tricky");
    const std::string path = write(dir, "dataset_coco.json", kTrickyKarpathy);
    compareBuilds(path);
    if (QTest::currentTestFailed()) return;
    // Spot checks that the comparison itself is about the right thing.
    const DatasetIndex index(dir.toStdString() + "/from_file.sqlite");
    QCOMPARE(index.meta("format"), std::string("karpathy"));
    QCOMPARE(index.split_counts(),
             (std::vector<std::pair<std::string, int64_t>>{{"train", 2}, {"restval", 1}, {"val", 2}, {"test", 1}}));
    IndexQuery q;
    q.text = "second";
    IndexPage page = index.query(q);
    QCOMPARE(ids_of(page), (std::vector<int64_t>{20}));
    QCOMPARE(page.images[0].filename, std::string("g.jpg"));
    QCOMPARE(page.images[0].width, 32);
    q.text = "y";  // tokens-only caption of b.jpg, whose cocoid 2.5 is not an integer: its imgid 7
    QCOMPARE(ids_of(index.query(q)), (std::vector<int64_t>{7}));
    q.text = "cat";
    QCOMPARE(ids_of(index.query(q)), (std::vector<int64_t>{2}));  // no id at all: its position
    // With a UTF-8 byte order mark, which load_dataset's parser skips.
    compareBuilds(write(expnet_test::makeTempDir("index_bom"), "bom.json", std::string("\xEF\xBB\xBF") + kTrickyKarpathy));
  }

  void fromFileEqualsInMemoryOnTheShapesSetAndRowFormats() {
    const QString dir = expnet_test::makeTempDir("index_shapes");
    ShapesOptions shapes;
    shapes.out_dir = (dir + "/shapes").toStdString();
    shapes.images = 40;
    shapes.threads = 1;
    const ShapesReport report = make_shapes_dataset(shapes);
    compareBuilds(report.json_path);
    DatasetLoadOptions root;
    root.image_root = "/data/elsewhere";
    compareBuilds(shapes.out_dir, root);  // a folder holding dataset_coco.json, another image root

    const QString csv_dir = expnet_test::makeTempDir("index_csv");
    compareBuilds(write(csv_dir, "captions.csv",
                        "image,caption,split,id\nx/a.png,\"A red circle, left\",train,5\nx/a.png,a circle,,5\nb.png,Two squares!,val,9\n"));
    const QString jsonl_dir = expnet_test::makeTempDir("index_jsonl");
    compareBuilds(write(jsonl_dir, "rows.jsonl", "{\"image\":\"a.png\",\"captions\":[\"one dog\",\"two dogs\"]}\n{\"image\":\"b.png\",\"caption\":\"a cat\",\"split\":\"test\"}\n"));
    // COCO captions in a .json: found by its "annotations", read by load_dataset.
    const QString coco_dir = expnet_test::makeTempDir("index_coco");
    compareBuilds(write(coco_dir, "captions_val2014.json",
                        R"({"images":[{"id":3,"file_name":"x.jpg"},{"id":4,"file_name":"y.jpg","width":5}],)"
                        R"("annotations":[{"image_id":4,"caption":"A bus."},{"image_id":3,"caption":"a tram"},{"image_id":4,"caption":"red bus"}]})"));
    QCOMPARE(DatasetIndex(coco_dir.toStdString() + "/from_file.sqlite").meta("format"), std::string("coco"));
  }

  void brokenKarpathyNamesFileAndLine() {
    const QString dir = expnet_test::makeTempDir("index_broken");
    const std::string db = dir.toStdString() + "/index.sqlite";
    auto error_of = [&](const std::string& name, const std::string& text) {
      return errorOf([&] { build_dataset_index_from_file(write(dir, name, text), db); });
    };
    QString error = error_of("syntax.json", "{\"images\": [\n {\"filename\": \"a.jpg\",\n  \"split\": train}\n]}");
    QVERIFY2(error.contains("syntax.json:3:") && error.contains("not valid JSON"), qPrintable(error));
    error = error_of("comma.json", "{\"images\": [\n {\"filename\": \"a.jpg\", \"split\": \"train\"}\n {\"filename\": \"b.jpg\"}]}");
    QVERIFY2(error.contains("comma.json:3:"), qPrintable(error));
    error = error_of("unclosed.json", "{\"images\": [\n\n {\"filename\": \"a.jpg, \"split\": \"train\"}]}");
    QVERIFY2(error.contains("unclosed.json:3:"), qPrintable(error));
    error = error_of("trailing.json", "{\"images\": []}\n\n{}");
    QVERIFY2(error.contains("trailing.json:") && error.contains("JSON"), qPrintable(error));
    error = error_of("nofile.json", "{\"images\":[\n{\"filename\":\"a.jpg\",\"split\":\"train\"},\n\n{\"split\":\"val\"}]}");
    QVERIFY2(error.contains("nofile.json:4:") && error.contains("images[1]") && error.contains("filename"), qPrintable(error));
    error = error_of("badsplit.json", "{\"images\":[\n{\"filename\":\"a.jpg\",\"split\":\"holdout\"}]}");
    QVERIFY2(error.contains("badsplit.json:2:") && error.contains("holdout") && error.contains("restval"), qPrintable(error));
    error = error_of("nocaption.json", "{\"images\":[{\"filename\":\"a.jpg\",\"split\":\"val\",\"sentences\":[\n{\"raw\":\"ok\"},\n{\"sentid\":3}]}]}");
    QVERIFY2(error.contains("nocaption.json:3:") && error.contains("sentences[1]"), qPrintable(error));
    error = error_of("twice.json", "{\"images\":[{\"filename\":\"a.jpg\",\"split\":\"val\",\"cocoid\":5},\n\n{\"filename\":\"b.jpg\",\"split\":\"val\",\"cocoid\":5}]}");
    QVERIFY2(error.contains("twice.json:3:") && error.contains("appears twice"), qPrintable(error));
    error = error_of("string.json", "{\"images\":[\n{\"filename\":\"a.jpg\",\"split\":\"val\",\"sentences\":\"a dog\"}]}");
    QVERIFY2(error.contains("string.json:2:") && error.contains("sentences is not a list"), qPrintable(error));
    error = error_of("noimages.json", "{\"pictures\": []}");
    QVERIFY2(error.contains("noimages.json") && error.contains("\"images\""), qPrintable(error));
    QCOMPARE(QDir(dir).entryList({QStringLiteral("*.sqlite*")}, QDir::Files), QStringList{});  // nothing half-written
  }

  void cachedIndexIsRebuiltWhenStaleOrOfAnotherVersion() {
    const QString dir = expnet_test::makeTempDir("index_cache");
    qunsetenv("EXPNET_HOME");
    qputenv("XDG_CACHE_HOME", (dir + "/cache").toUtf8());
    const std::string data = write(dir, "data/dataset_coco.json", synthetic_karpathy(30));
    const std::string expected_folder = (dir + "/cache/expnet/indexes").toStdString();
    const std::string path = index_cache_path(dir.toStdString() + "/data");  // the folder resolves to its dataset_coco.json
    QCOMPARE(fs::path(path).parent_path().string(), expected_folder);
    QCOMPARE(path, index_cache_path(data));
    bool built = false;
    QCOMPARE(ensure_dataset_index(data, {}, &built), path);
    QVERIFY(built);
    QCOMPARE(ensure_dataset_index(data, {}, &built), path);
    QVERIFY(!built);  // current: used as it is

    // Another version in the cached file: rebuilt, never read.
    exec(path, "UPDATE meta SET value = '0' WHERE key = 'version'");
    QVERIFY(!errorOf([&] { DatasetIndex index(path); }).isEmpty());
    QCOMPARE(ensure_dataset_index(data, {}, &built), path);
    QVERIFY(built);
    QCOMPARE(DatasetIndex(path).meta("version"), std::to_string(kDatasetIndexVersion));
    // Not an index at all: rebuilt too.
    std::ofstream(path, std::ios::binary | std::ios::trunc) << "junk, not SQLite";
    QCOMPARE(ensure_dataset_index(data, {}, &built), path);
    QVERIFY(built);
    QCOMPARE(DatasetIndex(path).query({}).total, int64_t(30));

    // The dataset changes: another key, a fresh index, and the superseded one removed.
    const std::string evaluations = path.substr(0, path.size() - 7) + ".evaluations.sqlite";
    std::ofstream(evaluations) << "kept";  // the evaluation store beside an index is not the index's to remove
    write(dir, "data/dataset_coco.json", synthetic_karpathy(31));
    const std::string changed = index_cache_path(data);
    QVERIFY(changed != path);
    QCOMPARE(ensure_dataset_index(data, {}, &built), changed);
    QVERIFY(built);
    QCOMPARE(DatasetIndex(changed).query({}).total, int64_t(31));
    QVERIFY(!fs::exists(path));
    QVERIFY(fs::exists(evaluations));
  }

  void cancelLeavesThePreviousIndexAndNoTemporaryFile() {
    const QString dir = expnet_test::makeTempDir("index_cancel");
    const std::string db = dir.toStdString() + "/index.sqlite";
    build_dataset_index_from_file(write(dir, "small/dataset_coco.json", synthetic_karpathy(3)), db);
    const std::string big = write(dir, "big/dataset_coco.json", synthetic_karpathy(20000));

    // A full build: how often it asks, the longest wait between two questions, and its progress.
    int64_t calls = 0;
    double longest = 0;
    auto last = std::chrono::steady_clock::now();
    std::vector<std::pair<int64_t, int64_t>> progress;
    IndexBuildControl counting;
    counting.cancelled = [&] {
      const auto now = std::chrono::steady_clock::now();
      longest = std::max(longest, std::chrono::duration<double>(now - last).count());
      last = now;
      ++calls;
      return false;
    };
    counting.progress = [&](int64_t done, int64_t total) { progress.emplace_back(done, total); };
    const std::string other = dir.toStdString() + "/other.sqlite";
    build_dataset_index_from_file(big, other, {}, counting);
    fs::remove(other);
    qInfo("%lld cancellation checks, at most %.3f s apart", static_cast<long long>(calls), longest);
    // One check per 256 images, and SQLite asks too while it builds the indexes and the full-text index.
    QVERIFY2(calls > 20000 / 256 + 10, "cancellation is checked only while streaming");
    QVERIFY2(longest < 0.5, "cancellation must take effect quickly");  // ~0.2 s asked; slack for a busy machine
    QVERIFY(progress.size() > 5);
    QCOMPARE(progress.back(), (std::pair<int64_t, int64_t>{20000, 20000}));
    QVERIFY(std::is_sorted(progress.begin(), progress.end()));

    // Cancelled at the first check, while streaming, in the indexes and full-text fill, at the last check.
    for (const int64_t at : {int64_t(1), calls / 10, calls / 2, calls - 2, calls - 1, calls}) {
      int64_t seen = 0;
      IndexBuildControl control;
      control.cancelled = [&] { return ++seen >= at; };
      QVERIFY_THROWS_EXCEPTION(IndexBuildCancelled, build_dataset_index_from_file(big, db, {}, control));
      QCOMPARE(QDir(dir).entryList(QDir::Files), QStringList{QStringLiteral("index.sqlite")});
      QCOMPARE(DatasetIndex(db).query({}).total, int64_t(3));
    }
    // And a build that is not cancelled replaces it.
    build_dataset_index_from_file(big, db);
    QCOMPARE(DatasetIndex(db).query({}).total, int64_t(20000));
  }

  // An index build replaces only an index of ours, an empty file or nothing:
  // a run store, an evaluation store, text, a damaged SQLite file, a FIFO, a
  // folder and a link (to any of them) given as the index path are refused,
  // naming what they are, and left byte for byte (no FIFO is opened, no link
  // followed). Temporary files of killed builds are removed by the next build.
  void indexNeverReplacesWhatIsNotAnIndex() {
    const QString dir = expnet_test::makeTempDir("index_foreign");
    const std::string d = dir.toStdString();
    const std::string data = write(dir, "data/dataset_coco.json", synthetic_karpathy(5));
    const std::string run_store = d + "/runs.sqlite";
    exec(run_store, "CREATE TABLE runs(id INTEGER PRIMARY KEY, name TEXT); INSERT INTO runs VALUES(1, 'precious');");
    const std::string evaluations = write_evaluation_store(dir, {{1, 1, 2.0, 0.2}});
    const std::string text = write(dir, "notes.txt", "a user's notes\n");
    const std::string other_sqlite = d + "/other.sqlite";
    exec(other_sqlite, "CREATE TABLE photos(id INTEGER PRIMARY KEY);");
    std::string damaged = write(dir, "damaged.sqlite", std::string("SQLite format 3") + '\0' + std::string(200, '\x7f'));
    const std::string fifo = d + "/pipe";
    QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
    fs::create_directories(d + "/folder.sqlite");
    fs::create_symlink(text, d + "/link.sqlite");
    fs::create_symlink(d + "/nowhere.sqlite", d + "/dangling.sqlite");
    const std::vector<std::pair<std::string, QString>> refused{
        {run_store, "a run store"},
        {evaluations, "an evaluation store"},
        {text, "not an SQLite database"},
        {other_sqlite, "another program"},
        {damaged, "damaged or unreadable"},
        {fifo, "a FIFO"},
        {d + "/folder.sqlite", "a folder"},
        {d + "/link.sqlite", "a symbolic link"},
        {d + "/dangling.sqlite", "a symbolic link"}};
    const auto bytes = [](const std::string& path) {
      std::ifstream in(path, std::ios::binary);
      return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    };
    for (const auto& [path, kind] : refused) {
      const bool plain = fs::is_regular_file(fs::symlink_status(path));
      const std::string before = plain ? bytes(path) : std::string();
      QElapsedTimer clock;
      clock.start();
      const QString error = errorOf([&] { build_dataset_index_from_file(data, path); });
      QVERIFY2(clock.elapsed() < 5000, qPrintable(QString::fromStdString(path)));  // a FIFO is never opened
      QVERIFY2(error.contains("will not replace") && error.contains(kind) && error.contains(QString::fromStdString(path)),
               qPrintable(QString::fromStdString(path) + ": " + error));
      if (plain) QVERIFY2(bytes(path) == before, qPrintable(QString::fromStdString(path) + " was changed"));
    }
    QVERIFY(fs::is_fifo(fifo));
    QVERIFY(fs::is_symlink(d + "/link.sqlite"));
    QCOMPARE(bytes(text), std::string("a user's notes\n"));
    QVERIFY(!fs::exists(d + "/nowhere.sqlite"));
    // The CLI says the same and exits 1.
    const auto cli = expnet_test::runProcess(expnet_test::cliPath(), {"dataset", "index", "--dataset",
                                                                      QString::fromStdString(data), "--db",
                                                                      QString::fromStdString(run_store)});
    QCOMPARE(cli.exitCode, 1);
    QVERIFY2(cli.err.contains("a run store"), cli.err.constData());
    QCOMPARE(rows(run_store, {"SELECT name FROM runs"}), QStringList{"SELECT name FROM runs: precious"});

    // An empty file and an index of ours (rebuilt) are replaced; temporaries a
    // killed build left (old, unlocked) go, a fresh one may be another build's.
    const std::string empty = write(dir, "empty.sqlite", "");
    build_dataset_index_from_file(data, empty);
    QCOMPARE(DatasetIndex(empty).query({}).total, int64_t(5));
    const std::string stale = write(dir, "empty.sqlite.tmp-123", std::string(5000, 'x'));
    const std::string fresh = write(dir, "empty.sqlite.tmp-456", std::string(5000, 'x'));
    const auto old = fs::file_time_type::clock::now() - std::chrono::minutes(5);
    fs::last_write_time(stale, old);
    build_dataset_index_from_file(write(dir, "data2/dataset_coco.json", synthetic_karpathy(7)), empty);
    QCOMPARE(DatasetIndex(empty).query({}).total, int64_t(7));
    QVERIFY(!fs::exists(stale));
    QVERIFY(fs::exists(fresh));
  }

  // A build SIGKILLed at a random moment, 10 times over: the index in place
  // stays the previous one, whole; the leftovers go with the next build once no
  // build holds them (they are at least 10 s old: aged here instead of waited for).
  void killedBuildsNeverHarmTheIndex() {
    const QString dir = expnet_test::makeTempDir("index_killed");
    const std::string small = write(dir, "small/dataset_coco.json", synthetic_karpathy(5));
    const std::string large = write(dir, "large/dataset_coco.json", synthetic_karpathy(40000));
    const std::string db = dir.toStdString() + "/index.sqlite";
    build_dataset_index_from_file(small, db);
    std::mt19937 random(45);
    int killedMidway = 0;
    for (int round = 0; round < 10; ++round) {
      QProcess build;
      build.start(expnet_test::cliPath(), {"dataset", "index", "--dataset", QString::fromStdString(large), "--db",
                                           QString::fromStdString(db)});
      QVERIFY(build.waitForStarted());
      std::this_thread::sleep_for(std::chrono::milliseconds(100 + random() % 900));
      killedMidway += build.state() == QProcess::Running;
      ::kill(static_cast<pid_t>(build.processId()), SIGKILL);
      build.waitForFinished();
      const int64_t total = DatasetIndex(db).query({}).total;  // whole: the old one, or the new one complete
      QVERIFY2(total == 5 || total == 40000, qPrintable(QString("round %1: %2 images").arg(round).arg(total)));
    }
    qInfo("%d of 10 builds killed while running", killedMidway);
    QVERIFY2(killedMidway >= 5, qPrintable(QString("only %1 of 10 builds were killed while running").arg(killedMidway)));
    const auto aged = fs::file_time_type::clock::now() - std::chrono::minutes(1);
    for (const auto& entry : fs::directory_iterator(dir.toStdString()))
      if (entry.path().filename().string().rfind("index.sqlite.tmp-", 0) == 0) fs::last_write_time(entry.path(), aged);
    build_dataset_index_from_file(small, db);
    QCOMPARE(DatasetIndex(db).query({}).total, int64_t(5));
    QStringList left;
    for (const auto& entry : fs::directory_iterator(dir.toStdString()))
      if (entry.is_regular_file()) left << QString::fromStdString(entry.path().filename().string());
    left.sort();
    QCOMPARE(left, QStringList{"index.sqlite"});
  }

  void sortByCaptionLength() {
    const QString dir = expnet_test::makeTempDir("index_length");
    const std::string path = write(dir, "dataset_coco.json", synthetic_karpathy(90));
    const std::string db = dir.toStdString() + "/index.sqlite";
    build_dataset_index_from_file(path, db);
    const Dataset dataset = load_dataset(path);
    const DatasetIndex index(db);
    for (const bool descending : {false, true}) {
      for (const std::string& split : {std::string(), std::string("train")}) {
        for (const std::string& text : {std::string(), std::string("dog")}) {
          std::vector<std::pair<double, int64_t>> expected;
          for (const auto& image : dataset.images) {
            if (!split.empty() && split_name(image.split) != split) continue;
            bool has_dog = false;
            for (const auto& caption : image.captions)
              has_dog |= std::count(caption.tokens.begin(), caption.tokens.end(), "dog") > 0;
            if (!text.empty() && !has_dog) continue;
            expected.emplace_back(descending ? -mean_length(image) : mean_length(image), image.cocoid);
          }
          std::sort(expected.begin(), expected.end());
          std::vector<int64_t> expected_ids;
          for (const auto& e : expected) expected_ids.push_back(e.second);
          IndexQuery q;
          q.split = split;
          q.text = text;
          q.sort = descending ? IndexSort::caption_length_descending : IndexSort::caption_length;
          q.page_size = 7;
          QCOMPARE(all_pages(index, q), expected_ids);
          const IndexPage first = index.query(q);
          QCOMPARE(first.total, static_cast<int64_t>(expected_ids.size()));
          QCOMPARE(first.images.front().caption_length, std::abs(expected.front().first));
        }
      }
    }
  }

  void sortByScoreJoinsTheEvaluationStore() {
    const QString dir = expnet_test::makeTempDir("index_score");
    const std::string path = write(dir, "dataset_coco.json", synthetic_karpathy(50));
    const std::string db = dir.toStdString() + "/index.sqlite";
    build_dataset_index_from_file(path, db);
    // Evaluation 1 scores images 1..40 but for every 9th (failed); ties on purpose; evaluation 2 scores others.
    std::vector<Sample> samples;
    std::mt19937 rng(7);
    std::map<int64_t, double> scores;
    for (int64_t id = 1; id <= 40; ++id) {
      const double cider = id % 9 == 0 ? -1.0 : static_cast<double>(rng() % 12) / 4.0;
      samples.push_back({1, id, cider, cider / 10});
      if (cider >= 0) scores[id] = cider;
    }
    for (int64_t id = 30; id <= 50; ++id) samples.push_back({2, id, 5.0 + static_cast<double>(id), 0.5});
    const std::string store = write_evaluation_store(dir, samples);
    const DatasetIndex index(db);
    for (const bool ascending : {true, false}) {
      for (const std::string& split : {std::string(), std::string("train")}) {
        std::vector<std::pair<double, int64_t>> scored;
        std::vector<int64_t> unscored;
        for (int64_t id = 1; id <= 50; ++id) {
          if (!split.empty() && (id - 1) % 10 == 0) continue;  // synthetic_karpathy: every 10th image is val
          if (scores.count(id))
            scored.emplace_back(scores[id], id);
          else
            unscored.push_back(id);
        }
        std::sort(scored.begin(), scored.end(), [&](const auto& a, const auto& b) {
          return a.first != b.first ? (ascending ? a.first < b.first : a.first > b.first) : a.second < b.second;
        });
        std::vector<int64_t> expected;
        for (const auto& s : scored) expected.push_back(s.second);
        expected.insert(expected.end(), unscored.begin(), unscored.end());
        IndexQuery q;
        q.split = split;
        q.sort = ascending ? IndexSort::score_ascending : IndexSort::score_descending;
        q.evaluation_db = store;
        q.evaluation_id = 1;
        q.page_size = 6;  // pages straddle the scored and unscored images
        QCOMPARE(all_pages(index, q), expected);
        QCOMPARE(index.query(q).total, static_cast<int64_t>(expected.size()));
      }
    }
    // The joined fields, also with the id order and a text filter.
    IndexQuery q;
    q.evaluation_db = store;
    q.evaluation_id = 1;
    q.page_size = 50;
    const IndexPage page = index.query(q);
    QCOMPARE(page.images.size(), size_t(50));
    for (const auto& image : page.images) {
      QCOMPARE(image.evaluated, scores.count(image.cocoid) == 1);
      if (image.evaluated) {
        QCOMPARE(image.cider_d, scores[image.cocoid]);
        QCOMPARE(image.bleu4, scores[image.cocoid] / 10);
        QCOMPARE(image.model_caption, "model caption " + std::to_string(image.cocoid));
      }
    }
    q.evaluation_id = 2;
    q.text = "dog";
    q.sort = IndexSort::score_descending;
    const IndexPage dogs = index.query(q);
    QVERIFY(!dogs.images.empty());
    QVERIFY(dogs.images.front().cocoid >= 30 && dogs.images.front().evaluated);
    for (const auto& image : dogs.images) QCOMPARE(image.evaluated, image.cocoid >= 30);

    q.evaluation_id = 3;
    QVERIFY2(errorOf([&] { index.query(q); }).contains("no evaluation 3"), qPrintable(errorOf([&] { index.query(q); })));
    q.evaluation_id = 1;
    q.evaluation_db = dir.toStdString() + "/missing.sqlite";
    QVERIFY(errorOf([&] { index.query(q); }).contains("does not exist"));
    q.evaluation_db = db;  // an index, not an evaluation store
    QVERIFY(errorOf([&] { index.query(q); }).contains("not an evaluation store"));
    q.evaluation_db.clear();
    QVERIFY(errorOf([&] { index.query(q); }).contains("needs an evaluation"));
  }

  void cliQuerySorts() {
    const QString dir = expnet_test::makeTempDir("index_cli");
    write(dir, "dataset_coco.json", synthetic_karpathy(12));
    const QString db = dir + "/index.sqlite";
    auto r = expnet_test::runProcess(expnet_test::cliPath(), {"dataset", "index", "--dataset", dir, "--db", db, "--json"});
    QVERIFY2(r.exitCode == 0, r.err.constData());
    QCOMPARE(QJsonDocument::fromJson(r.out).object().value("images").toInt(), 12);
    r = expnet_test::runProcess(expnet_test::cliPath(),
                                {"dataset", "query", "--db", db, "--sort", "length-desc", "--page-size", "3", "--json"});
    QVERIFY2(r.exitCode == 0, r.err.constData());
    const QList<QByteArray> lines = r.out.trimmed().split('\n');
    QCOMPARE(lines.size(), 3);
    double previous = 1e9;
    for (const auto& line : lines) {
      const double length = QJsonDocument::fromJson(line).object().value("caption_length").toDouble();
      QVERIFY(length > 0 && length <= previous);
      previous = length;
    }
    const std::string store = write_evaluation_store(dir, {{1, 4, 0.5, 0.1}, {1, 9, 2.5, 0.3}, {1, 2, -1, 0}});
    r = expnet_test::runProcess(expnet_test::cliPath(), {"dataset", "query", "--db", db, "--sort", "score-desc", "--eval-db",
                                                         QString::fromStdString(store), "--evaluation", "1", "--page-size", "3", "--json"});
    QVERIFY2(r.exitCode == 0, r.err.constData());
    const QList<QByteArray> scored = r.out.trimmed().split('\n');
    QCOMPARE(scored.size(), 3);
    QCOMPARE(QJsonDocument::fromJson(scored[0]).object().value("cocoid").toInt(), 9);
    QCOMPARE(QJsonDocument::fromJson(scored[0]).object().value("cider_d").toDouble(), 2.5);
    QCOMPARE(QJsonDocument::fromJson(scored[1]).object().value("cocoid").toInt(), 4);
    QCOMPARE(QJsonDocument::fromJson(scored[2]).object().value("cocoid").toInt(), 1);  // unscored, by id
    QCOMPARE(QJsonDocument::fromJson(scored[2]).object().value("evaluated").toBool(), false);
    r = expnet_test::runProcess(expnet_test::cliPath(), {"dataset", "query", "--db", db, "--sort", "score"});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.contains("--eval-db"), r.err.constData());
  }
};

QTEST_GUILESS_MAIN(TestDatasetIndex)
#include "test_dataset_index.moc"

// `expnet eval` and evaluate_samples as a user and the studio run them: the
// built-in demo model on a generated shapes set. Its scores are checked against
// `expnet score` run on the same captions, its captions against `expnet
// caption`, and the store against what each run reported.
#include <QCryptographicHash>
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>
#include <sqlite3.h>
#include <torch/torch.h>

#include <map>

#include "expnet/data/dataset_index.h"
#include "expnet/metrics/sample_evaluation.h"
#include "expnet/model/demo_model.h"
#include "expnet/system/digest.h"
#include "support/fixtures.h"

using namespace expnet;

namespace {

constexpr int kImages = 10;

QJsonObject readJson(const QString& path) {
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly)) return {};
  return QJsonDocument::fromJson(file.readAll()).object();
}

bool writeJson(const QString& path, const QJsonObject& json) {
  QFile file(path);
  return file.open(QIODevice::WriteOnly) && file.write(QJsonDocument(json).toJson()) > 0;
}

QByteArray fileBytes(const QString& path) {
  QFile file(path);
  return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

QString sha256Of(const QByteArray& bytes) {
  return QString::fromLatin1(QCryptographicHash::hash(bytes, QCryptographicHash::Sha256).toHex());
}

// The request `expnet eval --model demo` makes: the demo's own decoding options.
SampleEvaluationRequest demoRequest(const QString& dataset, const QString& db) {
  SampleEvaluationRequest request;
  request.model = "demo";
  request.use_carried_decoding = true;
  request.dataset = dataset.toStdString();
  request.split = "all";
  request.db = db.toStdString();
  return request;
}

// Edits a SQLite file behind the engine's back (as another program would).
bool sqlExec(const QString& path, const char* sql) {
  sqlite3* db = nullptr;
  bool ok = sqlite3_open(path.toUtf8().constData(), &db) == SQLITE_OK &&
            sqlite3_exec(db, sql, nullptr, nullptr, nullptr) == SQLITE_OK;
  sqlite3_close(db);
  return ok;
}

std::map<int64_t, SampleScore> byCocoid(const std::vector<SampleScore>& samples) {
  std::map<int64_t, SampleScore> out;
  for (const auto& s : samples) out[s.cocoid] = s;
  return out;
}

}  // namespace

class TestSampleEvaluation : public QObject {
  Q_OBJECT
  QString dir_, shapes_, datasetFile_;
  QJsonObject full_;  // `expnet eval --json` of every image, uninterrupted
  const QJsonObject& full() const { return full_; }

  expnet_test::ProcessResult cli(const QStringList& args) {
    return expnet_test::runProcess(expnet_test::cliPath(), args + QStringList{"--threads", "1"});
  }

  QJsonObject eval(const QStringList& extra, const QString& db) {
    const auto r = cli(QStringList{"eval", "--model", "demo", "--dataset", shapes_, "--split", "all", "--db", db,
                                   "--json"} + extra);
    if (r.exitCode != 0) qWarning() << r.err;
    return QJsonDocument::fromJson(r.out.trimmed()).object();
  }

 private slots:
  void initTestCase() {
    torch::set_num_threads(1);  // as the CLI runs below (--threads 1)
    dir_ = expnet_test::makeTempDir("sample_evaluation");
    // default_evaluation_db lives under the cache: keep it inside the test's folder.
    qputenv("XDG_CACHE_HOME", (dir_ + "/cache").toUtf8());
    shapes_ = dir_ + "/shapes";
    const auto r = cli({"dataset", "make-shapes", "--out", shapes_, "--images", QString::number(kImages), "--seed",
                        "4242", "--style", "classic"});
    QVERIFY2(r.exitCode == 0, r.err.constData());
    datasetFile_ = shapes_ + "/dataset_coco.json";
    full_ = eval({}, dir_ + "/full.sqlite");
    QCOMPARE(full()["per_image"].toArray().size(), kImages);
  }

  void sha256MatchesQt() {
    QCOMPARE(QString::fromStdString(sha256_hex("")), sha256Of(""));
    QCOMPARE(QString::fromStdString(sha256_hex("abc")),
             QString("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
    // Longer than sha256_file's 1 MiB read block, and not a multiple of it.
    QByteArray bytes(2 * 1024 * 1024 + 12345, '\0');
    for (int i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>((i * 131) ^ (i >> 9));
    const QString path = dir_ + "/blocks.bin";
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly) && file.write(bytes) == bytes.size());
    file.close();
    QCOMPARE(QString::fromStdString(sha256_file(path.toStdString())), sha256Of(bytes));
    const QString missing = expnet_test::errorOf([&] { sha256_file((dir_ + "/missing.pth").toStdString()); });
    QVERIFY2(missing.contains(dir_ + "/missing.pth"), qPrintable(missing));
  }

  void scoresEqualExpnetScore() {
    // Write score's input files from the dataset and eval's captions.
    const QJsonArray images = readJson(datasetFile_)["images"].toArray();
    QJsonObject references, candidates;
    for (const auto& value : images) {
      QJsonArray raw;
      for (const auto& sentence : value.toObject()["sentences"].toArray()) raw << sentence.toObject()["raw"];
      references[QString::number(value.toObject()["cocoid"].toInteger())] = raw;
    }
    const QJsonArray perImage = full()["per_image"].toArray();
    for (int i = 0; i < perImage.size(); ++i) {
      const auto entry = perImage[i].toObject();
      // Dataset order, every image captioned.
      QCOMPARE(entry["cocoid"].toInteger(), images[i].toObject()["cocoid"].toInteger());
      QVERIFY(QFileInfo(entry["image"].toString()).isAbsolute() && QFile::exists(entry["image"].toString()));
      QVERIFY(!entry["caption"].toString().isEmpty());
      candidates[QString::number(entry["cocoid"].toInteger())] = entry["caption"];
    }
    QVERIFY(writeJson(dir_ + "/references.json", references));
    QVERIFY(writeJson(dir_ + "/candidates.json", candidates));
    const auto r = cli({"score", "--references", dir_ + "/references.json", "--candidates", dir_ + "/candidates.json",
                        "--json"});
    QVERIFY2(r.exitCode == 0, r.err.constData());
    const QJsonObject score = QJsonDocument::fromJson(r.out.trimmed()).object();
    const QJsonObject corpus = full()["corpus"].toObject();
    QCOMPARE(corpus.keys(), score["corpus"].toObject().keys());  // Bleu_1..4, CIDEr, ROUGE_L
    for (const auto& key : corpus.keys())
      QVERIFY2(qAbs(corpus[key].toDouble() - score["corpus"][key].toDouble()) < 1e-9, qPrintable(key));
    QVERIFY(corpus["CIDEr"].toDouble() > 0.1);  // the demo model describes its own shapes
    for (const auto& value : perImage) {
      const auto entry = value.toObject();
      const auto expected = score["per_image"][QString::number(entry["cocoid"].toInteger())].toObject();
      QVERIFY(!expected.isEmpty());
      for (const auto& key : {QString("CIDEr"), QString("Bleu_4")})
        QVERIFY2(qAbs(entry["scores"][key].toDouble() - expected[key].toDouble()) < 1e-12, qPrintable(key));
    }
  }

  void captionsEqualExpnetCaption() {
    QStringList paths;
    for (const auto& value : full()["per_image"].toArray()) paths << value.toObject()["image"].toString();
    const auto r = cli(QStringList{"caption", "--model", "demo", "--json"} + paths);
    QVERIFY2(r.exitCode == 0, r.err.constData());
    const auto lines = r.out.trimmed().split('\n');
    QCOMPARE(lines.size(), kImages);
    for (int i = 0; i < kImages; ++i) {
      const auto line = QJsonDocument::fromJson(lines[i]).object();
      QCOMPARE(full()["per_image"][i]["caption"].toString(), line["captions"][0]["text"].toString());
      // The options of the key are those caption decoded with.
      auto used = line["decoding"].toObject();
      used.remove("from_checkpoint");
      QCOMPARE(full()["evaluation"]["options"].toObject(), used);
    }
    // The key's digest is the demo file's.
    const QByteArray demo = fileBytes(QString::fromStdString(builtin_model_path("demo")));
    QCOMPARE(full()["evaluation"]["checkpoint_sha256"].toString(), sha256Of(demo));
    QCOMPARE(full()["evaluation"]["resumed"].toInt(), 0);
    QCOMPARE(full()["evaluation"]["db"].toString(), QFileInfo(dir_ + "/full.sqlite").absoluteFilePath());
  }

  void secondRunCaptionsNothing() {
    const QJsonObject again = eval({}, dir_ + "/full.sqlite");
    QCOMPARE(again["evaluation"]["resumed"].toInt(), kImages);
    QCOMPARE(again["evaluation"]["captioned"].toInt(), 0);
    QCOMPARE(again["evaluation"]["id"].toInt(), full()["evaluation"]["id"].toInt());
    QCOMPARE(again["per_image"].toArray(), full()["per_image"].toArray());
    QCOMPARE(again["corpus"].toObject(), full()["corpus"].toObject());
    // The engine's request as `expnet eval` builds it finds the same evaluation.
    const auto same = evaluate_samples(demoRequest(shapes_, dir_ + "/full.sqlite"));
    QCOMPARE(static_cast<int>(same.id), full()["evaluation"]["id"].toInt());
    QCOMPARE(same.resumed, size_t(kImages));
  }

  void cancelledRunResumes() {
    const QString db = dir_ + "/resume/sub/store.sqlite";  // its folder is created
    const size_t k = 4;
    auto request = demoRequest(shapes_, db);
    size_t done = 0;
    request.progress = [&](size_t d, size_t total) {
      done = d;
      QCOMPARE(total, size_t(kImages));
    };
    request.cancelled = [&] { return done >= k; };
    bool cancelled = false;
    try {
      evaluate_samples(request);
    } catch (const SampleEvaluationCancelled&) {
      cancelled = true;
    }
    QVERIFY(cancelled);
    const auto listed = list_sample_evaluations(db.toStdString());
    QCOMPARE(listed.size(), size_t(1));
    QCOMPARE(listed[0].samples, k);
    QVERIFY(listed[0].corpus.empty());  // not scored: cancelled before scoring
    const auto kept = load_sample_evaluation(db.toStdString(), listed[0].id);
    QCOMPARE(kept.per_image.size(), k);

    size_t captionedNow = 0;
    request.cancelled = nullptr;
    request.progress = [&](size_t d, size_t) { captionedNow = d > k ? d - k : 0; };
    const auto resumed = evaluate_samples(request);
    QCOMPARE(resumed.id, listed[0].id);
    QCOMPARE(resumed.resumed, k);
    QCOMPARE(resumed.captioned, size_t(kImages) - k);
    QCOMPARE(captionedNow, size_t(kImages) - k);
    QCOMPARE(resumed.per_image.size(), size_t(kImages));
    // The same captions and scores as the uninterrupted run.
    const QJsonArray uninterrupted = full()["per_image"].toArray();
    for (size_t i = 0; i < resumed.per_image.size(); ++i) {
      const auto& s = resumed.per_image[i];
      QCOMPARE(s.cocoid, uninterrupted[int(i)]["cocoid"].toInteger());
      QCOMPARE(QString::fromStdString(s.caption), uninterrupted[int(i)]["caption"].toString());
      QVERIFY(s.scored);
      QVERIFY(qAbs(s.cider_d - uninterrupted[int(i)]["scores"]["CIDEr"].toDouble()) < 1e-12);
    }
    QVERIFY(qAbs(resumed.corpus.at("CIDEr") - full()["corpus"]["CIDEr"].toDouble()) < 1e-12);
    // The first k were kept as they were captioned, not captioned again.
    const auto first = byCocoid(kept.per_image);
    for (const auto& s : resumed.per_image)
      if (first.count(s.cocoid)) QCOMPARE(s.caption, first.at(s.cocoid).caption);

    // A smaller limit later resumes its images and still scores all the store holds.
    request.limit = 3;
    const auto limited = evaluate_samples(request);
    QCOMPARE(limited.resumed, size_t(3));
    QCOMPARE(limited.captioned, size_t(0));
    QCOMPARE(limited.per_image.size(), size_t(kImages));
  }

  void twoEvaluationsInOneStore() {
    const QString db = dir_ + "/two.sqlite";
    const QJsonObject beam1 = eval({"--beam", "1", "--limit", "4"}, db);
    const QJsonObject beam3 = eval({"--beam", "3", "--limit", "4"}, db);
    QCOMPARE(beam1["evaluation"]["options"]["beam_size"].toInt(), 1);
    QCOMPARE(beam3["evaluation"]["options"]["beam_size"].toInt(), 3);
    QVERIFY(beam1["evaluation"]["id"].toInt() != beam3["evaluation"]["id"].toInt());
    QCOMPARE(beam3["evaluation"]["resumed"].toInt(), 0);  // beam 1's samples are not beam 3's
    const auto listed = list_sample_evaluations(db.toStdString());
    QCOMPARE(listed.size(), size_t(2));
    QCOMPARE(int(listed[0].id), beam3["evaluation"]["id"].toInt());  // newest first
    for (const auto& out : {beam1, beam3}) {
      const int id = out["evaluation"]["id"].toInt();
      const auto stored = load_sample_evaluation(db.toStdString(), id);
      QCOMPARE(stored.model, std::string("demo"));
      QCOMPARE(stored.split, std::string("all"));
      QCOMPARE(QString::fromStdString(stored.dataset), QFileInfo(datasetFile_).absoluteFilePath());
      QCOMPARE(QString::fromStdString(stored.checkpoint_sha256), full()["evaluation"]["checkpoint_sha256"].toString());
      QCOMPARE(QJsonDocument::fromJson(QByteArray::fromStdString(stored.options)).object(),
               out["evaluation"]["options"].toObject());
      QCOMPARE(stored.samples, size_t(4));
      QCOMPARE(stored.per_image.size(), size_t(4));
      for (const auto& [key, value] : stored.corpus)
        QCOMPARE(value, out["corpus"][QString::fromStdString(key)].toDouble());
      QCOMPARE(stored.corpus.size(), size_t(6));
      for (int i = 0; i < 4; ++i) {
        const auto& s = stored.per_image[size_t(i)];
        QCOMPARE(QString::fromStdString(s.caption), out["per_image"][i]["caption"].toString());
        QCOMPARE(QString::fromStdString(s.image), out["per_image"][i]["image"].toString());
        QCOMPARE(s.cider_d, out["per_image"][i]["scores"]["CIDEr"].toDouble());
        QCOMPARE(s.bleu4, out["per_image"][i]["scores"]["Bleu_4"].toDouble());
      }
    }
    const QString unknown = expnet_test::errorOf([&] { load_sample_evaluation(db.toStdString(), 999); });
    QVERIFY2(unknown.contains(db) && unknown.contains("999"), qPrintable(unknown));
  }

  // A bf16 evaluation is an evaluation of its own (its options carry the
  // precision); the fp32 one is found again unchanged.
  void bf16EvaluationHasItsOwnKey() {
    const QString db = dir_ + "/precision.sqlite";
    const QJsonObject fp32 = eval({"--limit", "4"}, db);
    qputenv("EXPNET_CPU_BF16", "1");  // bf16 even where the CPU lacks it (emulated)
    const QJsonObject bf16 = eval({"--limit", "4", "--precision", "bf16"}, db);
    qunsetenv("EXPNET_CPU_BF16");
    QVERIFY(fp32["evaluation"]["id"].toInt() != bf16["evaluation"]["id"].toInt());
    QCOMPARE(bf16["evaluation"]["captioned"].toInt(), 4);
    QCOMPARE(bf16["evaluation"]["options"]["precision"].toString(), QString("bf16"));
    QVERIFY(!fp32["evaluation"]["options"].toObject().contains("precision"));
    QCOMPARE(bf16["evaluation"]["model"].toString(), QString("demo [bf16]"));
    QCOMPARE(fp32["evaluation"]["options"].toObject(), full()["evaluation"]["options"].toObject());
    const QJsonObject again = eval({"--limit", "4"}, db);
    QCOMPARE(again["evaluation"]["id"].toInt(), fp32["evaluation"]["id"].toInt());
    QCOMPARE(again["evaluation"]["captioned"].toInt(), 0);
  }

  void damagedStoresAreRefusedUntouched() {
    // Not SQLite at all.
    const QString garbage = dir_ + "/garbage.sqlite";
    QByteArray bytes;
    for (int i = 0; i < 300; ++i) bytes += "not a database ";
    QFile file(garbage);
    QVERIFY(file.open(QIODevice::WriteOnly) && file.write(bytes) == bytes.size());
    file.close();
    auto r = cli({"eval", "--model", "demo", "--dataset", shapes_, "--split", "all", "--db", garbage});
    QVERIFY(r.exitCode != 0);
    QVERIFY2(r.err.contains(garbage.toUtf8()) && r.err.contains("not an evaluation store"), r.err.constData());
    QCOMPARE(fileBytes(garbage), bytes);
    QVERIFY(!QFile::exists(garbage + "-wal") && !QFile::exists(garbage + "-journal"));
    const QString listError = expnet_test::errorOf([&] { list_sample_evaluations(garbage.toStdString()); });
    QVERIFY2(listError.contains(garbage), qPrintable(listError));

    // A store of another version: a copy of a real one with its version changed.
    const QString other = dir_ + "/version2.sqlite";
    QVERIFY(QFile::copy(dir_ + "/full.sqlite", other));
    r = cli({"eval", "--model", "demo", "--dataset", shapes_, "--split", "all", "--limit", "1", "--db", other,
             "--json"});
    QVERIFY2(r.exitCode == 0, r.err.constData());  // the copy is a good store
    QVERIFY(sqlExec(other, "UPDATE meta SET value = '2' WHERE key = 'version'"));
    const QByteArray before = fileBytes(other);
    r = cli({"eval", "--model", "demo", "--dataset", shapes_, "--split", "all", "--db", other});
    QVERIFY(r.exitCode != 0);
    QVERIFY2(r.err.contains(other.toUtf8()) && r.err.contains("version 2"), r.err.constData());
    QCOMPARE(fileBytes(other), before);

    // Another SQLite file (no evaluation tables) is refused too.
    const QString foreign = dir_ + "/foreign.sqlite";
    QVERIFY(sqlExec(foreign, "CREATE TABLE t(x); INSERT INTO t VALUES(1);"));
    const QByteArray foreignBefore = fileBytes(foreign);
    QVERIFY(!foreignBefore.isEmpty());
    r = cli({"eval", "--model", "demo", "--dataset", shapes_, "--split", "all", "--db", foreign});
    QVERIFY2(r.exitCode != 0 && r.err.contains(foreign.toUtf8()) && r.err.contains("no 'meta' table"), r.err.constData());
    QCOMPARE(fileBytes(foreign), foreignBefore);
  }

  void unreadableImageIsStoredWithItsError() {
    const QString broken = dir_ + "/broken";
    auto r = cli({"dataset", "make-shapes", "--out", broken, "--images", "3", "--seed", "5", "--style", "classic"});
    QVERIFY2(r.exitCode == 0, r.err.constData());
    const QString missing = broken + "/images/shapes_000001.png";
    QVERIFY(QFile::remove(missing));
    r = cli({"eval", "--model", "demo", "--dataset", broken, "--split", "all", "--db", broken + "/e.sqlite", "--json"});
    QCOMPARE(r.exitCode, 1);  // finished, but not every image was captioned
    QVERIFY2(r.err.contains(missing.toUtf8()), r.err.constData());
    const auto out = QJsonDocument::fromJson(r.out.trimmed()).object();
    const auto entry = out["per_image"][1].toObject();
    QVERIFY(entry["error"].toString().contains(missing));
    QCOMPARE(entry["caption"].toString(), QString());
    QCOMPARE(entry["scores"]["CIDEr"].toDouble(), 0.0);  // scored as an empty caption
    const auto stored = load_sample_evaluation((broken + "/e.sqlite").toStdString(), out["evaluation"]["id"].toInt());
    QCOMPARE(QString::fromStdString(stored.per_image[1].error), entry["error"].toString());
  }

  void defaultStoreAndErrors() {
    const std::string store = default_evaluation_db(shapes_.toStdString());
    std::string index = index_cache_path(shapes_.toStdString());
    QVERIFY(index.size() > 7 && index.substr(index.size() - 7) == ".sqlite");
    QCOMPARE(store, index.substr(0, index.size() - 7) + ".evaluations.sqlite");
    QVERIFY(QString::fromStdString(store).startsWith(dir_ + "/cache/"));
    const auto r = cli({"eval", "--model", "demo", "--dataset", shapes_, "--split", "test", "--json"});
    QVERIFY2(r.exitCode == 0, r.err.constData());
    const auto out = QJsonDocument::fromJson(r.out.trimmed()).object();
    QCOMPARE(out["evaluation"]["db"].toString(), QString::fromStdString(store));
    QCOMPARE(out["per_image"].toArray().size(), 1);  // make-shapes puts 1 of 10 in test
    QCOMPARE(list_sample_evaluations(store).size(), size_t(1));

    auto bad = cli({"eval", "--model", "demo", "--dataset", shapes_, "--split", "holdout", "--db", dir_ + "/x.sqlite"});
    QVERIFY2(bad.exitCode != 0 && bad.err.contains("holdout") && bad.err.contains(shapes_.toUtf8()), bad.err.constData());
    bad = cli({"eval", "--checkpoint", dir_ + "/none.pth", "--dataset", shapes_, "--split", "all", "--db",
               dir_ + "/x.sqlite"});
    QVERIFY2(bad.exitCode != 0 && bad.err.contains((dir_ + "/none.pth").toUtf8()), bad.err.constData());
    bad = cli({"eval", "--dataset", shapes_, "--split", "all", "--db", dir_ + "/x.sqlite"});
    QVERIFY2(bad.exitCode != 0 && bad.err.contains("no checkpoint given"), bad.err.constData());
  }
};

QTEST_GUILESS_MAIN(TestSampleEvaluation)
#include "test_sample_evaluation.moc"

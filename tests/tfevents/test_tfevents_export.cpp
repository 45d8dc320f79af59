// expnet runs export RUN --tensorboard DIR: the event file the real CLI writes is
// read back by read_tfevents.py (python3-protobuf parses it, crcmod checks every
// CRC), and every scalar, step and wall time must equal the run store's figures;
// a flipped byte is detected; bad input fails with a clear error.
#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <map>

#include "expnet/train/run_store.h"
#include "support/fixtures.h"

using namespace expnet;
using nlohmann::json;

namespace {

const QString kReader = QStringLiteral(EXPNET_TFEVENTS_TEST_DIR "/read_tfevents.py");
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// A run with a skipped step whose loss is NaN, an SCST stage's negative loss, and
// three validations; another run in the same store must not leak into the export.
struct StoreWithRun {
  QString folder, store_path;
  RunInfo run;
  std::vector<StepRecord> steps;
  std::vector<ValidationRecord> validations;
};

StoreWithRun make_store(const QString& name) {
  StoreWithRun s;
  s.folder = expnet_test::makeTempDir(name);
  s.store_path = s.folder + "/runs.sqlite";
  RunStore store(s.store_path.toStdString());
  const int64_t id = store.create_run("demo run/1", "{}", "/tmp/demo");
  const int64_t other = store.create_run("other", "{}", "/tmp/other");
  s.steps = {{id, 0, 0, 1, 4.5, 1e-4, 2.0, 30.0, false, 0.75},
             {id, 0, 0, 2, 4.0, 2e-4, 1.5, 31.25, false, 1.5},
             {id, 0, 0, 3, kNaN, 3e-4, kInf, 29.0, true, 2.25},
             {id, 0, 1, 4, 3.3333333333333335, 4e-4, 1.1, 32.1, false, 3.0},
             {id, 1, 0, 5, -0.123456789, 5e-5, 0.9, 33.3, false, 3.75}};
  store.log_steps(s.steps);
  store.log_step({other, 0, 0, 1, 9.0, 1.0, 1.0, 1.0, false, 1.0});
  s.validations = {{id, 0, 0, 2, 0.5, 0.4, 0.3, 0.2, 0.45, 0.3456789},
                   {id, 0, 1, 4, 0.6, 0.5, 0.4, 0.234567, 0.5, 1.2345678},
                   {id, 1, 0, 5, 0.7, 0.6, 0.5, 0.31, 0.55, 1.3}};
  for (const auto& v : s.validations) store.log_validation(v);
  store.log_validation({other, 0, 0, 1, 0, 0, 0, 0.9, 0, 9.0});
  s.run = store.find_run("demo run/1");
  return s;
}

expnet_test::ProcessResult cli(const QStringList& args) { return expnet_test::runProcess(expnet_test::cliPath(), args); }

QString describe(const expnet_test::ProcessResult& r) {
  return QStringLiteral("exit %1\nstdout: %2\nstderr: %3").arg(r.exitCode).arg(QString(r.out), QString(r.err));
}

QStringList event_files(const QString& dir) {
  return QDir(dir).entryList({QStringLiteral("events.out.tfevents.*")}, QDir::Files, QDir::Name);
}

}  // namespace

class TestTfeventsExport : public QObject {
  Q_OBJECT

 private slots:
  void everyScalarReadsBackExactly() {
    const auto s = make_store("tfevents_export");
    const QString dir = s.folder + "/tb/not/yet/there";
    const auto exported = cli({"runs", "export", "demo run/1", "--store", s.store_path, "--tensorboard", dir});
    QVERIFY2(exported.exitCode == 0, qPrintable(describe(exported)));

    const QStringList files = event_files(dir);
    QCOMPARE(files.size(), 1);
    const QString path = dir + "/" + files[0];
    const qint64 created = QDateTime::fromString(QString::fromStdString(s.run.created_at), Qt::ISODate).toSecsSinceEpoch();
    QVERIFY2(created > 0, s.run.created_at.c_str());
    QVERIFY2(files[0].startsWith(QStringLiteral("events.out.tfevents.%1.").arg(created)), qPrintable(files[0]));
    QVERIFY2(files[0].endsWith(QStringLiteral(".demo_run_1")), qPrintable(files[0]));
    QVERIFY2(exported.out.contains(path.toUtf8()), exported.out.constData());
    QVERIFY2(exported.out.contains(" 20 scalars "), exported.out.constData());

    const auto read = expnet_test::runProcess(expnet_test::torchPython(), {kReader, path});
    QVERIFY2(read.exitCode == 0, qPrintable(describe(read)));
    const json events = json::parse(read.out.toStdString());
    QCOMPARE(events["records"].get<int>(), 1 + 5 + 3);  // file_version, steps, validations
    QCOMPARE(events["file_version"].get<std::string>(), std::string("brain.Event:2"));
    QCOMPARE(events["file_version_wall_time"].get<double>(), double(created));

    // Expected: the logged figures as float32; wall time = created_at + the store's wall_s
    // (0, i.e. unknown, where the store does not keep it).
    RunStore store(s.store_path.toStdString());
    std::map<int64_t, double> stored_wall_s;
    for (const auto& step : store.steps(s.run.id)) stored_wall_s[step.step] = step.wall_s;
    QCOMPARE(stored_wall_s.size(), s.steps.size());
    std::map<std::pair<std::string, int64_t>, std::pair<double, double>> expected;  // (tag, step) -> value, wall time
    auto expect = [&](const char* tag, int64_t step, double value) {
      expected[{tag, step}] = {double(float(value)), double(created) + stored_wall_s.at(step)};
    };
    for (const auto& step : s.steps) {
      if (std::isfinite(step.loss)) expect("train/loss", step.step, step.loss);
      expect("train/lr", step.step, step.lr);
      expect("train/images_per_s", step.step, step.images_per_s);
    }
    for (const auto& v : s.validations) {
      expect("val/CIDEr", v.step, v.cider_d);
      expect("val/Bleu_4", v.step, v.bleu4);
    }
    QCOMPARE(expected.size(), size_t(20));
    QCOMPARE(events["scalars"].size(), expected.size());
    std::map<std::string, int64_t> last_step;
    for (const auto& scalar : events["scalars"]) {
      const std::string tag = scalar["tag"];
      const int64_t step = scalar["step"];
      const auto found = expected.find({tag, step});
      QVERIFY2(found != expected.end(), qPrintable(QString::fromStdString("unexpected scalar " + scalar.dump())));
      QCOMPARE(scalar["value"].get<double>(), found->second.first);
      QCOMPARE(scalar["wall_time"].get<double>(), found->second.second);
      expected.erase(found);
      // TensorBoard drops a tag's points that a later, lower step appears to restart.
      QVERIFY2(step > last_step[tag], qPrintable(QString::fromStdString("steps go back at " + scalar.dump())));
      last_step[tag] = step;
    }
    QVERIFY(expected.empty());

    // Exporting again replaces the file rather than adding a second copy of the curves.
    const auto again = cli({"runs", "export", "demo run/1", "--store", s.store_path, "--tensorboard", dir});
    QVERIFY2(again.exitCode == 0, qPrintable(describe(again)));
    QCOMPARE(event_files(dir), files);
  }

  void flippedByteIsDetected() {
    const auto s = make_store("tfevents_corrupt");
    const QString dir = s.folder + "/tb";
    const auto exported = cli({"runs", "export", "demo run/1", "--store", s.store_path, "--tensorboard", dir});
    QVERIFY2(exported.exitCode == 0, qPrintable(describe(exported)));
    const QString path = dir + "/" + event_files(dir).value(0);
    QFile file(path);
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QByteArray good = file.readAll();
    QVERIFY(good.size() > 16);

    // Byte 0 is in the first record's length, size - 5 in the last record's data.
    for (const auto& [offset, reason] : {std::pair<qsizetype, const char*>{0, "length CRC mismatch"},
                                         std::pair<qsizetype, const char*>{good.size() - 5, "data CRC mismatch"}}) {
      QByteArray bad = good;
      bad[offset] = char(bad[offset] ^ 0x01);
      const QString copy = s.folder + QStringLiteral("/corrupt_%1").arg(offset);
      QFile out(copy);
      QVERIFY(out.open(QIODevice::WriteOnly));
      out.write(bad);
      out.close();
      const auto read = expnet_test::runProcess(expnet_test::torchPython(), {kReader, copy});
      QVERIFY2(read.exitCode != 0, qPrintable(describe(read)));
      QVERIFY2(read.err.contains(reason), qPrintable(describe(read)));
    }
  }

  void badInputFailsClearly() {
    const auto s = make_store("tfevents_bad_input");
    const QString dir = s.folder + "/tb";

    const auto unknown = cli({"runs", "export", "nope", "--store", s.store_path, "--tensorboard", dir});
    QVERIFY2(unknown.exitCode != 0, qPrintable(describe(unknown)));
    QVERIFY2(unknown.err.contains("no run named 'nope'"), qPrintable(describe(unknown)));

    const auto both = cli({"runs", "export", "demo run/1", "--store", s.store_path, "--csv", "--tensorboard", dir});
    QVERIFY2(both.exitCode != 0, qPrintable(describe(both)));
    QVERIFY2(both.err.contains("--csv and --tensorboard both given") && both.err.contains("pass exactly one"),
             qPrintable(describe(both)));
    QVERIFY2(both.out.isEmpty(), qPrintable(describe(both)));

    const auto neither = cli({"runs", "export", "demo run/1", "--store", s.store_path});
    QVERIFY2(neither.exitCode != 0, qPrintable(describe(neither)));
    QVERIFY2(neither.err.contains("no format given") && neither.err.contains("--tensorboard DIR"),
             qPrintable(describe(neither)));
    QVERIFY(!QFileInfo::exists(dir));

    // A folder cannot be made under a regular file.
    const QString regular = s.folder + "/a_file";
    QFile file(regular);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.close();
    const QString under_file = regular + "/tb";
    const auto unwritable = cli({"runs", "export", "demo run/1", "--store", s.store_path, "--tensorboard", under_file});
    QVERIFY2(unwritable.exitCode != 0, qPrintable(describe(unwritable)));
    QVERIFY2(unwritable.err.contains(("cannot create the TensorBoard folder '" + under_file + "'").toUtf8()),
             qPrintable(describe(unwritable)));

    // --csv keeps working as before.
    const auto csv = cli({"runs", "export", "demo run/1", "--store", s.store_path, "--csv"});
    QVERIFY2(csv.exitCode == 0, qPrintable(describe(csv)));
    QVERIFY2(csv.out.startsWith("kind,stage,epoch,step,"), qPrintable(describe(csv)));
    QCOMPARE(csv.out.count('\n'), qsizetype(1 + 5 + 3));
  }
};

QTEST_GUILESS_MAIN(TestTfeventsExport)
#include "test_tfevents_export.moc"

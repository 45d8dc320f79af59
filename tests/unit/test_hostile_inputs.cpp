// Hostile inputs to the CLI, as a user (or a script) gives them (issue 45): every
// file option handed a FIFO, a device or a folder is refused at once, naming the
// file; option values past their documented bounds (a beam larger than the
// vocabulary, a temperature that overflows, thousands of threads or loader
// workers, validation sizes) are one-line errors before any work; never a hang,
// an abort or a stack trace. Each within 5 s and 500 MB.
#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include <sys/stat.h>

#include "expnet/train/run_registry.h"
#include "expnet/train/run_store.h"
#include "support/fixtures.h"

using expnet_test::runProcess;

namespace {

const QString kImage = QStringLiteral(EXPNET_TEST_DATA_DIR "/image/cmyk_32x8.jpg");

struct Refusal {
  QStringList args;
  QString expected;  // in stderr
};

// A Python parent reports the CLI's peak resident memory (wait4's rusage) on
// its last stderr line; the CLI's own status and output pass through.
const char* kPeakReporter =
    "import os, subprocess, sys\n"
    "child = subprocess.Popen(sys.argv[1:])\n"
    "_, status, usage = os.wait4(child.pid, 0)\n"
    "sys.stderr.write('\\nEXPNET_PEAK_KB %d\\n' % usage.ru_maxrss)\n"
    "sys.exit(os.waitstatus_to_exitcode(status) & 0xff)\n";

// Runs each case; it must end within 5 s and 500 MB with a non-zero status, the
// expected words and no sign of a crash.
void expectRefused(const QVector<Refusal>& cases) {
  for (const auto& c : cases) {
    QElapsedTimer clock;
    clock.start();
    const auto r = runProcess("/usr/bin/python3", QStringList{"-c", kPeakReporter, expnet_test::cliPath()} + c.args, 20000);
    const QString where = c.args.join(' ');
    QVERIFY2(r.finished, qPrintable(where + ": did not end within 20 s"));
    QVERIFY2(clock.elapsed() < 5000, qPrintable(where + QString(": took %1 ms").arg(clock.elapsed())));
    QVERIFY2(r.exitCode != 0, qPrintable(where + ": exit status 0"));
    const int peak = r.err.indexOf("EXPNET_PEAK_KB ");
    QVERIFY2(peak >= 0, qPrintable(where + ": no peak reported"));
    const long peakMb = r.err.mid(peak + 15).trimmed().toLong() / 1024;
    QVERIFY2(peakMb > 0 && peakMb < 500, qPrintable(where + QString(": %1 MB at the peak").arg(peakMb)));
    const QString err = QString::fromUtf8(r.err.left(peak));
    QVERIFY2(err.contains(c.expected), qPrintable(where + ": " + err));
    for (const char* crash : {"terminate called", "frame #", "Exception raised from", "179769"})
      QVERIFY2(!err.contains(QLatin1String(crash)), qPrintable(where + ": " + err));
  }
}

}  // namespace

class TestHostileInputs : public QObject {
  Q_OBJECT
 private slots:
  void fifosDevicesAndFoldersAreRefusedAtOnce() {
    const QString dir = expnet_test::makeTempDir("hostile_fifo");
    const QString fifo = dir + "/pipe";
    QCOMPARE(::mkfifo(fifo.toLocal8Bit().constData(), 0600), 0);
    const QString folder = dir + "/folder.json";
    QVERIFY(QDir().mkpath(folder));
    QVector<Refusal> cases{
        {{"train", "--config", fifo, "--out", dir + "/run"}, "FIFO"},
        {{"train", "--config", folder, "--out", dir + "/run"}, "folder"},
        {{"checkpoint", "inspect", fifo}, "FIFO"},
        {{"caption", "--checkpoint", fifo, kImage}, "FIFO"},
        {{"caption", "--model", "demo", "--vocab", fifo, kImage}, "FIFO"},
        {{"dataset", "stats", "--dataset", fifo, "--format", "csv"}, "FIFO"},
        {{"dataset", "stats", "--dataset", fifo, "--format", "jsonl"}, "FIFO"},
        {{"dataset", "stats", "--dataset", "/dev/zero", "--format", "jsonl"}, "device"},
        {{"dataset", "index", "--dataset", fifo, "--db", dir + "/index.sqlite"}, "FIFO"},
        {{"score", "--references", fifo, "--candidates", fifo}, "FIFO"},
        {{"features", "info", fifo}, "FIFO"},
    };
    expectRefused(cases);
    QVERIFY(!QFileInfo::exists(dir + "/run"));
    QVERIFY(!QFileInfo::exists(dir + "/index.sqlite"));
  }

  void decodingOptionsPastTheirBoundsAreOneLineErrors() {
    expectRefused({
        {{"caption", "--model", "demo", "--beam", "89", kImage}, "larger than the vocabulary"},
        {{"caption", "--model", "demo", "--beam", "0", kImage}, "--beam"},
        {{"caption", "--model", "demo", "--beam", "1000000000", kImage}, "--beam"},
        {{"caption", "--model", "demo", "--search", "sample", "--temperature", "1e-45", kImage},
         "sampling temperature must be 0.001 to 1000"},
        {{"caption", "--model", "demo", "--threads", "100000", kImage}, "--threads"},
    });
  }

  // Damaged files that used to load, or fail with a library's raw text: a
  // checkpoint whose weights hold a NaN (written by PyTorch itself), one whose
  // archive version record is not a number, one with a byte flipped inside a
  // tensor record (its CRC no longer matches), a vocabulary with a number
  // among its words, configurations edited to ask for a model far larger than
  // the weights (refused before the model is built).
  void damagedModelFilesAreOneLineErrors() {
    const QString dir = expnet_test::makeTempDir("hostile_files");
    const QString demo = QStringLiteral(EXPNET_SOURCE_DIR "/resources/demo/demo_model.pth");
    const QString script = QStringLiteral(R"(
import sys, json, zipfile, torch
src, nan_out, version_out, crc_out, wide_out, image_out = sys.argv[1:7]
d = torch.load(src, map_location="cpu")
for out, edit in ((wide_out, dict(d_model=2048, ff=8192)), (image_out, dict(swin_img_size=3072, swin_window_size=6))):
    config = json.loads(d["expnet_config"])
    config.update(edit)
    torch.save(dict(d, expnet_config=json.dumps(config)), out)
sd = next(v for v in d.values() if isinstance(v, dict) and v and all(torch.is_tensor(t) for t in v.values()))
name = next(k for k, t in sd.items() if t.is_floating_point() and t.numel() > 1)
sd[name].view(-1)[1] = float("nan")
torch.save(d, nan_out)
with zipfile.ZipFile(src) as zin, zipfile.ZipFile(version_out, "w", zipfile.ZIP_STORED) as zout:
    for item in zin.infolist():
        data = zin.read(item.filename)
        if item.filename.endswith("/version"):
            data = b"99999999999999999999999\n"
        zout.writestr(item, data)
with zipfile.ZipFile(src) as z:
    record = next(i for i in z.infolist() if "/data/" in i.filename and i.file_size > 64)
raw = bytearray(open(src, "rb").read())
start = record.header_offset + 30 + int.from_bytes(raw[record.header_offset + 26:record.header_offset + 28], "little") \
    + int.from_bytes(raw[record.header_offset + 28:record.header_offset + 30], "little")
raw[start + record.file_size // 2] ^= 0x40
open(crc_out, "wb").write(raw)
print(name)
)");
    const QString nan = dir + "/nan.pth", version = dir + "/version.pth", flipped = dir + "/flipped.pth";
    const QString wide = dir + "/wide.pth", image = dir + "/image.pth";  // configs edited to ask for far more
    const auto made = runProcess(expnet_test::torchPython(), {"-c", script, demo, nan, version, flipped, wide, image});
    QVERIFY2(made.exitCode == 0, made.err.constData());
    const QString tensor = QString::fromUtf8(made.out).trimmed();
    const QString vocab = dir + "/vocab.json";
    QFile file(vocab);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(R"({"format": "expnet-vocabulary", "version": 1, "words": ["PAD", "SOS", "EOS", "UNK", "red", 5]})");
    file.close();
    expectRefused({
        {{"caption", "--checkpoint", nan, kImage}, "NaN or infinite values (" + tensor},
        {{"checkpoint", "inspect", version}, "archive version record is not a version number"},
        {{"caption", "--checkpoint", flipped, kImage}, "is damaged (its CRC-32 is"},
        {{"caption", "--model", "demo", "--vocab", vocab, kImage}, "word 5 is number 5, not a string"},
        {{"caption", "--checkpoint", wide, kImage}, "describes a model of at least"},
        {{"caption", "--checkpoint", image, kImage}, "describes a model of at least"},
    });
  }

  // Every value of a training config is checked when it is read, before data,
  // model or run folder: not after the first epoch.
  void trainingConfigValuesAreCheckedBeforeAnyWork() {
    const QString dir = expnet_test::makeTempDir("hostile_train");
    const auto recipe = [&](const QString& name, const char* key, double value) {
      QJsonObject config{{"name", name}, {"model", "tiny"}, {"dataset", "shapes"}, {key, value},
                         {"stages", QJsonArray{QJsonObject{{"name", "xe"}, {"objective", "xe"}, {"batch", 2}}}}};
      const QString path = dir + "/" + name + ".json";
      QFile file(path);
      if (file.open(QIODevice::WriteOnly)) file.write(QJsonDocument(config).toJson());
      return path;
    };
    expectRefused({
        {{"train", "--config", recipe("workers", "workers", 1000), "--out", dir + "/w"}, "workers must be 0 to 64"},
        {{"train", "--config", recipe("beam", "validation_beam", 1000000), "--out", dir + "/b"},
         "validation_beam must be 1 to 256"},
        {{"train", "--config", recipe("len", "validation_max_len", 1000000), "--out", dir + "/l"},
         "validation_max_len must be 1 to 1024"},
    });
    for (const char* out : {"/w", "/b", "/l"}) QVERIFY(!QFileInfo::exists(dir + out));
  }

  // Datasets: an id twice (refused by every reader alike, as the index and the
  // evaluation did), a caption of 20 KB in CSV and JSONL (past the 16 KiB
  // limit); a folder's link into /proc named as itself, never as its target.
  void datasetsAndFoldersSayWhichEntry() {
    const QString dir = expnet_test::makeTempDir("hostile_data");
    const auto write = [&](const QString& name, const QByteArray& text) {
      QFile file(dir + "/" + name);
      if (file.open(QIODevice::WriteOnly)) file.write(text);
      return dir + "/" + name;
    };
    QDir().mkpath(dir + "/twice");
    write("twice/dataset_coco.json",
          R"({"images": [{"filename": "a.jpg", "split": "train", "cocoid": 5, "sentences": [{"raw": "a dog"}]},
                         {"filename": "b.jpg", "split": "train", "cocoid": 5, "sentences": [{"raw": "a cat"}]}]})");
    const QByteArray longCaption(20000, 'a');
    const QString csv = write("long.csv", "image,caption\nx.jpg," + longCaption + "\n");
    const QString jsonl = write("long.jsonl", "{\"image\": \"x.jpg\", \"caption\": \"" + longCaption + "\"}\n");
    for (const char* command : {"stats", "vocab"}) {
      QStringList args{"dataset", command, "--dataset", dir + "/twice/dataset_coco.json"};
      if (QByteArray(command) == "vocab") args << "--out" << dir + "/vocab.json";
      expectRefused({{args, "image id 5 (b.jpg) appears twice"}});
    }
    expectRefused({
        {{"dataset", "index", "--dataset", dir + "/twice/dataset_coco.json", "--db", dir + "/i.sqlite"}, "appears twice"},
        {{"dataset", "stats", "--dataset", csv}, "a caption of 20000 bytes, more than the 16384"},
        {{"dataset", "stats", "--dataset", jsonl}, "a caption of 20000 bytes, more than the 16384"},
    });

    QDir().mkpath(dir + "/folder");
    QVERIFY(QFile::link("/proc/self/mem", dir + "/folder/memory.png"));
    const auto r = runProcess(expnet_test::cliPath(), {"caption", "--model", "demo", dir + "/folder"}, 20000);
    QVERIFY(r.finished);
    QVERIFY2(r.err.contains("folder/memory.png") && !r.err.contains("/proc/self"), r.err.constData());
  }

  // Row files (CSV, JSONL) of 20 MB of COCO-like captions: read row by row into
  // the dataset (never all rows at once) within 500 MB, the process's peak
  // (wait4's rusage of the child, libraries included) measured by a Python parent.
  void rowDatasetsStayWithinMemory() {
    const QString dir = expnet_test::makeTempDir("hostile_rows");
    const QString script = QStringLiteral(
        "import os, random, subprocess, sys\n"
        "cli, folder = sys.argv[1:3]\n"
        "random.seed(1)\n"
        "words = 'a red blue green circle square triangle is to the left of right above below'.split()\n"
        "for ext in ('csv', 'jsonl'):\n"
        "    with open(folder + '/rows.' + ext, 'w') as f:\n"
        "        if ext == 'csv': f.write('image,caption\\n')\n"
        "        i = 0\n"
        "        while f.tell() < 20000000:\n"
        "            caption = ' '.join(random.choice(words) for _ in range(random.randint(3, 12)))\n"
        "            image = 'img%d.jpg' % (i // 5)\n"
        "            f.write('%s,%s\\n' % (image, caption) if ext == 'csv' else '{\"image\": \"%s\", \"caption\": \"%s\"}\\n' % (image, caption))\n"
        "            i += 1\n"
        "    child = subprocess.Popen([cli, 'dataset', 'stats', '--dataset', folder + '/rows.' + ext],\n"
        "                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)\n"
        "    error = child.stderr.read()\n"
        "    _, status, usage = os.wait4(child.pid, 0)\n"
        "    if os.waitstatus_to_exitcode(status) != 0: sys.exit(error.decode())\n"
        "    print(ext, usage.ru_maxrss // 1024)\n");
    const auto r = runProcess("/usr/bin/python3", {"-c", script, expnet_test::cliPath(), dir}, 120000);
    QVERIFY2(r.finished && r.exitCode == 0, r.err.constData());
    for (const QString& line : QString::fromUtf8(r.out).split('\n', Qt::SkipEmptyParts)) {
      const QStringList parts = line.split(' ');
      QVERIFY2(parts.size() == 2 && parts[1].toInt() > 0 && parts[1].toInt() < 500, qPrintable(line + " MB"));
      qInfo("%s", qPrintable(parts[0] + ": " + parts[1] + " MB at the peak for 20 MB of rows"));
    }
    QCOMPARE(QString::fromUtf8(r.out).count('\n'), 2);
  }

  // Names: a file name past the 255 bytes a file system allows; one just short
  // of it (its temporary file's suffix must still fit); a store path past
  // SQLite's 512 bytes; a run name with a newline and an escape in `runs list`,
  // and a registered store that lost its tables, which must not hide the others.
  void namesAndListingsStayReadable() {
    const QString dir = expnet_test::makeTempDir("hostile_names");
    qputenv("EXPNET_HOME", (dir + "/home").toUtf8());
    const auto shapes = runProcess(expnet_test::cliPath(), {"dataset", "make-shapes", "--out", dir + "/shapes",
                                                             "--images", "4"});
    QVERIFY2(shapes.exitCode == 0, shapes.err.constData());
    const QString longName = dir + "/" + QString(244, 'v') + ".json";
    const auto vocab = runProcess(expnet_test::cliPath(), {"dataset", "vocab", "--dataset", dir + "/shapes",
                                                            "--min-count", "1", "--out", longName});
    QVERIFY2(vocab.exitCode == 0 && QFileInfo::exists(longName), vocab.err.constData());
    const QString deep = dir + "/" + QString(200, 'd') + "/" + QString(200, 'e') + "/" + QString(200, 'f');
    const QString recipe = dir + "/recipe.json";
    QFile file(recipe);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(R"({"name": "r", "model": "tiny", "dataset": "shapes", "shapes_images": 8,
                   "stages": [{"name": "xe", "objective": "xe", "batch": 2, "epochs": 1}]})");
    file.close();
    expectRefused({
        {{"train", "--config", recipe, "--out", dir + "/" + QString(300, 'n')}, "more than the 255 a file system allows"},
        {{"dataset", "vocab", "--dataset", dir + "/shapes", "--out", dir + "/" + QString(300, 'x') + ".json"},
         "more than the 255 a file system allows"},
        {{"train", "--config", recipe, "--out", deep}, "SQLite opens paths of fewer than 512"},
    });

    const std::string good = (dir + "/good/runs.sqlite").toStdString(), broken = (dir + "/broken/runs.sqlite").toStdString();
    QDir().mkpath(dir + "/good");
    QDir().mkpath(dir + "/broken");
    {
      expnet::RunStore store(good);
      store.set_status(store.create_run("evil\nforged 1 finished", "{}", "/tmp/x"), "finished");
      store.create_run("plain\x1b[2J", "{}", "/tmp/y");
      expnet::RunStore(broken).create_run("gone", "{}", "/tmp/z");
    }
    const auto drop = runProcess("/usr/bin/sqlite3", {QString::fromStdString(broken), "DROP TABLE steps;"});
    if (drop.exitCode != 0) {  // without the sqlite3 shell: the same through Python
      const auto py = runProcess("/usr/bin/python3", {"-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); "
                                                             "c.execute('DROP TABLE steps'); c.commit()",
                                                       QString::fromStdString(broken)});
      QVERIFY2(py.exitCode == 0, py.err.constData());
    }
    expnet::register_run_store(broken);
    expnet::register_run_store(good);
    const auto list = runProcess(expnet_test::cliPath(), {"runs", "list"});
    QVERIFY2(list.exitCode == 0, list.err.constData());
    QVERIFY2(list.err.contains("tables steps are missing"), list.err.constData());
    QVERIFY2(list.out.contains("evil\\x0aforged"), list.out.constData());  // escaped, on its own row
    QVERIFY2(!list.out.contains("\nforged") && !list.out.contains("\x1b"), list.out.constData());
    QVERIFY2(list.out.contains("plain\\x1b[2J"), list.out.constData());
  }
};

QTEST_MAIN(TestHostileInputs)
#include "test_hostile_inputs.moc"

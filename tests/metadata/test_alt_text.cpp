// Alt text in the photos' own metadata (docs/metadata.md), read back by ExifTool
// as the independent reader: `expnet caption --write-alt-text` on JPEG, PNG,
// WebP and TIFF files made here (pixels by OpenCV) carrying a camera-like EXIF
// block, GPS, IPTC-IIM (JPEG, TIFF) and a person's description (added with
// ExifTool). Pixels and every other tag stay as they were; our fields are read
// back as IPTC alt text; a person's description and alt text are kept unless
// --overwrite; a second run skips; --sidecar and --dry-run leave the images'
// bytes alone; a read-only image, a format exiv2 cannot write and XMP of the older
// form that exiv2 would rewrite get a sidecar;
// a 200-file run SIGKILLed 10 times leaves every file whole, and a rerun ends it;
// hostile files (100 MB XMP, an inflating XMP, corrupt XMP, 1,000 APP1 segments,
// looping IFDs) each get a clear error within 5 s and 500 MB while the batch goes
// on; a full disk (a small tmpfs, as root) is reported and leaves the image whole;
// a folder of captioned photos opens as a dataset (format photos) and is evaluated on.
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRandomGenerator>
#include <QtTest>

#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>

#include <opencv2/imgcodecs.hpp>

#include "support/fixtures.h"

namespace {

const QStringList kImages = {"camera.jpg", "plain.png", "web.webp", "scan.tif"};

QByteArray bytesOf(const QString& path) {
  QFile f(path);
  f.open(QIODevice::ReadOnly);
  return f.readAll();
}

// Every tag ExifTool reads, "Group:Tag" -> value (binary values by their description).
QJsonObject tagsOf(const QString& path) {
  const auto run = expnet_test::runProcess("exiftool", {"-j", "-a", "-G1", "-s", path});
  return QJsonDocument::fromJson(run.out).array().at(0).toObject();
}

bool samePixels(const QString& a, const QString& b) {
  const cv::Mat x = cv::imread(a.toStdString(), cv::IMREAD_UNCHANGED), y = cv::imread(b.toStdString(), cv::IMREAD_UNCHANGED);
  return !x.empty() && x.size == y.size && x.type() == y.type() && cv::norm(x, y, cv::NORM_INF) == 0;
}

// Tags that may change: ours, the description where it was empty, the XMP toolkit's
// name, the file's own properties, and the TIFF layout's offsets and byte counts.
bool mayChange(const QString& key) {
  static const QStringList prefixes = {"XMP-expnet:", "XMP-iptcCore:AltTextAccessibility", "XMP-x:XMPToolkit", "System:",
                                       "File:", "ExifTool:", "SourceFile"};
  for (const QString& p : prefixes)
    if (key.startsWith(p)) return true;
  return key.endsWith("Offsets") || key.endsWith("ByteCounts") || key.endsWith("Offset") || key.endsWith(":XMP");
}

// A run of `program` with its wall time and peak memory (wait4's own figure for that child).
struct MeasuredRun {
  int exitCode = -1;
  double seconds = 0;
  long peakMegabytes = 0;
  QByteArray err;
};

MeasuredRun runMeasured(const QString& program, const QStringList& args, const QString& errFile) {
  std::vector<std::string> words{program.toStdString()};
  for (const QString& a : args) words.push_back(a.toStdString());
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, errFile.toLocal8Bit().constData(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  MeasuredRun run;
  const auto start = std::chrono::steady_clock::now();
  pid_t pid = 0;
  if (posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ) == 0) {
    int status = 0;
    struct rusage usage {};
    if (::wait4(pid, &status, 0, &usage) == pid && WIFEXITED(status)) run.exitCode = WEXITSTATUS(status);
    run.peakMegabytes = usage.ru_maxrss / 1024;
  }
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  posix_spawn_file_actions_destroy(&actions);
  run.err = bytesOf(errFile);
  return run;
}

}  // namespace

class TestAltText : public QObject {
  Q_OBJECT
  QString dir_;

  expnet_test::ProcessResult caption(const QStringList& extra, const QStringList& paths) {
    return expnet_test::runProcess(expnet_test::cliPath(), QStringList{"caption", "--model", "demo", "--write-alt-text"} + extra + paths);
  }

  // Images with metadata as a camera and a person leave it.
  void makeImages(const QString& folder) {
    QDir().mkpath(folder);
    const auto drawn = expnet_test::runProcess(
        "/usr/bin/python3", {"-c", "import cv2, numpy as np, sys\n"
                                   "img = np.zeros((72, 96, 3), np.uint8); cv2.circle(img, (40, 34), 16, (0, 0, 255), -1)\n"
                                   "for name in sys.argv[2:]: cv2.imwrite(sys.argv[1] + '/' + name, img)",
                             folder, "camera.jpg", "plain.png", "web.webp", "scan.tif", "old.bmp"});
    QVERIFY2(drawn.exitCode == 0, drawn.err.constData());
    const auto tagged = expnet_test::runProcess(
        "exiftool", {"-q", "-overwrite_original", "-Make=Canon", "-Model=EOS 5D", "-DateTimeOriginal=2024:05:01 10:00:00",
                     "-GPSLatitude=45.5", "-GPSLatitudeRef=N", "-GPSLongitude=9.2", "-GPSLongitudeRef=E",
                     "-XMP-dc:Description=A person's own words", "-IPTC:Caption-Abstract=IPTC caption",
                     folder + "/camera.jpg", folder + "/scan.tif"});
    QVERIFY2(tagged.exitCode == 0, tagged.err.constData());
  }

 private slots:
  void initTestCase() {
    if (expnet_test::runProcess("exiftool", {"-ver"}).exitCode != 0) {
      if (qEnvironmentVariableIsSet("EXPNET_REQUIRE_FIXTURES")) QFAIL("exiftool (libimage-exiftool-perl) is missing");
      QSKIP("EXPNET_FIXTURE_MISSING: exiftool (libimage-exiftool-perl) is missing");
    }
    dir_ = expnet_test::makeTempDir("alt_text");
  }

  void everyFormatGetsAltTextAndKeepsTheRest() {
    const QString folder = dir_ + "/library", copy = dir_ + "/before";
    makeImages(folder);
    QVERIFY(expnet_test::runProcess("cp", {"-a", folder, copy}).exitCode == 0);
    const auto first = caption({}, {folder});
    QVERIFY2(first.exitCode == 0, first.err.constData());
    QVERIFY2(first.err.contains("alt text: 4 written into images, 1 into sidecars, 0 skipped, 0 failed"), first.err.constData());
    QVERIFY2(first.err.contains("exiv2 cannot write XMP into this format"), first.err.constData());  // the BMP
    const QString text = QString::fromUtf8(first.out.split('\n').first().split('\t').value(1));
    QVERIFY(!text.isEmpty());
    for (const QString& name : kImages) {
      const QString path = folder + "/" + name, old = copy + "/" + name;
      QVERIFY2(samePixels(path, old), qPrintable(name + ": the pixels changed"));
      const QJsonObject after = tagsOf(path), before = tagsOf(old);
      QCOMPARE(after["XMP-iptcCore:AltTextAccessibility"].toString(), text);
      QCOMPARE(after["XMP-expnet:Model"].toString(), QStringLiteral("demo"));
      QCOMPARE(after["XMP-expnet:ModelSHA256"].toString().size(), 64);
      // A person's description is kept; an empty one gets the caption.
      const QString description = before["XMP-dc:Description"].toString();
      QCOMPARE(after["XMP-dc:Description"].toString(), description.isEmpty() ? text : description);
      for (auto it = before.begin(); it != before.end(); ++it)
        if (!mayChange(it.key()) && it.key() != "XMP-dc:Description")
          QVERIFY2(after.value(it.key()) == it.value(),
                   qPrintable(name + ": " + it.key() + " was " + it.value().toVariant().toString() + ", now " +
                              after.value(it.key()).toVariant().toString()));
    }
    QCOMPARE(tagsOf(folder + "/camera.jpg")["GPS:GPSLatitude"], tagsOf(copy + "/camera.jpg")["GPS:GPSLatitude"]);
    QVERIFY(!tagsOf(folder + "/camera.jpg")["GPS:GPSLatitude"].toString().isEmpty());
    // The BMP: untouched, its sidecar read by ExifTool.
    QCOMPARE(bytesOf(folder + "/old.bmp"), bytesOf(copy + "/old.bmp"));
    QCOMPARE(tagsOf(folder + "/old.bmp.xmp")["XMP-iptcCore:AltTextAccessibility"].toString(), text);
    // Nothing left beside them.
    QCOMPARE(QDir(folder).entryList(QDir::Files | QDir::Hidden).size(), 6);

    // Again: every file already has it.
    const auto second = caption({}, {folder});
    QVERIFY2(second.err.contains("0 written into images, 0 into sidecars, 5 skipped, 0 failed"), second.err.constData());
  }

  void aPersonsAltTextIsKeptUnlessOverwritten() {
    const QString folder = dir_ + "/person";
    makeImages(folder);
    const QString photo = folder + "/camera.jpg";
    QVERIFY(expnet_test::runProcess("exiftool", {"-q", "-overwrite_original", "-XMP-iptcCore:AltTextAccessibility=Written by hand", photo})
                .exitCode == 0);
    const auto kept = caption({}, {photo});
    QVERIFY2(kept.err.contains("has alt text a person wrote"), kept.err.constData());
    QCOMPARE(tagsOf(photo)["XMP-iptcCore:AltTextAccessibility"].toString(), QStringLiteral("Written by hand"));
    const auto replaced = caption({"--overwrite"}, {photo});
    QVERIFY2(replaced.exitCode == 0 && replaced.err.contains("1 written into images"), replaced.err.constData());
    QVERIFY(tagsOf(photo)["XMP-iptcCore:AltTextAccessibility"].toString() != "Written by hand");
    QCOMPARE(tagsOf(photo)["XMP-dc:Description"].toString(), QStringLiteral("A person's own words"));
  }

  // SIGKILL at random moments of a 200-file run, 10 times: every file is either
  // untouched or completely written (byte-equal to an uninterrupted run's, with
  // SOURCE_DATE_EPOCH fixing the date), and a rerun finishes the rest.
  void killedRunsLeaveEveryFileWhole() {
    const QString originals = dir_ + "/kill_originals", reference = dir_ + "/kill_reference", work = dir_ + "/kill_work";
    QDir().mkpath(originals);
    const auto drawn = expnet_test::runProcess(
        "/usr/bin/python3", {"-c", "import cv2, numpy as np, sys\n"
                                   "for i in range(200):\n"
                                   "  img = np.full((48, 64, 3), 90 + i % 100, np.uint8); cv2.circle(img, (20 + i % 30, 24), 10, (0, 0, 255), -1)\n"
                                   "  cv2.imwrite(sys.argv[1] + '/photo%03d.%s' % (i, 'jpg' if i % 2 else 'png'), img)",
                             originals});
    QVERIFY2(drawn.exitCode == 0, drawn.err.constData());
    for (const QString& copy : {reference, work}) QVERIFY(expnet_test::runProcess("cp", {"-a", originals, copy}).exitCode == 0);
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("SOURCE_DATE_EPOCH", "1700000000");
    const auto start = [&](QProcess& p, const QString& folder) {
      p.setProcessEnvironment(env);
      p.start(expnet_test::cliPath(), {"caption", "--model", "demo", "--threads", "1", "--write-alt-text", folder});
      return p.waitForStarted();
    };
    QProcess whole;
    QVERIFY(start(whole, reference));
    QVERIFY(whole.waitForFinished(300000) && whole.exitCode() == 0);
    const QStringList names = QDir(originals).entryList(QDir::Files);
    QCOMPARE(names.size(), 200);
    int killedMidway = 0;
    for (int round = 0; round < 10; ++round) {
      QProcess run;
      QVERIFY(start(run, work));
      QTest::qWait(800 + QRandomGenerator::global()->bounded(2500));
      if (run.state() == QProcess::Running) ++killedMidway;
      ::kill(static_cast<pid_t>(run.processId()), SIGKILL);
      run.waitForFinished(10000);
      for (const QString& name : names) {
        const QByteArray now = bytesOf(work + "/" + name);
        QVERIFY2(now == bytesOf(originals + "/" + name) || now == bytesOf(reference + "/" + name),
                 qPrintable(QString("round %1: %2 is neither the original nor the written file").arg(round).arg(name)));
      }
    }
    int written = 0;
    for (const QString& name : names) written += bytesOf(work + "/" + name) == bytesOf(reference + "/" + name);
    qInfo("%d of 10 kills landed while the run went on; %d of 200 files written by then, %lld copies left by the kills",
          killedMidway, written, static_cast<long long>(QDir(work).entryList(QDir::Files | QDir::Hidden).size() - 200));
    QVERIFY2(written > 0 && written < 200, "the kills did not land between the first and the last file");
    // A copy a killed writer left (its pid gone): the next run removes it.
    QFile stale(work + "/photo000.png.tmp.4194303.12345");
    QVERIFY(stale.open(QIODevice::WriteOnly) && stale.write("half") == 4);
    stale.close();
    QProcess rest;
    QVERIFY(start(rest, work));
    QVERIFY(rest.waitForFinished(300000) && rest.exitCode() == 0);
    for (const QString& name : names) QVERIFY2(bytesOf(work + "/" + name) == bytesOf(reference + "/" + name), qPrintable(name));
    // The killed runs' temporary copies are gone too.
    QCOMPARE(QDir(work).entryList(QDir::Files | QDir::Hidden).size(), 200);
  }

  // XMP of the older form (as Photoshop wrote it before 2008, rdf:about="uuid:..."),
  // which exiv2's toolkit would rewrite: the image stays byte-equal, the alt text goes
  // to its sidecar.
  void olderXmpGetsASidecar() {
    const QString folder = dir_ + "/legacy";
    QDir().mkpath(folder);
    const QString photo = folder + "/scan.jpg";
    const auto made = expnet_test::runProcess(
        "/usr/bin/python3",
        {"-c", "import cv2, numpy as np, struct, sys\n"
               "img = np.zeros((48, 64, 3), np.uint8); cv2.circle(img, (20, 24), 10, (0, 0, 255), -1)\n"
               "jpg = cv2.imencode('.jpg', img)[1].tobytes()\n"
               "packet = (\"<?xpacket begin='' id='W5M0MpCehiHzreSzNTczkc9d'?><x:xmpmeta xmlns:x='adobe:ns:meta/'>\"\n"
               "  \"<rdf:RDF xmlns:rdf='http://www.w3.org/1999/02/22-rdf-syntax-ns#'>\"\n"
               "  \"<rdf:Description rdf:about='uuid:041bd455-5822-11da-a45f-9ff35f197920' xmlns:xapMM='http://ns.adobe.com/xap/1.0/mm/'>\"\n"
               "  \"<xapMM:InstanceID>uuid:C9808EFB568D11DA9AA186CD88375B04</xapMM:InstanceID></rdf:Description>\"\n"
               "  \"</rdf:RDF></x:xmpmeta><?xpacket end='w'?>\").encode()\n"
               "body = b'http://ns.adobe.com/xap/1.0/\\x00' + packet\n"
               "open(sys.argv[1], 'wb').write(jpg[:2] + b'\\xff\\xe1' + struct.pack('>H', len(body) + 2) + body + jpg[2:])",
         photo});
    QVERIFY2(made.exitCode == 0, made.err.constData());
    QCOMPARE(tagsOf(photo)["XMP-xmpMM:InstanceID"].toString(), QStringLiteral("uuid:C9808EFB568D11DA9AA186CD88375B04"));
    const QByteArray bytes = bytesOf(photo);
    const auto run = caption({}, {photo});
    QVERIFY2(run.exitCode == 0 && run.err.contains("1 into sidecars") && run.err.contains("older form"), run.err.constData());
    QCOMPARE(bytesOf(photo), bytes);
    QVERIFY(!tagsOf(photo + ".xmp")["XMP-iptcCore:AltTextAccessibility"].toString().isEmpty());
  }

  void sidecarsDryRunsAndReadOnlyImagesLeaveTheBytes() {
    const QString folder = dir_ + "/untouched";
    makeImages(folder);
    const QString jpg = folder + "/camera.jpg", png = folder + "/plain.png", tif = folder + "/scan.tif";
    const QByteArray jpgBytes = bytesOf(jpg), pngBytes = bytesOf(png), tifBytes = bytesOf(tif);
    const auto dry = caption({"--dry-run"}, {jpg, png});
    QVERIFY2(dry.exitCode == 0 && dry.err.contains("would write") && dry.err.contains("(dry run): 2 written into images"),
             dry.err.constData());
    QCOMPARE(bytesOf(jpg), jpgBytes);
    QVERIFY(!QFile::exists(jpg + ".xmp"));

    const auto side = caption({"--sidecar"}, {jpg});
    QVERIFY2(side.exitCode == 0 && side.err.contains("1 into sidecars"), side.err.constData());
    QCOMPARE(bytesOf(jpg), jpgBytes);
    QVERIFY(!tagsOf(jpg + ".xmp")["XMP-iptcCore:AltTextAccessibility"].toString().isEmpty());
    // The image has a person's description: the sidecar does not compete with it.
    QVERIFY(!tagsOf(jpg + ".xmp").contains("XMP-dc:Description"));

    QFile::setPermissions(png, QFileDevice::ReadOwner | QFileDevice::ReadGroup | QFileDevice::ReadOther);
    const auto readOnly = caption({}, {png});
    QVERIFY2(readOnly.exitCode == 0 && readOnly.err.contains("the image is read-only"), readOnly.err.constData());
    QCOMPARE(bytesOf(png), pngBytes);
    QVERIFY(!tagsOf(png + ".xmp")["XMP-iptcCore:AltTextAccessibility"].toString().isEmpty());

    // --keep-mtime: written, and the modification time is the old one.
    const QDateTime old = QFileInfo(tif).lastModified();
    QTest::qWait(1100);
    const auto kept = caption({"--keep-mtime"}, {tif});
    QVERIFY2(kept.exitCode == 0 && kept.err.contains("1 written into images"), kept.err.constData());
    QVERIFY(bytesOf(tif) != tifBytes);
    QCOMPARE(QFileInfo(tif).lastModified(), old);
    QCOMPARE(QFileInfo(tif).permissions(), QFileInfo(jpg).permissions());
  }

  // A folder of photos opens as a dataset: a person's alt text and descriptions (embedded,
  // or in a sidecar ExifTool wrote) are its references; the model's unedited captions are
  // not; a damaged file is named and kept without references. It is indexed and searched
  // as any dataset, and `expnet eval` scores the model on it image by image.
  void aCaptionedFolderOpensAsADataset() {
    const QString folder = dir_ + "/own_photos";
    makeImages(folder);  // camera.jpg and scan.tif carry a person's description
    const auto tagged = expnet_test::runProcess(
        "exiftool", {"-q", "-overwrite_original",
                     "-XMP-iptcCore:AltTextAccessibility=a red circle on a black background", folder + "/plain.png"});
    QVERIFY2(tagged.exitCode == 0, tagged.err.constData());
    const auto sidecar =
        expnet_test::runProcess("exiftool", {"-q", "-o", folder + "/old.bmp.xmp",
                                             "-XMP-iptcCore:AltTextAccessibility=one red circle", folder + "/old.bmp"});
    QVERIFY2(sidecar.exitCode == 0, sidecar.err.constData());
    const auto machine = caption({}, {folder + "/web.webp"});  // the model's caption only: no reference
    QVERIFY2(machine.exitCode == 0, machine.err.constData());
    QDir().mkpath(folder + "/damaged");
    const auto made = expnet_test::runProcess(
        "/usr/bin/python3",
        {"-c",
         "import cv2, numpy as np, struct, sys\n"
         "jpg = cv2.imencode('.jpg', np.zeros((32, 32, 3), np.uint8))[1].tobytes()\n"
         "body = b'http://ns.adobe.com/xap/1.0/\\x00<x:xmpmeta><rdf:RDF><broken'\n"
         "open(sys.argv[1], 'wb').write(jpg[:2] + b'\\xff\\xe1' + struct.pack('>H', len(body) + 2) + body + jpg[2:])",
         folder + "/damaged/scan.jpg"});
    QVERIFY2(made.exitCode == 0, made.err.constData());

    const auto stats =
        expnet_test::runProcess(expnet_test::cliPath(), {"dataset", "stats", "--dataset", folder, "--json"});
    QVERIFY2(stats.exitCode == 0, stats.err.constData());
    const QJsonObject s = QJsonDocument::fromJson(stats.out).object();
    QCOMPARE(s["format"].toString(), QStringLiteral("photos"));
    QCOMPARE(s["images"].toInt(), 6);
    QCOMPARE(s["captions"].toInt(), 4);  // camera, scan (descriptions), plain (alt text), old.bmp (its sidecar)
    QCOMPARE(s["images_without_captions"].toInt(), 2);  // web.webp (the model's caption), damaged/scan.jpg
    QVERIFY2(stats.err.contains("damaged/scan.jpg") && stats.err.contains("not well-formed XML"),
             stats.err.constData());

    const QString db = dir_ + "/own_photos.index.sqlite";
    const auto index =
        expnet_test::runProcess(expnet_test::cliPath(), {"dataset", "index", "--dataset", folder, "--db", db});
    QVERIFY2(index.exitCode == 0, index.err.constData());
    const auto found =
        expnet_test::runProcess(expnet_test::cliPath(), {"dataset", "query", "--db", db, "--text", "black background"});
    QVERIFY2(found.exitCode == 0 && found.out.startsWith("1 images match") && found.out.contains("plain.png"),
             found.out.constData());

    const auto eval =
        expnet_test::runProcess(expnet_test::cliPath(), {"eval", "--model", "demo", "--dataset", folder, "--split",
                                                         "test", "--db", dir_ + "/own_eval.sqlite", "--json"});
    QVERIFY2(eval.exitCode == 0, eval.err.constData());
    const QJsonObject e = QJsonDocument::fromJson(eval.out).object();
    int scored = 0;
    for (const auto& entry : e["per_image"].toArray()) scored += entry.toObject().contains("scores");
    QCOMPARE(e["per_image"].toArray().size(), 6);
    QCOMPARE(scored, 4);
    QVERIFY(e["corpus"].toObject().contains("CIDEr"));

    // A folder with neither a dataset file nor images: said so, and what to give instead.
    QDir().mkpath(dir_ + "/nothing_here");
    const auto empty =
        expnet_test::runProcess(expnet_test::cliPath(), {"dataset", "stats", "--dataset", dir_ + "/nothing_here"});
    QVERIFY2(empty.exitCode == 1 && empty.err.contains("has no dataset file") && empty.err.contains("no images"),
             empty.err.constData());
  }

  // Each hostile file alone: exit 1 with its reason, within 5 s and 500 MB more than
  // the same run on a plain photo, its bytes unchanged. Then all in one batch with a
  // plain photo: that one is written, the others fail one by one.
  void hostileFilesFailOneByOne() {
    const QString folder = dir_ + "/hostile";
    QDir().mkpath(folder);
    const auto made = expnet_test::runProcess("/usr/bin/python3",
                                              {QStringLiteral(EXPNET_METADATA_TEST_DIR "/hostile_files.py"), folder});
    QVERIFY2(made.exitCode == 0, made.err.constData());
    const QStringList hostile = {"huge_xmp.png",  "inflating_xmp.png", "huge_xmp.tif",        "corrupt_xmp.jpg",
                                 "many_app1.jpg", "looping_ifds.tif",  "looping_exif_ifd.tif"};
    const QStringList reasons = {"100.0 MB",
                                 "inflates to more than",
                                 "TIFF tag 700",
                                 "not well-formed XML",
                                 "500 Exif and 500 XMP blocks",
                                 "form a loop",
                                 "form a loop"};
    const QStringList args = {"caption", "--model", "demo", "--threads", "1", "--write-alt-text"};
    const QString plainCopy = dir_ + "/hostile_plain.jpg";
    QVERIFY(QFile::copy(folder + "/plain.jpg", plainCopy));
    const MeasuredRun plain = runMeasured(expnet_test::cliPath(), args + QStringList{plainCopy}, dir_ + "/plain.err");
    QVERIFY2(plain.exitCode == 0, plain.err.constData());
    for (int k = 0; k < hostile.size(); ++k) {
      const QString path = folder + "/" + hostile[k];
      const QByteArray before = bytesOf(path);
      const MeasuredRun run = runMeasured(expnet_test::cliPath(), args + QStringList{path}, dir_ + "/hostile.err");
      qInfo("%s: exit %d in %.2f s, peak %ld MB (a plain photo: %.2f s, %ld MB)", qPrintable(hostile[k]), run.exitCode,
            run.seconds, run.peakMegabytes, plain.seconds, plain.peakMegabytes);
      QVERIFY2(run.exitCode == 1 && run.err.contains("error: alt text of") && run.err.contains(reasons[k].toUtf8()),
               qPrintable(hostile[k] + ": " + run.err));
      QVERIFY2(run.err.contains("0 written into images, 0 into sidecars, 0 skipped, 1 failed"), run.err.constData());
      QVERIFY2(run.seconds < plain.seconds + 5, qPrintable(hostile[k]));
      QVERIFY2(run.peakMegabytes < plain.peakMegabytes + 500, qPrintable(hostile[k]));
      QVERIFY2(bytesOf(path) == before, qPrintable(hostile[k] + " changed"));
      QVERIFY(!QFile::exists(path + ".xmp"));
    }
    const MeasuredRun batch = runMeasured(expnet_test::cliPath(), args + QStringList{folder}, dir_ + "/batch.err");
    QVERIFY2(batch.exitCode == 1 && batch.err.contains("1 written into images, 0 into sidecars, 0 skipped, 7 failed"),
             batch.err.constData());
    // A damaged XMP packet with --sidecar: the image is not touched, the sidecar is written.
    const QByteArray corrupt = bytesOf(folder + "/corrupt_xmp.jpg");
    const auto side = caption({"--sidecar"}, {folder + "/corrupt_xmp.jpg"});
    QVERIFY2(side.exitCode == 0 && side.err.contains("1 into sidecars"), side.err.constData());
    QCOMPARE(bytesOf(folder + "/corrupt_xmp.jpg"), corrupt);
    for (const QString& name : hostile) QFile::remove(folder + "/" + name);
  }

  // A full disk (a 1 MB tmpfs, filled): the image stays whole, the error says so,
  // nothing is left beside it; with room again the rerun writes it.
  void aFullDiskIsReportedAndTheImageKept() {
    if (::geteuid() != 0) {
      if (qEnvironmentVariableIsSet("EXPNET_REQUIRE_NETNS"))
        QFAIL("a full disk is tested on a tmpfs, which needs root");
      QSKIP("a full disk is tested on a tmpfs mounted here, which needs root (CI runs it)");
    }
    const QString disk = dir_ + "/small_disk";
    QDir().mkpath(disk);
    const auto mounted = expnet_test::runProcess("mount", {"-t", "tmpfs", "-o", "size=1m", "tmpfs", disk});
    QVERIFY2(mounted.exitCode == 0, mounted.err.constData());
    struct Unmount {
      QString path;
      ~Unmount() { expnet_test::runProcess("umount", {"-l", path}); }
    } unmount{disk};
    const QString photo = disk + "/camera.jpg";
    makeImages(dir_ + "/full_source");
    QVERIFY(QFile::copy(dir_ + "/full_source/camera.jpg", photo));
    const QByteArray before = bytesOf(photo);
    QFile filler(disk + "/filler");
    QVERIFY(filler.open(QIODevice::WriteOnly));
    const QByteArray block(4096, 'x');
    while (filler.write(block) == block.size() && filler.flush()) {
    }
    filler.close();
    const auto full = caption({}, {photo});
    QVERIFY2(full.exitCode == 1 && full.err.contains("No space left on device") && full.err.contains("1 failed"),
             full.err.constData());
    QCOMPARE(bytesOf(photo), before);
    QCOMPARE(QDir(disk).entryList(QDir::Files | QDir::Hidden).size(), 2);  // the photo and the filler
    QVERIFY(filler.remove());
    const auto roomy = caption({}, {photo});
    QVERIFY2(roomy.exitCode == 0 && roomy.err.contains("1 written into images"), roomy.err.constData());
  }
};

QTEST_GUILESS_MAIN(TestAltText)
#include "test_alt_text.moc"

// Files that used to exhaust time or memory, or reach decoders we never meant
// to use: each must end quickly in an ImageError naming the file and the fix
// (or decode correctly), and a batch must go on past it. Files are crafted
// here: sparse files by ftruncate, headers byte by byte.
#include <fcntl.h>
#include <unistd.h>

#include <QDir>
#include <QElapsedTimer>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "expnet/image/image_decode.h"
#include "image/bounded_run.h"
#include "support/fixtures.h"

namespace {

using Bytes = std::vector<uint8_t>;

Bytes bytesOf(const std::string& text) { return Bytes(text.begin(), text.end()); }

void append32be(Bytes& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(uint8_t(v >> shift));
}

void append32le(Bytes& out, uint32_t v) {
  for (int shift = 0; shift <= 24; shift += 8) out.push_back(uint8_t(v >> shift));
}

// The ImageError of loading `path` as "reason: message", or "ok WxH".
QString outcome(const std::string& path, const expnet::ImageLoadOptions& options = {}) {
  try {
    const cv::Mat m = expnet::load_image_rgb(path, options);
    return QStringLiteral("ok %1x%2").arg(m.cols).arg(m.rows);
  } catch (const expnet::ImageError& e) {
    return QString::fromStdString(e.reason() + ": " + e.what());
  }
}

QString decodeOutcome(const Bytes& bytes) {
  try {
    const cv::Mat m = expnet::decode_image_rgb(bytes, "memory");
    return QStringLiteral("ok %1x%2").arg(m.cols).arg(m.rows);
  } catch (const expnet::ImageError& e) {
    return QString::fromStdString(e.reason() + ": " + e.what());
  }
}

// A small valid PNG of a flat colour.
Bytes flatPng(int width, int height) {
  std::vector<uint8_t> encoded;
  cv::imencode(".png", cv::Mat(height, width, CV_8UC3, cv::Scalar(10, 200, 30)), encoded);
  return encoded;
}

int openCvTempFiles() {
  const char* where = std::getenv("OPENCV_TEMP_PATH");
  return int(QDir(where ? QString::fromLocal8Bit(where) : QStringLiteral("/tmp"))
                 .entryList({QStringLiteral("__opencv_temp*")}, QDir::Files | QDir::System | QDir::Hidden)
                 .size());
}

// Radiance HDR, flat (not run-length) RGBE pixels: rows of fewer than 8 pixels are never RLE.
Bytes radiance(int width, int height, const Bytes& pixels) {
  Bytes out = bytesOf("#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n-Y " + std::to_string(height) + " +X " +
                      std::to_string(width) + "\n");
  out.insert(out.end(), pixels.begin(), pixels.end());
  return out;
}

}  // namespace

class TestImageLimits : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;

  std::string path(const std::string& name) const { return dir_.path().toStdString() + "/" + name; }
  std::string write(const std::string& name, const Bytes& bytes) {
    std::ofstream out(path(name), std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    return path(name);
  }
  // A sparse file: `size` bytes that take no disk space, starting with `head`.
  std::string sparse(const std::string& name, int64_t size, const Bytes& head) {
    const std::string file = write(name, head);
    const int fd = ::open(file.c_str(), O_WRONLY);
    const bool grown = fd >= 0 && ::ftruncate(fd, size) == 0;
    if (fd >= 0) ::close(fd);
    return grown ? file : std::string();
  }

 private slots:
  void initTestCase() { QVERIFY(dir_.isValid()); }
  // Qt cannot list a name that is not UTF-8, so QTemporaryDir alone would leave the folder behind.
  void cleanupTestCase() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_.path().toStdString(), ignored);
  }

  // The file size is checked before any byte is read: no std::bad_alloc, no 3 GB read.
  void hugeFilesAreRefusedByTheirSize() {
    const Bytes png = bytesOf("\x89PNG\r\n\x1a\n");
    for (const int64_t size : {int64_t(64) << 30, int64_t(3) << 30}) {
      const std::string file = sparse("sparse" + std::to_string(size >> 30) + "g.png", size, png);
      if (file.empty()) QSKIP("this file system cannot hold sparse files that large");
      QElapsedTimer timer;
      timer.start();
      const QString result = outcome(file);
      QVERIFY2(result.startsWith("too_large: ") && result.contains(QString::fromStdString(file)) &&
                   result.contains("limit of 1073741824 bytes"),
               qPrintable(result));
      QVERIFY2(timer.elapsed() < 1000, qPrintable(QString::number(timer.elapsed())));
    }
    // Just over the cap (a lowered one) is refused; at the cap the file is read.
    expnet::ImageLoadOptions options;
    options.max_file_bytes = 1000;
    const std::string pgm = write("small.pgm", [] { Bytes b = bytesOf("P5 30 30 255\n"); b.resize(b.size() + 900, 7); return b; }());
    QCOMPARE(outcome(pgm, options), QStringLiteral("ok 30x30"));
    options.max_file_bytes = 912;
    QVERIFY(outcome(pgm, options).startsWith("too_large"));
  }

  // A file over 1 MiB whose header already says it is too large: refused from its first MiB.
  void headerIsCheckedBeforeTheRestIsRead() {
    Bytes pnm = bytesOf("P5\n100000 100000\n255\n");
    const std::string file = sparse("bomb.pgm", int64_t(900) << 20, pnm);
    QVERIFY(!file.empty());
    QElapsedTimer timer;
    timer.start();
    QVERIFY(outcome(file).startsWith("too_large: "));
    QVERIFY2(timer.elapsed() < 1000, qPrintable(QString::number(timer.elapsed())));
  }

  // Declared sizes of every accepted format, read from the header before decoding.
  void declaredSizesOfEveryFormatAreChecked() {
    auto expectTooLarge = [&](const char* name, const Bytes& bytes) {
      const QString result = outcome(write(name, bytes));
      QVERIFY2(result.startsWith("too_large: ") && result.contains(name), qPrintable(QString(name) + ": " + result));
    };
    expectTooLarge("big.hdr", radiance(20000, 10000, Bytes(64, 1)));            // 5.45 GB for 31 s before
    expectTooLarge("big.ppm", bytesOf("P6\n40000 40000\n255\n"));                // 28-byte header, 3 GB allocation before
    expectTooLarge("big.pam", bytesOf("P7\nWIDTH 40000\nHEIGHT 40000\nDEPTH 3\nMAXVAL 255\nTUPLTYPE RGB\nENDHDR\n"));
    Bytes sun = {0x59, 0xA6, 0x6A, 0x95};
    for (uint32_t v : {40000u, 40000u, 24u, 0u, 1u, 0u, 0u}) append32be(sun, v);
    expectTooLarge("big.ras", sun);
    Bytes j2k = {0xFF, 0x4F, 0xFF, 0x51, 0x00, 0x2F, 0x00, 0x00};
    for (uint32_t v : {50000u, 50000u, 0u, 0u}) append32be(j2k, v);
    expectTooLarge("big.j2k", j2k);
    Bytes jp2 = {0, 0, 0, 12, 'j', 'P', ' ', ' ', '\r', '\n', 0x87, '\n', 0, 0, 0, 20, 'f', 't', 'y', 'p',
                 'j', 'p', '2', ' ', 0, 0, 0, 0, 'j', 'p', '2', ' ', 0, 0, 0, 45, 'j', 'p', '2', 'h', 0, 0, 0, 22,
                 'i', 'h', 'd', 'r'};
    for (uint32_t v : {50000u, 50000u}) append32be(jp2, v);
    jp2.insert(jp2.end(), {0, 3, 7, 7, 0, 0});
    expectTooLarge("big.jp2", jp2);
    // Sides near 2^32 whose product overflowed a signed 64-bit integer (UBSan).
    Bytes png = bytesOf("\x89PNG\r\n\x1a\n");
    append32be(png, 13);
    png.insert(png.end(), {'I', 'H', 'D', 'R'});
    append32be(png, 0xFFFFFFFFu);
    append32be(png, 0xFFFFFFFFu);
    png.insert(png.end(), {8, 2, 0, 0, 0, 0, 0, 0, 0});
    expectTooLarge("huge.png", png);
    expectTooLarge("digits.pgm", bytesOf("P5 99999999999999999999999 99999999999999999999999 255\n"));
    Bytes bmp = bytesOf("BM");
    bmp.resize(14, 0);
    for (uint32_t v : {40u, 0x80000000u, 0x80000000u}) append32le(bmp, v);
    expectTooLarge("min.bmp", bmp);
    // With our limit disabled, OpenCV's own limits still hold, as our error.
    expnet::ImageLoadOptions unlimited;
    unlimited.max_pixels = 0;
    QVERIFY(outcome(path("big.ppm"), unlimited).contains("beyond what OpenCV decodes"));
  }

  // Fuzz finding image_decode-1 (and two more of its kind found by reading OpenCV's
  // header parsers): our header reading and OpenCV's disagreed, so OpenCV allocated
  // for a size we had not checked. Each header now reads as OpenCV reads it.
  void headersReadAsOpenCvReadsThem() {
    int64_t w = 0, h = 0;
    // A '#' right after a number ends the number, it is no comment: 2 x 1 (the fuzzer's 15 bytes).
    const Bytes found = {'P', '6', '\n', '2', '#', '1', '\n', '2', 0xe2, 0, '*', '1', ';', '-', 0x7f};
    QVERIFY(expnet::probe_image_size(found.data(), found.size(), w, h));
    QCOMPARE(w, int64_t(2));
    QCOMPARE(h, int64_t(1));
    // The bomb made from it: 30000 x 30000 to OpenCV (900 MB), 30000 x 1 to the old probe.
    const Bytes bomb = bytesOf(std::string("P5\n30000#30000\n1\n255\n\x01\x02\x03", 24));
    QVERIFY(expnet::probe_image_size(bomb.data(), bomb.size(), w, h));
    QCOMPARE(h, int64_t(30000));
    QVERIFY(decodeOutcome(bomb).contains("(too_large): 30000x30000"));
    // PAM: a second WIDTH on a line counts (OpenCV reads 16-character fields; we take the largest).
    const Bytes pam = bytesOf("P7\nWIDTH 1" + std::string(15, ' ') + "WIDTH 50000\nHEIGHT 10000\nDEPTH 3\nMAXVAL 255\n"
                              "TUPLTYPE RGB\nENDHDR\n");
    QVERIFY(decodeOutcome(pam).contains("(too_large): 50000x10000"));
    // HDR: OpenCV reads lines with fgets(128): the tail of a 127-byte line is a blank line to it.
    const Bytes hdr = bytesOf("#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n#" + std::string(126, 'x') +
                              "\n-Y 15000 +X 15000\n\n-Y 1 +X 1\n");
    QVERIFY(outcome(write("long_line.hdr", hdr)).contains("(too_large): 15000x15000"));
  }

  // Formats we do not read are refused by their signature; the decoders never see them.
  void unsupportedFormatsAreRefusedBySignature() {
    struct Case { const char* name; std::string bytes; const char* reason; const char* says; };
    const Case cases[] = {
        {"map.ntf", "NITF02.10" + std::string(400, '0'), "unsupported", "NITF"},
        {"float.pfm", "PF\n2 2\n-1\n" + std::string(48, '\0'), "unsupported", "PFM"},
        {"scene.exr", std::string("\x76\x2f\x31\x01\x02\0\0\0", 8) + std::string(64, '\0'), "unsupported", "OpenEXR"},
        {"big.tif", std::string("II+\0\x08\0\0\0", 8) + std::string(64, '\0'), "unsupported", "BigTIFF"},
        {"anim.gif", "GIF89a" + std::string(20, '\0'), "unsupported", "GIF"},
        {"photo.heic", std::string("\0\0\0\x18" "ftypheic", 12) + std::string(20, '\0'), "unsupported", "HEIF"},
        {"mystery.png", "\x01\x02\x03garbage", "not_an_image", "01 02 03"},
    };
    const int before = openCvTempFiles();
    for (const auto& c : cases) {
      const QString result = outcome(write(c.name, bytesOf(c.bytes)));
      QVERIFY2(result.startsWith(QString(c.reason) + ": ") && result.contains(c.says) && result.contains(c.name) &&
                   result.contains("PNG or JPEG", Qt::CaseInsensitive) == (QString(c.reason) == "unsupported"),
               qPrintable(QString(c.name) + ": " + result));
    }
    QCOMPARE(openCvTempFiles(), before);  // PFM went through a temporary file before
  }

  void animatedWebpSaysSo() {
    Bytes webp = bytesOf("RIFF");
    append32le(webp, 30);
    for (const char* s : {"WEBP", "VP8X"}) webp.insert(webp.end(), s, s + 4);
    append32le(webp, 10);
    webp.insert(webp.end(), {0x02, 0, 0, 0, 9, 0, 0, 9, 0, 0});  // animation flag; 10 x 10 canvas
    for (const char* s : {"ANIM"}) webp.insert(webp.end(), s, s + 4);
    append32le(webp, 6);
    webp.insert(webp.end(), 6, 0);
    const QString result = outcome(write("anim.webp", webp));
    QVERIFY2(result.startsWith("unsupported: ") && result.contains("animated WebP") && result.contains("PNG or JPEG"),
             qPrintable(result));
  }

  // Radiance HDR and Sun raster are read from their file (no temporary file);
  // from memory they are refused, clearly.
  void hdrAndSunRasterDecodeWithoutTemporaryFiles() {
    const int before = openCvTempFiles();
    Bytes pixels;
    for (int i = 0; i < 24; ++i) pixels.push_back(uint8_t(i % 4 == 3 ? 129 : 128 >> (i % 4)));  // RGBE: (1, 0.5, 0.25)
    const std::string hdr = write("small.hdr", radiance(3, 2, pixels));
    QCOMPARE(outcome(hdr), QStringLiteral("ok 3x2"));
    const cv::Mat rgb = expnet::load_image_rgb(hdr);
    QVERIFY2(rgb.at<cv::Vec3b>(1, 2)[0] > rgb.at<cv::Vec3b>(1, 2)[2], "red is the brightest channel");
    Bytes sun = {0x59, 0xA6, 0x6A, 0x95};
    for (uint32_t v : {2u, 2u, 24u, 12u, 1u, 0u, 0u}) append32be(sun, v);
    for (uint8_t v = 1; v <= 12; ++v) sun.push_back(v);
    const std::string ras = write("small.ras", sun);
    QCOMPARE(outcome(ras), QStringLiteral("ok 2x2"));
    QCOMPARE(openCvTempFiles(), before);
    const QString fromMemory = decodeOutcome(radiance(3, 2, pixels));
    QVERIFY2(fromMemory.startsWith("unsupported: ") && fromMemory.contains("from a file"), qPrintable(fromMemory));
    QCOMPARE(openCvTempFiles(), before);
  }

  // The CLI on all of them in one batch: one line each, the good file still
  // checked, exit 1, within 5 s and 500 MB.
  void imageCheckBatchGoesOnWithinBounds() {
    const Bytes encoded = flatPng(16, 12);
    const std::string sparse64 = sparse("batch64g.png", int64_t(64) << 30, bytesOf("\x89PNG\r\n\x1a\n"));
    if (sparse64.empty()) QSKIP("this file system cannot hold sparse files that large");
    const QStringList files = {QString::fromStdString(sparse64),
                               QString::fromStdString(write("batch.hdr", radiance(20000, 10000, Bytes(64, 1)))),
                               QString::fromStdString(write("batch.ppm", bytesOf("P6\n40000 40000\n255\n"))),
                               QString::fromStdString(write("batch.ntf", bytesOf("NITF02.10" + std::string(400, '0')))),
                               QString::fromStdString(write("good.png", encoded))};
    const auto run = expnet_test::runCliBounded(QStringList{"image", "check", "--json"} + files);
    QCOMPARE(run.result.exitCode, 1);
    const QList<QByteArray> lines = run.result.out.trimmed().split('\n');
    QCOMPARE(lines.size(), files.size());
    const QStringList reasons = {"too_large", "too_large", "too_large", "unsupported"};
    for (int i = 0; i < reasons.size(); ++i) {
      const QJsonObject line = QJsonDocument::fromJson(lines[i]).object();
      QCOMPARE(line["image"].toString(), files[i]);
      QCOMPARE(line["reason"].toString(), reasons[i]);
    }
    QCOMPARE(QJsonDocument::fromJson(lines.last()).object()["ok"].toBool(), true);
    QVERIFY2(run.seconds < 5, qPrintable(QString::number(run.seconds)));
    QVERIFY2(run.peakKb < 500 * 1024, qPrintable(QString::number(run.peakKb)));
  }

  // A dangling link inside a folder is that entry's error; the folder's images are still checked.
  void danglingLinkInAFolderIsItsOwnError() {
    const std::string folder = path("dangling");
    std::filesystem::create_directories(folder);
    write("dangling/b.png", flatPng(6, 4));
    std::filesystem::create_symlink(folder + "/gone.png", folder + "/a.png");
    const auto r = expnet_test::runProcess(expnet_test::cliPath(), {"image", "check", "--json", QString::fromStdString(folder)});
    QCOMPARE(r.exitCode, 1);
    const QList<QByteArray> lines = r.out.trimmed().split('\n');
    QCOMPARE(lines.size(), 2);
    QVERIFY2(QJsonDocument::fromJson(lines[0]).object()["image"].toString().endsWith("/a.png"), lines[0].constData());
    QCOMPARE(QJsonDocument::fromJson(lines[0]).object()["ok"].toBool(), false);
    QCOMPARE(QJsonDocument::fromJson(lines[1]).object()["ok"].toBool(), true);
  }

  // `expnet caption` on a folder: the 64 GB file and a non-image are their own
  // errors; the image with a non-UTF-8 name is captioned; exit 1; within bounds.
  void captionBatchGoesOn() {
    const std::string folder = path("caption_batch");
    std::filesystem::create_directories(folder);
    write("caption_batch/b\xff.png", flatPng(16, 12));
    write("caption_batch/c.png", bytesOf("NITF02.10"));
    if (sparse("caption_batch/a.png", int64_t(64) << 30, bytesOf("\x89PNG\r\n\x1a\n")).empty())
      QSKIP("this file system cannot hold sparse files that large");
    const auto run = expnet_test::runCliBounded({"caption", "--model", "demo", "--json", "--batch", "2",
                                                 QString::fromStdString(folder)});
    QCOMPARE(run.result.exitCode, 1);
    const QList<QByteArray> lines = run.result.out.trimmed().split('\n');
    QCOMPARE(lines.size(), 3);
    const QJsonObject sparseLine = QJsonDocument::fromJson(lines[0]).object();
    QVERIFY2(sparseLine["error"].toString().contains("too_large"), lines[0].constData());
    const QJsonObject named = QJsonDocument::fromJson(lines[1]).object();
    QVERIFY2(named["image"].toString().endsWith("/b\\xff.png") && named.contains("captions"), lines[1].constData());
    QVERIFY2(QJsonDocument::fromJson(lines[2]).object()["error"].toString().contains("NITF"), lines[2].constData());
    QVERIFY2(run.result.err.contains("2 of 3 images could not be captioned"), run.result.err.constData());
    QVERIFY2(run.seconds < 30, qPrintable(QString::number(run.seconds)));  // includes loading the model
    QVERIFY2(run.peakKb < 500 * 1024, qPrintable(QString::number(run.peakKb)));
  }

  // `expnet dataset query`: names and captions from the dataset with control
  // characters are printed escaped (text) and as valid JSON; every row is printed.
  void datasetQueryEscapesNames() {
    // (JSON escapes: \u001b is ESC, \u0007 BEL, \\ one backslash.)
    const std::string json =
        "{\"images\":[{\"cocoid\":1,\"filename\":\"a\\u001b[31m.jpg\",\"split\":\"val\",\"sentences\":"
        "[{\"raw\":\"a red\\u0007 circle.\"}]},{\"cocoid\":2,\"filename\":\"b\\\\xff.jpg\",\"split\":\"val\","
        "\"sentences\":[{\"raw\":\"a blue square.\"}]}]}";
    std::filesystem::create_directories(path("query"));
    write("query/dataset_coco.json", bytesOf(json));
    const QString db = QString::fromStdString(path("query/index.sqlite"));
    auto r = expnet_test::runProcess(expnet_test::cliPath(),
                                     {"dataset", "index", "--dataset", QString::fromStdString(path("query")), "--db", db});
    QVERIFY2(r.exitCode == 0, r.err.constData());
    r = expnet_test::runProcess(expnet_test::cliPath(), {"dataset", "query", "--db", db});
    QVERIFY2(r.exitCode == 0, r.err.constData());
    QVERIFY2(!r.out.contains('\x1b') && !r.out.contains('\x07') && r.out.contains("a\\x1b[31m.jpg") &&
                 r.out.contains("a red\\x07 circle") && r.out.contains("b\\x5cxff.jpg"),
             r.out.constData());
    r = expnet_test::runProcess(expnet_test::cliPath(), {"dataset", "query", "--db", db, "--json"});
    QVERIFY2(r.exitCode == 0, r.err.constData());
    const QList<QByteArray> lines = r.out.trimmed().split('\n');
    QCOMPARE(lines.size(), 2);
    QCOMPARE(QJsonDocument::fromJson(lines[0]).object()["filename"].toString(), QStringLiteral("a\u001b[31m.jpg"));
    QCOMPARE(QJsonDocument::fromJson(lines[1]).object()["filename"].toString(), QStringLiteral("b\\x5cxff.jpg"));
  }
};

QTEST_GUILESS_MAIN(TestImageLimits)
#include "test_image_limits.moc"

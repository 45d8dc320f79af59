// Image reading and preprocessing against Pillow's outputs (fixtures), the
// authors' preprocessed tensor, and generated bad / unusual files.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include <torch/torch.h>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "expnet/image/image_decode.h"
#include "expnet/image/pil_resize.h"
#include "expnet/image/preprocess.h"
#include "support/fixtures.h"

namespace {

using Bytes = std::vector<uint8_t>;

Bytes readBytes(const QString& path) {
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly)) return {};
  const QByteArray data = file.readAll();
  return Bytes(data.begin(), data.end());
}

void writeBytes(const QString& path, const Bytes& bytes) {
  QFile file(path);
  QVERIFY(file.open(QIODevice::WriteOnly | QIODevice::Truncate));
  file.write(reinterpret_cast<const char*>(bytes.data()), static_cast<qint64>(bytes.size()));
}

Bytes encode(const cv::Mat& bgr, const std::string& ext, const std::vector<int>& params = {}) {
  std::vector<uchar> out;
  cv::imencode(ext, bgr, out, params);
  return Bytes(out.begin(), out.end());
}

cv::Mat noiseBgr(int width, int height, unsigned seed) {
  cv::Mat m(height, width, CV_8UC3);
  cv::RNG rng(seed);
  rng.fill(m, cv::RNG::UNIFORM, 0, 256);
  return m;
}

// Smooth and asymmetric (every orientation differs), friendly to JPEG.
cv::Mat gradientBgr(int width, int height) {
  cv::Mat m(height, width, CV_8UC3);
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) m.at<cv::Vec3b>(y, x) = cv::Vec3b(uchar(x * 3), uchar(y * 5), uchar((x + 2 * y) % 256));
  return m;
}

// ---- minimal PNG writer: exact control over colour type and bit depth ----
uint32_t crc32(const uint8_t* data, size_t n, uint32_t crc = 0) {
  crc = ~crc;
  for (size_t i = 0; i < n; ++i) {
    crc ^= data[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

void put32(Bytes& out, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out.push_back(uint8_t(v >> s));
}

void appendChunk(Bytes& out, const char* type, const Bytes& data) {
  put32(out, static_cast<uint32_t>(data.size()));
  Bytes body(type, type + 4);
  body.insert(body.end(), data.begin(), data.end());
  out.insert(out.end(), body.begin(), body.end());
  put32(out, crc32(body.data(), body.size()));
}

struct PngSpec {
  uint32_t width = 0, height = 0;
  uint8_t bitDepth = 8, colorType = 2;
  Bytes rows;  // unfiltered samples, big-endian for 16 bit, no filter bytes
  Bytes palette, transparency;
};

Bytes makePng(const PngSpec& spec) {
  Bytes out = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  Bytes ihdr;
  put32(ihdr, spec.width);
  put32(ihdr, spec.height);
  for (uint8_t b : {spec.bitDepth, spec.colorType, uint8_t(0), uint8_t(0), uint8_t(0)}) ihdr.push_back(b);
  appendChunk(out, "IHDR", ihdr);
  if (!spec.palette.empty()) appendChunk(out, "PLTE", spec.palette);
  if (!spec.transparency.empty()) appendChunk(out, "tRNS", spec.transparency);
  const size_t rowBytes = spec.rows.size() / spec.height;
  QByteArray raw;
  for (uint32_t y = 0; y < spec.height; ++y) {
    raw.append('\0');  // filter: none
    raw.append(reinterpret_cast<const char*>(spec.rows.data() + y * rowBytes), static_cast<qsizetype>(rowBytes));
  }
  const QByteArray zlib = qCompress(raw).mid(4);  // qCompress prefixes the length
  appendChunk(out, "IDAT", Bytes(zlib.begin(), zlib.end()));
  appendChunk(out, "IEND", {});
  return out;
}

// ---- EXIF: an APP1 segment holding only the orientation tag ----
Bytes withExifOrientation(const Bytes& jpeg, int orientation) {
  const Bytes tiff = {'I', 'I', 42, 0, 8, 0, 0, 0,                    // little-endian header, IFD at 8
                      1, 0,                                           // one entry
                      0x12, 0x01, 3, 0, 1, 0, 0, 0, uint8_t(orientation), 0, 0, 0,  // 0x0112 SHORT 1
                      0, 0, 0, 0};                                    // no next IFD
  Bytes app1 = {'E', 'x', 'i', 'f', 0, 0};
  app1.insert(app1.end(), tiff.begin(), tiff.end());
  const size_t length = app1.size() + 2;
  Bytes out = {0xFF, 0xD8, 0xFF, 0xE1, uint8_t(length >> 8), uint8_t(length & 0xFF)};
  out.insert(out.end(), app1.begin(), app1.end());
  out.insert(out.end(), jpeg.begin() + 2, jpeg.end());  // the rest after SOI
  return out;
}

// What each EXIF orientation means for the stored pixels (EXIF 2.3, tag 0x0112).
cv::Mat orient(const cv::Mat& m, int orientation) {
  cv::Mat out;
  switch (orientation) {
    case 2: cv::flip(m, out, 1); break;
    case 3: cv::rotate(m, out, cv::ROTATE_180); break;
    case 4: cv::flip(m, out, 0); break;
    case 5: cv::transpose(m, out); break;
    case 6: cv::rotate(m, out, cv::ROTATE_90_CLOCKWISE); break;
    case 7: cv::transpose(m, out); cv::rotate(out, out, cv::ROTATE_180); break;  // transverse
    case 8: cv::rotate(m, out, cv::ROTATE_90_COUNTERCLOCKWISE); break;
    default: out = m.clone();
  }
  return out;
}

int differingValues(const cv::Mat& a, const cv::Mat& b) {
  if (a.size() != b.size() || a.type() != b.type()) return -1;
  cv::Mat diff;
  cv::compare(a.reshape(1), b.reshape(1), diff, cv::CMP_NE);
  return cv::countNonZero(diff);
}

double maxAbsDiff(const cv::Mat& a, const cv::Mat& b) { return cv::norm(a, b, cv::NORM_INF); }

cv::Vec3b rgbAt(const cv::Mat& m, int y, int x) { return m.at<cv::Vec3b>(y, x); }

// The reason code of the ImageError, or "ok".
QString reasonOf(const std::function<void()>& call) {
  try {
    call();
    return QStringLiteral("ok");
  } catch (const expnet::ImageError& e) {
    return QString::fromStdString(e.reason());
  }
}

QString loadReason(const QString& path, const expnet::ImageLoadOptions& options = {}) {
  return reasonOf([&] { expnet::load_image_rgb(path.toStdString(), options); });
}

}  // namespace

class TestImage : public QObject {
  Q_OBJECT
  QString tmp_;

  QString file(const QString& name) const { return tmp_ + QLatin1Char('/') + name; }
  QString write(const QString& name, const Bytes& bytes) {
    writeBytes(file(name), bytes);
    return file(name);
  }

 private slots:
  void initTestCase() { tmp_ = expnet_test::makeTempDir(QStringLiteral("image")); }

  // Pillow 9.4's own resize outputs: down- and up-scaling, odd sizes.
  void pillowResizeCasesAreBitExact() {
    EXPNET_FIXTURE(casesPath, "preprocess/cases.json");
    QFile casesFile(casesPath);
    QVERIFY(casesFile.open(QIODevice::ReadOnly));
    const QJsonArray cases = QJsonDocument::fromJson(casesFile.readAll()).object().value("cases").toArray();
    QVERIFY(cases.size() >= 12);
    const QString dir = QFileInfo(casesPath).absolutePath() + QLatin1Char('/');
    for (const auto& value : cases) {
      const QJsonObject c = value.toObject();
      const int size = c.value("size").toInt();
      const cv::Mat input = expnet::load_image_rgb((dir + c.value("input").toString()).toStdString());
      const cv::Mat expected = expnet::load_image_rgb((dir + c.value("expected").toString()).toStdString());
      const cv::Mat ours = expnet::pil_bilinear_resize(input, size, size);
      QCOMPARE(expected.cols, size);
      QVERIFY2(differingValues(ours, expected) == 0,
               qPrintable(QStringLiteral("%1 -> %2: %3 values differ")
                              .arg(c.value("input").toString())
                              .arg(size)
                              .arg(differingValues(ours, expected))));
    }
  }

  // image0.png through our preprocessing equals the authors' tensor.
  void tinyReferenceImageMatchesExpectedTensor() {
    EXPNET_FIXTURE(imagePath, "reference/tiny/image0.png");
    EXPNET_FIXTURE(jsonPath, "reference/tiny/expected.json");
    EXPNET_FIXTURE(binPath, "reference/tiny/expected.bin");
    QFile jsonFile(jsonPath);
    QVERIFY(jsonFile.open(QIODevice::ReadOnly));
    const QJsonObject spec = QJsonDocument::fromJson(jsonFile.readAll()).object()["tensors"].toObject()["images"].toObject();
    QCOMPARE(spec["dtype"].toString(), QStringLiteral("float32"));
    std::vector<int64_t> shape;
    for (const auto& d : spec["shape"].toArray()) shape.push_back(d.toInteger());
    QCOMPARE(shape, (std::vector<int64_t>{1, 3, 128, 128}));
    const Bytes bin = readBytes(binPath);
    const size_t offset = static_cast<size_t>(spec["offset"].toInteger());
    const size_t count = 3 * 128 * 128;
    QVERIFY(bin.size() >= offset + count * sizeof(float));
    const torch::Tensor expected =
        torch::from_blob(const_cast<uint8_t*>(bin.data() + offset), {1, 3, 128, 128}, torch::kFloat32).clone();

    const cv::Mat rgb = expnet::load_image_rgb(imagePath.toStdString());
    QCOMPARE(rgb.cols, 251);
    QCOMPARE(rgb.rows, 173);
    const torch::Tensor ours = expnet::image_to_model_input(rgb, 128);
    QCOMPARE(ours.sizes().vec(), (std::vector<int64_t>{1, 3, 128, 128}));
    QCOMPARE(ours.scalar_type(), torch::kFloat32);
    const double maxDiff = (ours - expected).abs().max().item<double>();
    qInfo("image0.png vs expected.pth[\"images\"]: max |diff| = %g", maxDiff);
    QVERIFY2(maxDiff <= 1e-6, qPrintable(QString::number(maxDiff)));  // float rounding at most

    // The resize alone is bit-exact: undo the normalisation and compare levels.
    const torch::Tensor mean = torch::tensor({0.485f, 0.456f, 0.406f}).view({1, 3, 1, 1});
    const torch::Tensor stdev = torch::tensor({0.229f, 0.224f, 0.225f}).view({1, 3, 1, 1});
    const torch::Tensor levels = ((expected * stdev + mean) * 255).round().to(torch::kUInt8);
    const cv::Mat resized = expnet::pil_bilinear_resize(rgb, 128, 128);
    const torch::Tensor oursLevels =
        torch::from_blob(resized.data, {1, 128, 128, 3}, torch::kUInt8).permute({0, 3, 1, 2});
    QCOMPARE(levels.ne(oursLevels).sum().item<int64_t>(), int64_t(0));

    // The batch helper stacks the same values.
    const torch::Tensor batch = expnet::images_to_model_input({rgb, rgb}, 128);
    QCOMPARE(batch.sizes().vec(), (std::vector<int64_t>{2, 3, 128, 128}));
    QVERIFY(torch::equal(batch[1], ours[0]));
  }

  void resizeEdgeCases() {
    const cv::Mat bgr = noiseBgr(31, 17, 7);
    const cv::Mat same = expnet::pil_bilinear_resize(bgr, 31, 17);
    QCOMPARE(differingValues(same, bgr), 0);
    QVERIFY(same.data != bgr.data);  // a copy, like Pillow
    // One axis unchanged: Pillow skips that pass, so those pixels stay exact.
    const cv::Mat wide = expnet::pil_bilinear_resize(bgr, 31, 5);
    QCOMPARE(wide.cols, 31);
    QCOMPARE(wide.rows, 5);
    const cv::Mat one = expnet::pil_bilinear_resize(bgr, 1, 1);
    QCOMPARE(one.total(), size_t(1));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, expnet::pil_bilinear_resize(bgr, 0, 5));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, expnet::pil_bilinear_resize(cv::Mat(4, 4, CV_8UC1), 2, 2));
    // A flat image stays flat at any scale (weights sum to 1 in fixed point).
    const cv::Mat flat(50, 70, CV_8UC3, cv::Scalar(200, 13, 255));
    for (const auto& size : {cv::Size(7, 3), cv::Size(384, 384), cv::Size(69, 51)})
      QCOMPARE(differingValues(expnet::pil_bilinear_resize(flat, size.width, size.height),
                               cv::Mat(size, CV_8UC3, cv::Scalar(200, 13, 255))),
               0);
    const cv::Mat resizedFlat = expnet::pil_bilinear_resize(flat, 69, 51);
    QCOMPARE(rgbAt(resizedFlat, 25, 30), cv::Vec3b(200, 13, 255));
  }

  void modelInputNormalisation() {
    // torchvision: ToTensor (x / 255 in float32) then (x - mean) / std in float32.
    const cv::Mat grey(4, 4, CV_8UC3, cv::Scalar(0, 128, 255));
    const torch::Tensor t = expnet::image_to_model_input(grey, 4);
    const float r = (0.0f / 255.0f - 0.485f) / 0.229f;
    const float g = (128.0f / 255.0f - 0.456f) / 0.224f;
    const float b = (255.0f / 255.0f - 0.406f) / 0.225f;
    QCOMPARE(t[0][0][1][2].item<float>(), r);
    QCOMPARE(t[0][1][3][0].item<float>(), g);
    QCOMPARE(t[0][2][0][0].item<float>(), b);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, expnet::image_to_model_input(cv::Mat(), 4));
  }

  // ---- formats and conversions ----
  void decodesJpegAndPngAsRgb() {
    const cv::Mat bgr = noiseBgr(40, 30, 1);
    const cv::Mat rgb = expnet::decode_image_rgb(encode(bgr, ".png"), "noise.png");
    QCOMPARE(rgb.type(), CV_8UC3);
    QCOMPARE(rgbAt(rgb, 3, 5), cv::Vec3b(bgr.at<cv::Vec3b>(3, 5)[2], bgr.at<cv::Vec3b>(3, 5)[1], bgr.at<cv::Vec3b>(3, 5)[0]));
    for (const char* ext : {".jpg", ".bmp", ".tiff", ".webp", ".ppm"}) {
      const cv::Mat m = expnet::decode_image_rgb(encode(gradientBgr(40, 30), ext), std::string("x") + ext);
      QCOMPARE(m.cols, 40);
      QCOMPARE(m.rows, 30);
      QVERIFY2(maxAbsDiff(m, [] { cv::Mat t; cv::cvtColor(gradientBgr(40, 30), t, cv::COLOR_BGR2RGB); return t; }()) <= 8, ext);
    }
  }

  void convertsGreyAlphaPaletteAnd16Bit() {
    // grey 8-bit: replicated
    const cv::Mat g = expnet::decode_image_rgb(makePng({2, 1, 8, 0, {0, 77}}), "grey.png");
    QCOMPARE(rgbAt(g, 0, 1), cv::Vec3b(77, 77, 77));
    // grey + alpha: alpha dropped (PIL convert('RGB') does not composite)
    const cv::Mat la = expnet::decode_image_rgb(makePng({2, 1, 8, 4, {90, 0, 200, 128}}), "la.png");
    QCOMPARE(rgbAt(la, 0, 0), cv::Vec3b(90, 90, 90));
    QCOMPARE(rgbAt(la, 0, 1), cv::Vec3b(200, 200, 200));
    // RGBA: alpha dropped, transparent pixels keep their colour
    const cv::Mat rgba = expnet::decode_image_rgb(makePng({2, 1, 8, 6, {10, 20, 30, 0, 40, 50, 60, 255}}), "rgba.png");
    QCOMPARE(rgbAt(rgba, 0, 0), cv::Vec3b(10, 20, 30));
    QCOMPARE(rgbAt(rgba, 0, 1), cv::Vec3b(40, 50, 60));
    // palette (with and without tRNS): colours looked up
    PngSpec palette{3, 1, 8, 3, {2, 0, 1}, {255, 0, 0, 0, 128, 0, 1, 2, 250}};
    const cv::Mat p = expnet::decode_image_rgb(makePng(palette), "palette.png");
    QCOMPARE(rgbAt(p, 0, 0), cv::Vec3b(1, 2, 250));
    QCOMPARE(rgbAt(p, 0, 1), cv::Vec3b(255, 0, 0));
    QCOMPARE(rgbAt(p, 0, 2), cv::Vec3b(0, 128, 0));
    palette.transparency = {0, 255, 7};
    QCOMPARE(rgbAt(expnet::decode_image_rgb(makePng(palette), "palette_trns.png"), 0, 1), cv::Vec3b(255, 0, 0));
    // 4-bit palette (packed samples)
    const cv::Mat p4 = expnet::decode_image_rgb(makePng({2, 1, 4, 3, {0x21}, {9, 9, 9, 1, 2, 3, 4, 5, 6}}), "p4.png");
    QCOMPARE(rgbAt(p4, 0, 0), cv::Vec3b(4, 5, 6));
    QCOMPARE(rgbAt(p4, 0, 1), cv::Vec3b(1, 2, 3));
    // 16-bit RGB: high byte, as Pillow's RGB;16B unpacker (0x80FF -> 0x80, not 129)
    const cv::Mat c16 = expnet::decode_image_rgb(makePng({2, 1, 16, 2, {0x00, 0xFF, 0x80, 0xFF, 0xFF, 0xFF,  //
                                                                            0x01, 0x00, 0x7F, 0xFF, 0x12, 0x34}}),
                                                 "rgb16.png");
    QCOMPARE(rgbAt(c16, 0, 0), cv::Vec3b(0x00, 0x80, 0xFF));
    QCOMPARE(rgbAt(c16, 0, 1), cv::Vec3b(0x01, 0x7F, 0x12));
    // 16-bit RGBA: same, alpha dropped
    const cv::Mat c16a = expnet::decode_image_rgb(
        makePng({1, 1, 16, 6, {0xAB, 0xCD, 0x12, 0x34, 0x56, 0x78, 0x00, 0x01}}), "rgba16.png");
    QCOMPARE(rgbAt(c16a, 0, 0), cv::Vec3b(0xAB, 0x12, 0x56));
    // 16-bit grey: high byte too, never clipped to white (Pillow 9.4 clips
    // values over 255 when converting its 'I' mode; we scale instead)
    const cv::Mat g16 = expnet::decode_image_rgb(makePng({3, 1, 16, 0, {0x00, 0xFF, 0x80, 0x00, 0xFF, 0xFF}}), "grey16.png");
    QCOMPARE(rgbAt(g16, 0, 0), cv::Vec3b(0, 0, 0));
    QCOMPARE(rgbAt(g16, 0, 1), cv::Vec3b(0x80, 0x80, 0x80));
    QCOMPARE(rgbAt(g16, 0, 2), cv::Vec3b(255, 255, 255));
    // 1-bit grey
    const cv::Mat bw = expnet::decode_image_rgb(makePng({8, 1, 1, 0, {0xA0}}), "bw.png");
    QCOMPARE(rgbAt(bw, 0, 0), cv::Vec3b(255, 255, 255));
    QCOMPARE(rgbAt(bw, 0, 1), cv::Vec3b(0, 0, 0));
    QCOMPARE(rgbAt(bw, 0, 2), cv::Vec3b(255, 255, 255));
    // grey JPEG (OpenCV-written)
    cv::Mat greyMat(16, 16, CV_8UC1, cv::Scalar(100));
    QCOMPARE(rgbAt(expnet::decode_image_rgb(encode(greyMat, ".jpg"), "grey.jpg"), 8, 8), cv::Vec3b(100, 100, 100));
  }

  // A CMYK JPEG written by Pillow 9.4 (Adobe, inverted): blocks of red, green,
  // blue and 25% black. Pillow's convert('RGB') gives (255,0,0), (0,255,0),
  // (0,0,255), (191,191,191); OpenCV's CMYK conversion rounds differently by
  // at most one level.
  void convertsCmykJpeg() {
    const cv::Mat m = expnet::load_image_rgb(QStringLiteral(EXPNET_TEST_DATA_DIR "/image/cmyk_32x8.jpg").toStdString());
    QCOMPARE(m.cols, 32);
    QCOMPARE(m.rows, 8);
    const cv::Vec3b pillow[4] = {{255, 0, 0}, {0, 255, 0}, {0, 0, 255}, {191, 191, 191}};
    for (int i = 0; i < 4; ++i)
      for (int y = 0; y < 8; ++y)
        for (int x = i * 8; x < i * 8 + 8; ++x)
          for (int c = 0; c < 3; ++c)
            QVERIFY2(std::abs(int(rgbAt(m, y, x)[c]) - int(pillow[i][c])) <= 1,
                     qPrintable(QStringLiteral("block %1 pixel (%2,%3) channel %4: %5").arg(i).arg(x).arg(y).arg(c).arg(rgbAt(m, y, x)[c])));
  }

  void exifOrientationAppliedByDefault() {
    const cv::Mat bgr = gradientBgr(48, 24);
    const Bytes plain = encode(bgr, ".jpg", {cv::IMWRITE_JPEG_QUALITY, 95});
    const cv::Mat stored = expnet::decode_image_rgb(plain, "plain.jpg");
    expnet::ImageLoadOptions ignore;
    ignore.apply_exif = false;
    for (int orientation = 1; orientation <= 8; ++orientation) {
      const Bytes tagged = withExifOrientation(plain, orientation);
      const QString path = write(QStringLiteral("exif%1.jpg").arg(orientation), tagged);
      const cv::Mat applied = expnet::load_image_rgb(path.toStdString());
      QVERIFY2(differingValues(applied, orient(stored, orientation)) == 0,
               qPrintable(QStringLiteral("orientation %1: %2x%3").arg(orientation).arg(applied.cols).arg(applied.rows)));
      const cv::Mat ignored = expnet::load_image_rgb(path.toStdString(), ignore);
      QVERIFY2(differingValues(ignored, stored) == 0, qPrintable(QStringLiteral("orientation %1 ignored").arg(orientation)));
    }
    QCOMPARE(expnet::load_image_rgb(file("exif6.jpg").toStdString()).cols, 24);  // rotated: portrait
  }

  // ---- bad files: a clear ImageError with a reason, never a crash ----
  void truncatedJpegIsAnError() {
    const Bytes jpeg = encode(noiseBgr(64, 48, 2), ".jpg");
    QCOMPARE(loadReason(write("whole.jpg", jpeg)), QStringLiteral("ok"));
    for (size_t cut : {size_t(1), size_t(2), size_t(100), jpeg.size() / 2, size_t(jpeg.size() - 4)}) {
      const Bytes part(jpeg.begin(), jpeg.end() - static_cast<long>(cut));
      QCOMPARE(loadReason(write(QStringLiteral("cut%1.jpg").arg(cut), part)), QStringLiteral("truncated"));
    }
    // Progressive JPEG: several scans.
    const Bytes progressive = encode(noiseBgr(64, 48, 3), ".jpg", {cv::IMWRITE_JPEG_PROGRESSIVE, 1});
    QCOMPARE(reasonOf([&] { expnet::decode_image_rgb(progressive, "p.jpg"); }), QStringLiteral("ok"));
    const Bytes progressiveCut(progressive.begin(), progressive.begin() + static_cast<long>(progressive.size() * 2 / 3));
    QCOMPARE(reasonOf([&] { expnet::decode_image_rgb(progressiveCut, "p.jpg"); }), QStringLiteral("truncated"));
    // Bytes after the end marker are fine (Pillow reads such files too).
    Bytes trailing = jpeg;
    for (char c : std::string("trailing data")) trailing.push_back(uint8_t(c));
    QCOMPARE(reasonOf([&] { expnet::decode_image_rgb(trailing, "t.jpg"); }), QStringLiteral("ok"));
    // The message names the file, the problem and what to do.
    try {
      expnet::load_image_rgb(file("cut100.jpg").toStdString());
      QFAIL("no error");
    } catch (const expnet::ImageError& e) {
      const QString what = QString::fromUtf8(e.what());
      QVERIFY2(what.contains(file("cut100.jpg")) && what.contains("truncated") && what.contains("get the complete file"),
               e.what());
      QCOMPARE(QString::fromStdString(e.path()), file("cut100.jpg"));
    }
  }

  void truncatedPngIsAnError() {
    const Bytes png = encode(noiseBgr(200, 150, 4), ".png");  // OpenCV writes 8 KiB IDAT chunks
    QVERIFY(png.size() > 40000);
    for (size_t keep : {size_t(8), size_t(20), size_t(40), png.size() / 2, png.size() - 13})
      QCOMPARE(reasonOf([&] { expnet::decode_image_rgb(Bytes(png.begin(), png.begin() + static_cast<long>(keep)), "t.png"); }),
               QStringLiteral("truncated"));
    // Cut exactly between two IDAT chunks: the chunk walk ends cleanly, the
    // image data is incomplete.
    size_t pos = 8, boundary = 0;
    int idats = 0;
    while (pos + 8 <= png.size()) {
      const size_t length = (size_t(png[pos]) << 24) | (size_t(png[pos + 1]) << 16) | (size_t(png[pos + 2]) << 8) | png[pos + 3];
      const std::string type(png.begin() + static_cast<long>(pos) + 4, png.begin() + static_cast<long>(pos) + 8);
      pos += 12 + length;
      if (type == "IDAT" && ++idats == 2) boundary = pos;
    }
    QVERIFY2(idats >= 3, "expected several IDAT chunks");
    QCOMPARE(reasonOf([&] { expnet::decode_image_rgb(Bytes(png.begin(), png.begin() + static_cast<long>(boundary)), "t.png"); }),
             QStringLiteral("truncated"));
    // Only the final IEND chunk missing or cut: the image is whole; Pillow
    // reads it, so do we.
    for (long cut : {1, 4, 5, 8, 11, 12})
      QVERIFY2(reasonOf([&] { expnet::decode_image_rgb(Bytes(png.begin(), png.end() - cut), "t.png"); }) == "ok",
               qPrintable(QString::number(cut)));
  }

  void corruptFilesAreErrors() {
    Bytes png = encode(noiseBgr(32, 32, 5), ".png");
    png[png.size() / 2] ^= 0xFF;  // inside IDAT: CRC and zlib data wrong
    QCOMPARE(reasonOf([&] { expnet::decode_image_rgb(png, "bad.png"); }), QStringLiteral("corrupt"));
    Bytes jpeg = encode(noiseBgr(32, 32, 6), ".jpg");
    // Destroy the quantisation/Huffman tables but keep the structure.
    Bytes broken(jpeg.begin(), jpeg.begin() + 4);
    broken.insert(broken.end(), {0x00, 0x02});  // APP0 of length 2 where JFIF was: fine
    broken.insert(broken.end(), {0xFF, 0xD9});
    QVERIFY(reasonOf([&] { expnet::decode_image_rgb(broken, "bad.jpg"); }) == QStringLiteral("corrupt"));
  }

  void emptyRandomTextDirectoryMissing() {
    QCOMPARE(loadReason(write("empty.png", {})), QStringLiteral("empty"));
    std::mt19937 rng(9);
    Bytes random(4096);
    for (auto& b : random) b = uint8_t(rng());
    random[0] = 0x42;  // not a magic number we know
    random[1] = 0x00;
    QCOMPARE(loadReason(write("random.bin", random)), QStringLiteral("not_an_image"));
    const std::string text = "this is not a picture\n";
    QCOMPARE(loadReason(write("text.jpg", Bytes(text.begin(), text.end()))), QStringLiteral("not_an_image"));
    QCOMPARE(loadReason(tmp_), QStringLiteral("not_a_file"));
    QCOMPARE(loadReason(file("does-not-exist.jpg")), QStringLiteral("not_found"));
    QCOMPARE(loadReason(file("no-folder/x.jpg")), QStringLiteral("not_found"));
    const std::string gif = "GIF89a\x01\x00\x01\x00\x00\x00\x00;";
    QCOMPARE(loadReason(write("anim.gif", Bytes(gif.begin(), gif.end()))), QStringLiteral("unsupported"));
    // JPEG/PNG magic followed by garbage
    QCOMPARE(reasonOf([] { expnet::decode_image_rgb({0xFF, 0xD8, 0xFF, 0xE0, 0x00}, "x.jpg"); }), QStringLiteral("truncated"));
    QCOMPARE(reasonOf([] { expnet::decode_image_rgb({0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'}, "x.png"); }),
             QStringLiteral("truncated"));
  }

  void unreadableFile() {
    const QString path = write("secret.png", encode(noiseBgr(8, 8, 1), ".png"));
    QFile::setPermissions(path, QFileDevice::Permissions());
    if (::geteuid() != 0) {
      QCOMPARE(loadReason(path), QStringLiteral("unreadable"));
      return;
    }
    // Root reads anything: check through the CLI run as user nobody instead.
    if (!QFileInfo::exists(QStringLiteral("/usr/bin/setpriv")))
      QSKIP("running as root without setpriv: root can read a chmod 000 file");
    const auto r = expnet_test::runProcess(QStringLiteral("/usr/bin/setpriv"),
                                           {"--reuid=65534", "--regid=65534", "--clear-groups", expnet_test::cliPath(),
                                            "image", "check", "--json", path});
    if (r.err.contains("Permission denied") && !r.out.contains(path.toUtf8()))
      QSKIP("user nobody cannot run the CLI from the build tree here");
    QCOMPARE(r.exitCode, 1);
    const QJsonObject line = QJsonDocument::fromJson(r.out.trimmed()).object();
    QCOMPARE(line["reason"].toString(), QStringLiteral("unreadable"));
    QVERIFY2(line["error"].toString().contains("permissions"), r.out.constData());
  }

  void decompressionBombsAreRefusedBeforeDecoding() {
    // A real PNG header claiming 100,000 x 100,000 pixels (10 Gpx) with a tiny body.
    PngSpec bomb{100000, 100000, 8, 0, Bytes(100000, 0)};
    bomb.height = 1;
    Bytes png = makePng(bomb);
    png[20] = 0x00; png[21] = 0x01; png[22] = 0x86; png[23] = 0xA0;  // height 100000 in IHDR
    const uint32_t crc = crc32(png.data() + 12, 17);
    for (int i = 0; i < 4; ++i) png[29 + i] = uint8_t(crc >> (24 - 8 * i));
    int64_t w = 0, h = 0;
    QVERIFY(expnet::probe_image_size(png.data(), png.size(), w, h));
    QCOMPARE(w, int64_t(100000));
    QCOMPARE(h, int64_t(100000));
    QCOMPARE(reasonOf([&] { expnet::decode_image_rgb(png, "bomb.png"); }), QStringLiteral("too_large"));
    // A JPEG whose frame header claims 65000 x 65000.
    Bytes jpeg = encode(noiseBgr(16, 16, 2), ".jpg");
    for (size_t i = 2; i + 9 < jpeg.size(); ++i)
      if (jpeg[i] == 0xFF && jpeg[i + 1] == 0xC0) {
        jpeg[i + 5] = 0xFD; jpeg[i + 6] = 0xE8; jpeg[i + 7] = 0xFD; jpeg[i + 8] = 0xE8;
        break;
      }
    QCOMPARE(reasonOf([&] { expnet::decode_image_rgb(jpeg, "bomb.jpg"); }), QStringLiteral("too_large"));
    // A real image over a lowered limit; the default limit is Pillow's.
    const Bytes small = encode(noiseBgr(100, 50, 3), ".png");
    expnet::ImageLoadOptions limit;
    QCOMPARE(limit.max_pixels, int64_t(178956970));
    limit.max_pixels = 4999;
    QCOMPARE(reasonOf([&] { expnet::decode_image_rgb(small, "s.png", limit); }), QStringLiteral("too_large"));
    limit.max_pixels = 5000;  // the limit itself is allowed
    QCOMPARE(reasonOf([&] { expnet::decode_image_rgb(small, "s.png", limit); }), QStringLiteral("ok"));
    limit.max_pixels = 4999;
    for (const char* ext : {".bmp", ".tiff", ".webp", ".ppm", ".jpg"})
      QVERIFY2(reasonOf([&] { expnet::decode_image_rgb(encode(noiseBgr(100, 50, 3), ext), "s", limit); }) == "too_large", ext);
  }

  // Mutated and cut files of every format: an image or an ImageError, never
  // a crash or another exception (also run under ASan while developing).
  void mutatedFilesNeverCrash() {
    std::mt19937 rng(20240601);
    int errors = 0, decoded = 0;
    for (const char* ext : {".jpg", ".png", ".bmp", ".tiff", ".webp", ".ppm"}) {
      const Bytes valid = encode(noiseBgr(37, 23, 8), ext);
      for (int i = 0; i < 60; ++i) {
        Bytes b = valid;
        switch (i % 3) {
          case 0:
            for (int k = 0; k < 1 + int(rng() % 8); ++k) b[rng() % b.size()] = uint8_t(rng());
            break;
          case 1: b.resize(rng() % b.size()); break;
          default: b.insert(b.begin() + static_cast<long>(rng() % b.size()), rng() % 50, uint8_t(rng()));
        }
        try {
          const cv::Mat m = expnet::decode_image_rgb(b, "mutated");
          QCOMPARE(m.type(), CV_8UC3);
          ++decoded;
        } catch (const expnet::ImageError&) {
          ++errors;
        }
      }
    }
    QVERIFY(errors > 0 && decoded > 0);
  }

  void sizeProbeReadsHeaders() {
    for (const char* ext : {".png", ".jpg", ".bmp", ".tiff", ".webp", ".ppm", ".pgm"}) {
      cv::Mat m = noiseBgr(37, 23, 4);
      if (std::string(ext) == ".pgm") cv::cvtColor(m, m, cv::COLOR_BGR2GRAY);
      const Bytes b = encode(m, ext);
      int64_t w = 0, h = 0;
      QVERIFY2(expnet::probe_image_size(b.data(), b.size(), w, h), ext);
      QVERIFY2(w == 37 && h == 23, qPrintable(QStringLiteral("%1: %2x%3").arg(ext).arg(w).arg(h)));
    }
  }

  // ---- the CLI end to end ----
  void cliImageCheck() {
    const QString good = write("good.png", encode(noiseBgr(20, 10, 1), ".png"));
    const Bytes jpeg = encode(noiseBgr(20, 10, 1), ".jpg");
    const QString bad = write("bad.jpg", Bytes(jpeg.begin(), jpeg.end() - 50));
    auto r = expnet_test::runProcess(expnet_test::cliPath(), {"image", "check", "--json", good, bad});
    QCOMPARE(r.exitCode, 1);
    const QList<QByteArray> lines = r.out.trimmed().split('\n');
    QCOMPARE(lines.size(), 2);
    const QJsonObject first = QJsonDocument::fromJson(lines[0]).object();
    QCOMPARE(first["image"].toString(), good);
    QCOMPARE(first["ok"].toBool(), true);
    QCOMPARE(first["width"].toInt(), 20);
    QCOMPARE(first["height"].toInt(), 10);
    const QJsonObject second = QJsonDocument::fromJson(lines[1]).object();
    QCOMPARE(second["image"].toString(), bad);
    QCOMPARE(second["ok"].toBool(), false);
    QCOMPARE(second["reason"].toString(), QStringLiteral("truncated"));
    QVERIFY(second["error"].toString().contains(bad));

    // Folders are walked (as `expnet caption` does); a folder without images is an error.
    const QString folder = tmp_ + QStringLiteral("/cli_folder");
    QDir().mkpath(folder + QStringLiteral("/sub"));
    QDir().mkpath(tmp_ + QStringLiteral("/cli_empty"));
    writeBytes(folder + QStringLiteral("/sub/b.png"), encode(noiseBgr(6, 4, 1), ".png"));
    writeBytes(folder + QStringLiteral("/a.jpg"), {});
    r = expnet_test::runProcess(expnet_test::cliPath(),
                                {"image", "check", "--json", folder, tmp_ + QStringLiteral("/cli_empty")});
    QCOMPARE(r.exitCode, 1);
    const QList<QByteArray> folderLines = r.out.trimmed().split('\n');
    QCOMPARE(folderLines.size(), 3);
    QCOMPARE(QJsonDocument::fromJson(folderLines[0]).object()["image"].toString(), folder + QStringLiteral("/a.jpg"));
    QCOMPARE(QJsonDocument::fromJson(folderLines[0]).object()["reason"].toString(), QStringLiteral("empty"));
    QCOMPARE(QJsonDocument::fromJson(folderLines[1]).object()["image"].toString(), folder + QStringLiteral("/sub/b.png"));
    QCOMPARE(QJsonDocument::fromJson(folderLines[1]).object()["ok"].toBool(), true);
    QCOMPARE(QJsonDocument::fromJson(folderLines[2]).object()["reason"].toString(), QStringLiteral("no_images"));

    r = expnet_test::runProcess(expnet_test::cliPath(), {"image", "check", good});
    QCOMPARE(r.exitCode, 0);
    QVERIFY2(r.out.startsWith("ok"), r.out.constData());
    r = expnet_test::runProcess(expnet_test::cliPath(), {"image", "check", "--max-pixels", "100", good});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.out.contains("too_large"), r.out.constData());
  }

  // A file name that is not UTF-8 (byte 0xff) or holds a terminal escape: every line is still
  // written, as valid JSON, with the odd bytes as \xNN; nothing else in the folder is lost.
  void oddFileNamesNeverStopABatch() {
    const std::string folder = (tmp_ + QStringLiteral("/cli_odd_names")).toStdString();
    std::filesystem::create_directories(folder);
    const Bytes png = encode(noiseBgr(8, 6, 2), ".png");
    for (const std::string name : {"bad\xff.png", "esc\x1b[31m.png", "plain.png"}) {
      std::ofstream out(folder + "/" + name, std::ios::binary);
      out.write(reinterpret_cast<const char*>(png.data()), static_cast<std::streamsize>(png.size()));
    }
    auto r = expnet_test::runProcess(expnet_test::cliPath(), {"image", "check", "--json", QString::fromStdString(folder)});
    QVERIFY2(r.exitCode == 0, r.err.constData());
    const QList<QByteArray> lines = r.out.trimmed().split('\n');
    QCOMPARE(lines.size(), 3);
    QStringList images;
    for (const auto& line : lines) {
      const QJsonObject object = QJsonDocument::fromJson(line).object();
      QVERIFY2(object["ok"].toBool(), line.constData());
      images << object["image"].toString().section('/', -1);
    }
    images.sort();
    QCOMPARE(images, QStringList({"bad\\xff.png", "esc\u001b[31m.png", "plain.png"}));
    r = expnet_test::runProcess(expnet_test::cliPath(), {"image", "check", QString::fromStdString(folder)});
    QCOMPARE(r.exitCode, 0);
    QVERIFY2(!r.out.contains('\x1b') && !r.out.contains('\xff') && r.out.contains("esc\\x1b[31m.png"), r.out.constData());
    // A symlink loop given by name is that argument's error; the files after it are still checked.
    std::filesystem::create_symlink(folder + "/loop-b", folder + "/loop-a");
    std::filesystem::create_symlink(folder + "/loop-a", folder + "/loop-b");
    r = expnet_test::runProcess(expnet_test::cliPath(), {"image", "check", QString::fromStdString(folder + "/loop-a"),
                                                         QString::fromStdString(folder + "/plain.png")});
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.out.contains("symbolic links") && r.out.contains("ok     "), r.out.constData());
    // Captioning the folder: three captions, one JSON line each.
    r = expnet_test::runProcess(expnet_test::cliPath(), {"caption", "--model", "demo", "--json", QString::fromStdString(folder)});
    QVERIFY2(r.exitCode == 0, r.err.constData());
    const QList<QByteArray> captions = r.out.trimmed().split('\n');
    QCOMPARE(captions.size(), 3);
    for (const auto& line : captions)
      QVERIFY2(QJsonDocument::fromJson(line).object()["captions"].toArray().size() > 0, line.constData());
  }
};

QTEST_GUILESS_MAIN(TestImage)
#include "test_image.moc"

// The zip entry check (expnet/checkpoint/zip_entries.h) on real archives and on
// archives made here with minizip and zlib: deflate bombs, sizes that lie,
// duplicates, truncations, random bytes. No LibTorch: this file also builds in
// the EXPNET_SANITIZE build (ASan+UBSan).
#include <QElapsedTimer>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include <minizip/zip.h>
#include <zlib.h>

#include <random>
#include <string>

#include "expnet/checkpoint/zip_entries.h"
#include "sanitize_test_util.h"
#include "support/fixtures.h"

using expnet::read_zip_entries;
using expnet::read_zip_entries_file;
using expnet::ZipEntry;
using expnet::ZipError;

namespace {

using sanitize_test::read_file;

// One entry to write: `data` then `zeros` zero bytes, stored or deflated; the
// central directory declares `declared` inflated bytes when given (a lie).
struct Item {
  std::string name, data;
  bool deflate = true;
  uint64_t zeros = 0;
  int64_t declared = -1;
};

// Deflates (raw) or copies `item`'s bytes into the open entry; returns the
// inflated size and CRC, which the caller may misdeclare.
std::pair<uint64_t, uLong> write_body(zipFile zip, const Item& item) {
  uLong crc = crc32(0, nullptr, 0);
  uint64_t total = 0;
  z_stream z{};
  if (item.deflate) deflateInit2(&z, 1, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  std::string zeros(1 << 20, '\0'), out(1 << 16, '\0');
  auto feed = [&](const char* data, size_t n, bool last) {
    crc = crc32(crc, reinterpret_cast<const Bytef*>(data), static_cast<uInt>(n));
    total += n;
    if (!item.deflate) {
      zipWriteInFileInZip(zip, data, static_cast<unsigned>(n));
      return;
    }
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data));
    z.avail_in = static_cast<uInt>(n);
    do {
      z.next_out = reinterpret_cast<Bytef*>(out.data());
      z.avail_out = static_cast<uInt>(out.size());
      deflate(&z, last ? Z_FINISH : Z_NO_FLUSH);
      zipWriteInFileInZip(zip, out.data(), static_cast<unsigned>(out.size() - z.avail_out));
    } while (z.avail_out == 0);
  };
  feed(item.data.data(), item.data.size(), item.zeros == 0);
  for (uint64_t left = item.zeros; left > 0;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(left, zeros.size()));
    left -= n;
    feed(zeros.data(), n, left == 0);
  }
  if (item.deflate) deflateEnd(&z);
  return {total, crc};
}

QString write_zip(const QString& path, const std::vector<Item>& items) {
  zipFile zip = zipOpen64(path.toUtf8().constData(), APPEND_STATUS_CREATE);
  for (const Item& item : items) {
    zip_fileinfo info{};
    zipOpenNewFileInZip2_64(zip, item.name.c_str(), &info, nullptr, 0, nullptr, 0, nullptr,
                            item.deflate ? Z_DEFLATED : 0, 1, /*raw=*/1, /*zip64=*/item.declared > 0xFFFFFFFFll);
    const auto [size, crc] = write_body(zip, item);
    zipCloseFileInZipRaw64(zip, item.declared >= 0 ? static_cast<uint64_t>(item.declared) : size, crc);
  }
  zipClose(zip, nullptr);
  return path;
}

const std::string kPickle = "\x80\x02N.";

// The error of reading `path` both ways ("" when it is accepted), under 5 s each.
QString error_of(const QString& path) {
  QString errors[2];
  for (int way = 0; way < 2; ++way) {
    QElapsedTimer timer;
    timer.start();
    try {
      if (way == 0) read_zip_entries_file(path.toStdString());
      else read_zip_entries(read_file(path), path.toStdString());
    } catch (const ZipError& e) {
      errors[way] = QString::fromUtf8(e.what());
    }
    if (timer.elapsed() > 5000) return QStringLiteral("took %1 ms").arg(timer.elapsed());
  }
  if (errors[0] != errors[1]) return "file and buffer disagree: " + errors[0] + " | " + errors[1];
  return errors[0];
}

}  // namespace

class TestZipEntries : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString path(const char* name) const { return dir_.filePath(name); }

 private slots:
  void realCheckpointListsItsRecords() {
    EXPNET_FIXTURE(pth, "reference/tiny/checkpoint.pth");
    const auto entries = read_zip_entries_file(pth.toStdString());
    QVERIFY(entries.size() > 240);
    bool data_pkl = false;
    for (const ZipEntry& e : entries) {
      QVERIFY(!e.deflated);  // torch.save stores records
      QCOMPARE(e.size, e.compressed);
      data_pkl = data_pkl || e.name == "checkpoint/data.pkl";
    }
    QVERIFY(data_pkl);
    const auto again = read_zip_entries(read_file(pth), "buffer");
    QCOMPARE(again.size(), entries.size());
  }

  void validDeflatedAndStoredEntries() {
    const QString p = write_zip(path("ok.zip"), {{"archive/data.pkl", kPickle, true, 5'000'000},
                                                 {"archive/data/0", std::string(4096, 'x'), false},
                                                 {"archive/version", "3\n", true}});
    QCOMPARE(error_of(p), QString());
    const auto entries = read_zip_entries_file(p.toStdString());
    QCOMPARE(entries.size(), size_t(3));
    QCOMPARE(entries[0].size, uint64_t(5'000'004));  // under the 16 MiB free of the ratio rule
    QVERIFY(entries[0].deflated);
    QCOMPARE(entries[1].size, uint64_t(4096));
  }

  void deflateBombIsRefusedBeforeInflating() {
    // A valid pickle then 400 MiB of zeros: about 400 KB in the archive.
    const QString p = write_zip(path("bomb.zip"), {{"archive/data.pkl", kPickle, true, uint64_t{400} << 20}});
    QVERIFY(QFileInfo(p).size() < 2'000'000);
    const QString err = error_of(p);
    QVERIFY2(err.contains("zip entry 'archive/data.pkl' would inflate") && err.contains("re-save"), qPrintable(err));
    // The same declaring 5 GiB: a zip64 central directory, whose sizes
    // Debian's minizip leaves to the extra field.
    const QString p64 = write_zip(path("bomb64.zip"), {{"archive/data.pkl", kPickle, true, uint64_t{400} << 20,
                                                        int64_t{5} << 30}});
    const QString err64 = error_of(p64);
    QVERIFY2(err64.contains("would inflate") && err64.contains("to 5368709120"), qPrintable(err64));
  }

  void manySmallBombsAreRefusedTogether() {
    std::vector<Item> items;
    for (int i = 0; i < 40; ++i) items.push_back({"archive/data/" + std::to_string(i), "", true, 4'000'000});
    const QString err = error_of(write_zip(path("bombs.zip"), items));
    QVERIFY2(err.contains("deflated entries would inflate"), qPrintable(err));
  }

  void sizesThatLieAreRefused() {
    // Declares 100 bytes, inflates to 10 MB: stopped at the declared size.
    QString err = error_of(write_zip(path("lie.zip"), {{"archive/data.pkl", kPickle, true, 10'000'000, 100}}));
    QVERIFY2(err.contains("inflates past its declared size of 100 bytes"), qPrintable(err));
    // Declares more than it holds.
    err = error_of(write_zip(path("short.zip"), {{"archive/data.pkl", kPickle, true, 0, 1000}}));
    QVERIFY2(err.contains("not the declared 1000"), qPrintable(err));
    // A stored entry whose two sizes differ.
    err = error_of(write_zip(path("stored.zip"), {{"archive/data/0", "abcd", false, 0, 1'000'000'000}}));
    QVERIFY2(err.contains("is stored but declares"), qPrintable(err));
  }

  void duplicatesAndGarbage() {
    QString err = error_of(write_zip(path("dup.zip"), {{"a/data.pkl", kPickle}, {"a/data.pkl", kPickle}}));
    QVERIFY2(err.contains("appears twice"), qPrintable(err));
    QVERIFY_THROWS_EXCEPTION(ZipError, read_zip_entries("", "empty"));
    QVERIFY_THROWS_EXCEPTION(ZipError, read_zip_entries("PK\x03\x04 not a zip", "junk"));
    QVERIFY_THROWS_EXCEPTION(ZipError, read_zip_entries_file(path("missing.zip").toStdString()));
  }

  void truncationsAndMutationsNeverCrash() {
    const std::string zip = read_file(write_zip(path("small.zip"), {{"archive/data.pkl", kPickle + "abc", true, 1000},
                                                                    {"archive/data/0", "0123456789", false},
                                                                    {"archive/version", "3\n", true}}));
    QVERIFY(read_zip_entries(zip, "small").size() == 3);
    for (size_t n = 0; n < zip.size(); ++n)
      QVERIFY_THROWS_EXCEPTION(ZipError, read_zip_entries(std::string_view(zip).substr(0, n), "prefix"));
    std::mt19937 rng(5);
    int refused = 0;
    for (int round = 0; round < 2000; ++round) {
      std::string data = zip;
      for (int i = 0; i < 1 + round % 4; ++i) data[rng() % data.size()] = static_cast<char>(rng());
      try {
        for (const ZipEntry& e : read_zip_entries(data, "mutated")) QVERIFY(e.deflated || e.size == e.compressed);
      } catch (const ZipError&) {
        ++refused;
      }
    }
    QVERIFY(refused > 0);
  }
};

QTEST_GUILESS_MAIN(TestZipEntries)
#include "test_zip_entries.moc"

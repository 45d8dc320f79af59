#include <QtTest>

#include "expnet/system/system.h"

#include <malloc.h>

#include <cstdlib>
#include <cstring>

class TestSystem : public QObject {
  Q_OBJECT
 private slots:
  void threadsSetBothPools() {
    expnet::apply_runtime({1, "cpu"});
    QCOMPARE(expnet::torch_threads(), 1);
    const int blas = expnet::blas_threads();
    if (blas >= 0) QCOMPARE(blas, 1);
    expnet::apply_runtime({2, "cpu"});
    QCOMPARE(expnet::torch_threads(), 2);
    if (blas >= 0) QCOMPARE(expnet::blas_threads(), 2);
  }
  void zeroThreadsMeansAllCores() {
    expnet::apply_runtime({0, "cpu"});
    QCOMPARE(expnet::torch_threads(), expnet::hardware_threads());
  }
  void badDevicesAreClearErrors() {
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, expnet::check_device("gpu"));
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, expnet::apply_runtime({-1, "cpu"}));
    try {
      expnet::check_device("cuda:7");
      QSKIP("a CUDA device 7 exists here");
    } catch (const std::runtime_error& e) {
      QVERIFY(QString::fromUtf8(e.what()).contains(QStringLiteral("cuda")));
    }
  }
  void doctorMeasuresMatmul() {
    expnet::apply_runtime({0, "cpu"});
    const auto report = expnet::run_doctor(3);
    QVERIFY(report.gflops > 0.1);
    QVERIFY(report.matmul_ms > 0);
    QVERIFY(!report.devices.empty());
    QCOMPARE(QString::fromStdString(report.devices.front()), QStringLiteral("cpu"));
    // Below the healthy bound the doctor must say how to fix it.
    const bool warned = !report.warnings.empty() &&
                        QString::fromStdString(report.warnings.front()).contains(QStringLiteral("libopenblas0-pthread"));
    QCOMPARE(warned, report.gflops < expnet::kMinHealthyGflops);
  }
  // A large temporary (64 MB, like a Swin-L activation) comes from the heap,
  // not from pages mapped for it alone, and stays there for reuse once freed:
  // without keep_freed_memory_for_reuse glibc maps it and unmaps it on free.
  void largeTemporariesAreKeptForReuse() {
    if (std::getenv("MALLOC_MMAP_THRESHOLD_") || std::getenv("MALLOC_TRIM_THRESHOLD_") || std::getenv("MALLOC_TOP_PAD_") ||
        std::getenv("GLIBC_TUNABLES"))
      QSKIP("malloc tunables set in the environment: the program leaves them alone");
    expnet::keep_freed_memory_for_reuse();
    constexpr size_t kBytes = size_t{64} << 20;
    const size_t mapped_before = mallinfo2().hblkhd;
    auto* block = static_cast<char*>(std::malloc(kBytes));
    QVERIFY(block != nullptr);
    std::memset(block, 1, kBytes);
    asm volatile("" : : "r"(block) : "memory");  // the block is used: no elision
    QCOMPARE(mallinfo2().hblkhd, mapped_before);
    std::free(block);
    QVERIFY(mallinfo2().fordblks >= kBytes);
  }
  void versionInfoIsFilled() {
    const auto info = expnet::version_info();
    QVERIFY(!info.program.empty());
    QVERIFY(!info.libtorch.empty());
    QVERIFY(!info.opencv.empty());
    QVERIFY(QString::fromStdString(info.sqlite).startsWith(QStringLiteral("3.")));
  }
};

QTEST_GUILESS_MAIN(TestSystem)
#include "test_system.moc"

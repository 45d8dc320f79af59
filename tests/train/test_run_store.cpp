// Run store: round trip of every record kind, unique names, bad files, and a
// reader connection reading while a writer thread logs (WAL).
#include <QtTest>

#include <atomic>
#include <fstream>
#include <thread>

#include "expnet/train/run_store.h"
#include "support/fixtures.h"

using namespace expnet;

class TestRunStore : public QObject {
  Q_OBJECT

 private slots:
  void roundTrip() {
    const std::string path = expnet_test::makeTempDir("run_store_rt").toStdString() + "/runs.sqlite";
    RunStore store(path);
    const int64_t run = store.create_run("demo", R"({"preset":"shapes-demo"})", "/tmp/out");
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, store.create_run("demo", "{}", "/tmp/x"));
    store.add_stage(run, 0, "A", R"({"objective":"xe"})");
    store.add_stage(run, 1, "C", R"({"objective":"scst"})");
    store.log_steps({{run, 0, 0, 1, 4.5, 1e-4, 2.0, 30.0, false}, {run, 0, 0, 2, 4.0, 2e-4, 1.5, 31.0, true}});
    store.log_validation({run, 0, 0, 2, 0.5, 0.4, 0.3, 0.2, 0.45, 1.25});
    store.log_samples({{run, 0, 0, "img1.png", "a red circle", "a red circle on black"}});
    const auto info = store.find_run("demo");
    QCOMPARE(info.id, run);
    QCOMPARE(info.steps, int64_t(2));
    QVERIFY(info.best_cider.has_value());
    QCOMPARE(*info.best_cider, 1.25);
    QCOMPARE(store.find_run(std::to_string(run)).name, std::string("demo"));
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, store.find_run("nope"));
    const auto steps = store.steps(run);
    QCOMPARE(steps.size(), size_t(2));
    QCOMPARE(steps[1].loss, 4.0);
    QVERIFY(steps[1].skipped);
    QCOMPARE(store.validations(run)[0].bleu4, 0.2);
    QCOMPARE(store.samples(run)[0].caption, std::string("a red circle"));
    QCOMPARE(store.stages(run).size(), size_t(2));
    store.truncate_after(run, 1);
    QCOMPARE(store.steps(run).size(), size_t(1));
    QCOMPARE(store.validations(run).size(), size_t(0));
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

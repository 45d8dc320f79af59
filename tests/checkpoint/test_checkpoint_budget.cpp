// The CLI on small .pth files that cost gigabytes or never end without the
// readers' budgets (make_hostile_files.py): each ends within seconds, with
// exit 1 and an error naming the file and the fix, or (valid but unusual) lists
// what it holds. Budgets: docs/checkpoints.md, "Limits against hostile input".
#include <QElapsedTimer>
#include <QtTest>

#include <nlohmann/json.hpp>

#include "expnet/checkpoint/pickler.h"
#include "expnet/model/model_config.h"
#include "support/fixtures.h"

namespace {

struct Run {
  int exit_code = -1;
  QString out, err;
  qint64 ms = 0;
};

}  // namespace

class TestCheckpointBudget : public QObject {
  Q_OBJECT
  QString dir_;

  QString file(const char* name) const { return dir_ + "/" + name; }
  static Run cli(const QStringList& args) {
    QElapsedTimer timer;
    timer.start();
    const auto r = expnet_test::runProcess(expnet_test::cliPath(), args, 60000);
    return {r.exitCode, QString::fromUtf8(r.out), QString::fromUtf8(r.err), timer.elapsed()};
  }

 private slots:
  void initTestCase() {
    dir_ = expnet_test::makeTempDir("hostile-checkpoints");
    const auto r = expnet_test::runProcess(expnet_test::torchPython(),
                                           {QStringLiteral(CHECKPOINT_TEST_SCRIPTS "/make_hostile_files.py"), dir_});
    QVERIFY2(r.exitCode == 0, r.err.constData());
  }

  void hostileFilesEndInAClearError_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<QString>("expected");
    const char* budget = "MiB (the budget for a pickle of";
    const char* const cases[][3] = {  // row, file, expected text
        {"torch.Size copies", "size_copies.pth", budget},
        {"torch.Size copies, legacy", "legacy_size_copies.pth", budget},
        {"millions of small values", "small_values.pth", budget},
        {"shared dict key", "shared_key.pth", "a dict key expands to more than"},
        {"deflate bomb", "deflate_bomb.pth", "zip entry 'archive/data.pkl' would inflate"}};
    for (const auto& c : cases) QTest::newRow(c[0]) << QString(c[1]) << QString(c[2]);
  }
  void hostileFilesEndInAClearError() {
    QFETCH(QString, name);
    QFETCH(QString, expected);
    for (const bool all : {false, true}) {
      QStringList args = {"checkpoint", "inspect", file(qPrintable(name))};
      if (all) args << "--all";
      const Run r = cli(args);
      QCOMPARE(r.exit_code, 1);
      QVERIFY2(r.err.contains(file(qPrintable(name))) && r.err.contains(expected), qPrintable(r.err));
      QVERIFY2(r.err.contains("re-save"), qPrintable(r.err));  // what to do
      QVERIFY2(!r.err.contains("frame #"), qPrintable(r.err));  // no LibTorch backtrace
      QVERIFY2(r.ms < 5000, qPrintable(QString("took %1 ms").arg(r.ms)));
    }
  }

  void sharedContainersAreListedOnce() {
    // 2^60 paths lead to one tensor: it is listed once, each other path once as a marker.
    Run r = cli({"checkpoint", "inspect", "--all", file("shared_lists.pth")});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    QVERIFY2(r.ms < 5000, qPrintable(QString("took %1 ms").arg(r.ms)));
    const QStringList lines = r.out.split('\n', Qt::SkipEmptyParts);
    QVERIFY2(lines.size() < 100, qPrintable(QString::number(lines.size())));
    QVERIFY2(lines.first().startsWith("x/0/0/0/") && lines.first().endsWith("float32 [1]"), qPrintable(lines.first()));
    QVERIFY2(r.out.contains("x/1  <same object as x/0>"), qPrintable(r.out));
    QVERIFY2(lines.last() == "w  float32 [1]", qPrintable(lines.last()));
  }

  void cyclesAreMarked() {
    Run r = cli({"checkpoint", "inspect", "--all", file("cycle.pth")});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    QCOMPARE(r.out, QStringLiteral("x/0  float32 [1]\nx/1  <cycle: back to x>\n"));
    r = cli({"checkpoint", "inspect", "--all", "--json", file("cycle.pth")});
    QVERIFY2(r.out.contains(R"({"cycle_to":"x","name":"x/1"})"), qPrintable(r.out));
    QVERIFY2(r.ms < 5000, qPrintable(QString("took %1 ms").arg(r.ms)));
  }

  void validButUnusualFileIsListed() {
    const Run r = cli({"checkpoint", "inspect", "--all", file("unusual.pth")});
    QVERIFY2(r.exit_code == 0, qPrintable(r.err));
    QCOMPARE(r.out, QStringLiteral("a  float32 [1]\nb/c  float32 [1]\n"));
  }

  void storedConfigIsBoundedBeforeAnyModelIsBuilt() {
    // export builds the model the stored config describes: refused before any allocation.
    const Run r = cli({"checkpoint", "export", "--checkpoint", file("huge_config.pth"), "--out", file("out.pth")});
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.err.contains(file("huge_config.pth")) &&
                 r.err.contains("d_model is 1000000000, outside the allowed range 1..8192"),
             qPrintable(r.err));
    QVERIFY2(!r.err.contains("frame #"), qPrintable(r.err));
    QVERIFY2(r.ms < 5000, qPrintable(QString("took %1 ms").arg(r.ms)));
    // inspect reports it without building anything.
    const Run inspect = cli({"checkpoint", "inspect", file("huge_config.pth")});
    QVERIFY2(inspect.exit_code == 0 && inspect.out.contains("decoder: INVALID") && inspect.out.contains("d_model"),
             qPrintable(inspect.out + inspect.err));
  }

  void vocabularySizeIsBoundedBeforeAnyModelIsBuilt() {
    const Run r = cli({"checkpoint", "export", "--checkpoint", file("huge_vocabulary.pth"), "--out", file("out.pth")});
    QCOMPARE(r.exit_code, 1);
    QVERIFY2(r.err.contains(file("huge_vocabulary.pth")) && r.err.contains("a vocabulary of 1000000000 words"),
             qPrintable(r.err));
    QVERIFY2(!r.err.contains("frame #"), qPrintable(r.err));
    QVERIFY2(r.ms < 5000, qPrintable(QString("took %1 ms").arg(r.ms)));
  }

  void sharedValuesWrittenOnceReadBackSharedInPython() {
    // The writer memoises values referenced twice (BINPUT/BINGET): Python's
    // pickle must read them back as the same objects.
    using namespace expnet::pickle;
    Arena arena;
    Value* t = arena.tuple({arena.integer(1), arena.integer(2)});
    Value* text = arena.str("abc");
    Value* d = arena.dict();
    d->dict_set(arena.str("k"), t);
    Value* root = arena.list({t, t, text, text, d});
    const QString path = file("shared_written.pkl");
    const std::string program = write(*root);
    QFile out(path);
    QVERIFY(out.open(QIODevice::WriteOnly) && out.write(program.data(), qint64(program.size())) == qint64(program.size()));
    out.close();
    const auto r = expnet_test::runProcess(
        expnet_test::torchPython(),
        {"-c", "import pickle, sys; v = pickle.load(open(sys.argv[1], 'rb')); "
               "assert v[0] == (1, 2) and v[0] is v[1] and v[2] == 'abc' and v[2] is v[3] and v[4]['k'] is v[0], v; "
               "print('ok')",
         path});
    QVERIFY2(r.exitCode == 0 && r.out.trimmed() == "ok", r.err.constData());
  }

  void configKeysAreBoundedWithTheirRange_data() {
    QTest::addColumn<QString>("edit");  // JSON merged into the official config
    QTest::addColumn<QString>("expected");
    QTest::newRow("d_model") << R"({"d_model": 1000000000})" << "d_model is 1000000000, outside the allowed range 1..8192";
    QTest::newRow("num_heads") << R"({"num_heads": 1000000000})" << "num_heads is 1000000000, outside the allowed range 1..256";
    QTest::newRow("ff") << R"({"ff": 100000000})" << "ff is 100000000, outside the allowed range 1..65536";
    QTest::newRow("embed") << R"({"swin_embed_dim": 4096})" << "swin_embed_dim is 4096, outside the allowed range 1..1024";
    QTest::newRow("depth") << R"({"swin_depths": [2, 2, 1000, 2]})" << "swin_depths[2] is 1000, outside the allowed range 1..64";
    QTest::newRow("expansions") << R"({"num_exp_enc_list": [32, 100000]})" << "num_exp_enc_list[1] is 100000";
    QTest::newRow("max_seq_len") << R"({"max_seq_len": 1000000})" << "max_seq_len is 1000000, outside the allowed range 1..4096";
    QTest::newRow("mlp ratio") << R"({"swin_mlp_ratio": 1e300})" << "swin_mlp_ratio is";
    QTest::newRow("past int64") << R"({"d_model": 18446744073709551615})" << "'d_model' must be a whole number, not 18446744073709551615";
    QTest::newRow("negative") << R"({"N_dec": -3})" << "N_dec must be positive, got -3 (allowed range 1..64)";
    QTest::newRow("in range, too big together") << R"({"d_model": 8192, "ff": 65536, "N_enc": 64, "N_dec": 64, "num_heads": 8})"
                                                << "million parameters";
  }
  void configKeysAreBoundedWithTheirRange() {
    QFETCH(QString, edit);
    QFETCH(QString, expected);
    auto doc = nlohmann::json::parse(expnet::official_model_config().to_json());
    doc.merge_patch(nlohmann::json::parse(edit.toStdString()));
    const QString error = expnet_test::errorOf([&] { expnet::ModelConfig::from_json(doc.dump(), "cfg.pth"); });
    QVERIFY2(error.startsWith("cfg.pth: ") && error.contains(expected), qPrintable(error));
  }
};

QTEST_GUILESS_MAIN(TestCheckpointBudget)
#include "test_checkpoint_budget.moc"

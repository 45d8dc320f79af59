// The unpickler's budget (Limits, docs/checkpoints.md "Limits against hostile
// input") on small hostile programs that cost gigabytes or hours without it:
// each must end within seconds in a PickleError naming the input. Real files
// must stay far below it. No LibTorch: this file also builds in the
// EXPNET_SANITIZE build (ASan+UBSan).
#include <QElapsedTimer>
#include <QFile>
#include <QtTest>

#include <string>

#include "expnet/checkpoint/pickle_value.h"
#include "expnet/checkpoint/pickler.h"
#include "expnet/checkpoint/unpickler.h"
#include "sanitize_test_util.h"
#include "support/fixtures.h"

using namespace expnet::pickle;
using namespace std::string_literals;

namespace {

using sanitize_test::read_file;

std::string repeat(const std::string& piece, size_t times) {
  std::string out;
  out.reserve(piece.size() * times);
  for (size_t i = 0; i < times; ++i) out += piece;
  return out;
}

const std::string kHeader = "\x80\x02";

// A tuple of `n` copies of one int (DUPs), stored in memo 0, left off the stack.
std::string memo_tuple_of_ints(size_t n) { return "(K\x01" + repeat("2", n - 1) + "tq\x00" "0"s; }

// A tuple whose two items are the same tuple, `levels` deep: 2^levels leaves
// from 2 bytes per level.
std::string shared_tuple(int levels) { return "N" + repeat("2\x86", static_cast<size_t>(levels)); }

QByteArray bytes_of(const std::string& s) { return QByteArray(s.data(), static_cast<int>(s.size())); }

}  // namespace

class TestPickleBudget : public QObject {
  Q_OBJECT
 private slots:
  void hostileProgramsEndInAnError_data() {
    QTest::addColumn<QByteArray>("program");
    QTest::addColumn<QString>("expected");
    // 3M empty lists, each popped: 800 MB of values without a budget.
    QTest::newRow("millions of small values") << bytes_of(kHeader + repeat("]0", 3'000'000) + "N.") << "MiB";
    // torch.Size(t) of a 20000-int tuple 4000 times: 80M new ints (22 GB) from 48 KB.
    QTest::newRow("torch.Size copies") << bytes_of(kHeader + memo_tuple_of_ints(20000) + "ctorch\nSize\nq\x01" "0" +
                                                   repeat("h\x01h\x00\x85R0"s, 4000) + "N.")
                                       << "MiB";
    // set(t) of the same tuple 4000 times: 80M copied pointers.
    QTest::newRow("builtins.set copies") << bytes_of(kHeader + memo_tuple_of_ints(20000) + "c__builtin__\nset\nq\x01" "0" +
                                                     repeat("h\x01h\x00\x85R0"s, 4000) + "N.")
                                         << "MiB";
    // One MARK'd tuple of memo copies, again and again: copies into tuples.
    QTest::newRow("valid tuples of memo copies") << bytes_of(kHeader + memo_tuple_of_ints(20000) +
                                                       repeat("(" + repeat("h\x00"s, 2000) + "t0", 10) + "N.")
                                           << "";  // valid and small: must parse
    // A dict key of 2^40 leaves (shared tuples): hashing it never ended.
    QTest::newRow("shared dict key") << bytes_of(kHeader + "}" + shared_tuple(40) + "Ns.") << "dict key expands";
    // A key of 2^17 leaves (~500 KB to hash), set 20000 times: 10 GB of hashing.
    QTest::newRow("shared dict key repeated") << bytes_of(kHeader + "}" + shared_tuple(17) + "q\x00" "0"s +
                                                          repeat("h\x00Ns"s, 20000) + ".")
                                              << "MiB";
    // OrderedDict(pairs) of one list of 20000 pairs, 3000 times.
    QTest::newRow("OrderedDict copies") << bytes_of(kHeader + "(" "K\x01K\x01\x86" + repeat("2", 19999) + "lq\x00" "0"s +
                                                    "ccollections\nOrderedDict\nq\x01" "0" +
                                                    repeat("h\x01h\x00\x85R0"s, 3000) + "N.")
                                        << "MiB";
    // _codecs.encode of one 1 MB str, 30000 times: 30 GB of bytes.
    QTest::newRow("latin1 copies") << bytes_of(kHeader + "X\x00\x00\x10\x00"s + std::string(1 << 20, 'a') + "q\x00" "0"s +
                                               "c_codecs\nencode\nq\x01" "0" + repeat("h\x01h\x00\x85R0"s, 30000) + "N.")
                                   << "MiB";
  }
  void hostileProgramsEndInAnError() {
    QFETCH(QByteArray, program);
    QFETCH(QString, expected);
    QElapsedTimer timer;
    timer.start();
    QString error;
    try {
      parse(std::string_view(program.constData(), static_cast<size_t>(program.size())), "hostile.pkl");
    } catch (const PickleError& e) {
      error = QString::fromUtf8(e.what());
    }
    const qint64 ms = timer.elapsed();
    if (expected.isEmpty()) {
      QVERIFY2(error.isEmpty(), qPrintable(error));
    } else {
      QVERIFY2(error.startsWith("hostile.pkl: ") && error.contains(expected), qPrintable(error));
    }
    QVERIFY2(ms < 5000, qPrintable(QString("took %1 ms").arg(ms)));
  }

  void budgetIsProportionalWithAFloorAndACeiling() {
    const Limits limits;
    QCOMPARE(limits.budget_for(0), limits.min_budget_bytes);
    QCOMPARE(limits.budget_for(100'000), size_t(100'000) * limits.budget_per_input_byte);
    QCOMPARE(limits.budget_for(size_t(1) << 40), limits.max_budget_bytes);
    QCOMPARE(limits.budget_for(SIZE_MAX), limits.max_budget_bytes);
    // The same program passes with room and fails without it.
    const std::string program = kHeader + memo_tuple_of_ints(1000) + "ctorch\nSize\nq\x01" "0" +
                                repeat("h\x01h\x00\x85R0"s, 10) + "N.";
    const Document doc = parse(program, "p");
    QVERIFY(doc.budget_used > 10 * 1000 * Budget::kValueBytes);
    Limits tight;
    tight.min_budget_bytes = doc.budget_used - 1;
    tight.budget_per_input_byte = 1;
    QVERIFY_THROWS_EXCEPTION(PickleError, parse(program, "p", tight));
    tight.min_budget_bytes = doc.budget_used;
    QCOMPARE(parse(program, "p", tight).budget_used, doc.budget_used);
  }

  void longStrKeysStillWork() {
    // A 2 MiB str key: past the cap for tuples, but it is in the input itself.
    const std::string key(2 << 20, 'k');
    const Document doc = parse(kHeader + "}X" + std::string("\x00\x00\x20\x00", 4) + key + "K\x01s.", "k");
    QCOMPARE(doc.root->entries.size(), size_t(1));
    QVERIFY(doc.root->find(key) != nullptr);
  }

  void sharedButSmallKeysStillWork() {
    // {(t10): 1} with t10 sharing its halves: 1024 leaves, a valid key.
    const Document doc = parse(kHeader + "}" + shared_tuple(10) + "K\x01s" + shared_tuple(10) + "K\x02s.", "k");
    QCOMPARE(doc.root->entries.size(), size_t(1));  // equal keys replace
    QCOMPARE(doc.root->entries[0].second->integer, int64_t(2));
  }

  void realFilesStayFarBelowTheBudget_data() {
    QTest::addColumn<QString>("fixture");
    QTest::newRow("vocabulary p3") << "reference/demo_coco_tokens.pickle";
    QTest::newRow("vocabulary p5") << "reference/tiny/vocab.pickle";
  }
  void realFilesStayFarBelowTheBudget() {
    QFETCH(QString, fixture);
    EXPNET_FIXTURE(path, fixture);
    const std::string data = read_file(path);
    const Document doc = parse(data, "real");
    // Below a tenth of the proportional budget (1024 bytes per input byte).
    QVERIFY2(doc.budget_used < data.size() * 100,
             qPrintable(QString("%1 bytes charged for %2 input bytes").arg(doc.budget_used).arg(data.size())));
  }

  void torchDataPklStaysFarBelowTheBudget() {
    EXPNET_FIXTURE(path, "reference/tiny/checkpoint.pth");
    const std::string zip = read_file(path);
    const size_t start = zip.find("\x80\x02", zip.find("checkpoint/data.pkl"));
    size_t used = 0;
    const Document doc = parse_prefix(std::string_view(zip).substr(start), "data.pkl", &used);
    const Document exact = parse(std::string_view(zip).substr(start, used), "data.pkl");
    QVERIFY2(exact.budget_used < used * 100,
             qPrintable(QString("%1 bytes charged for %2 input bytes").arg(exact.budget_used).arg(used)));
  }

  void writerWritesSharedValuesOnce() {
    // A tuple sharing its halves 40 levels deep: 2^40 leaves, 41 distinct values.
    Arena arena;
    Value* t = arena.none();
    for (int i = 0; i < 40; ++i) t = arena.tuple({t, t});
    QElapsedTimer timer;
    timer.start();
    const std::string written = write(*t);
    QVERIFY2(written.size() < 1000, qPrintable(QString::number(written.size())));
    const Document doc = parse(written, "written");
    const Value* v = doc.root;
    for (int i = 0; i < 40; ++i) {
      QVERIFY(v->is(Kind::Tuple) && v->items.size() == 2);
      QVERIFY(v->items[0] == v->items[1] || i == 39);  // still shared (None is written again)
      v = v->items[0];
    }
    QVERIFY(v->is(Kind::None));
    QVERIFY(timer.elapsed() < 5000);
    // A value inside itself still hits the depth limit.
    Value* list = arena.list();
    list->items.push_back(list);
    QVERIFY_THROWS_EXCEPTION(PickleError, write(*list));
  }

  void fuzzFindingUnpickler1() {
    // /work/tools/fuzz_findings/unpickler-1: 158 bytes of tuples sharing each
    // other; the writer expanded them to 92.8 MB, which the reader refused.
    const std::string program = QByteArray::fromHex("80025d7100288a08ffff474747474747474747b4474747474747474747479147478585873232873232873232323247474747479147478585873232873232873232323287323232726429324747914747858587323287323287323232324747474747914747858585873232873232323287323232726429324747914747858587323287323287323232324747474747914747858587323272642900ff652e").toStdString();
    QElapsedTimer timer;
    timer.start();
    const Document doc = parse(program, "unpickler-1.pkl");
    const std::string written = write(*doc.root);
    QVERIFY2(written.size() < 10 * program.size(), qPrintable(QString::number(written.size())));
    const Document again = parse(written, "rewritten.pkl");
    QVERIFY(again.budget_used <= doc.budget_used + 64 * written.size());
    QVERIFY(timer.elapsed() < 5000);
  }
};

QTEST_GUILESS_MAIN(TestPickleBudget)
#include "test_pickle_budget.moc"

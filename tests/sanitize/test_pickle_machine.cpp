// The restricted unpickler on real, hand-made, hostile, truncated and random
// input. No LibTorch: this file also builds in the EXPNET_SANITIZE build
// (ASan+UBSan), where any out-of-bounds read or UB fails the run.
#include <QFile>
#include <QtTest>

#include <random>
#include <string>

#include "expnet/checkpoint/pickle_value.h"
#include "expnet/checkpoint/unpickler.h"
#include "expnet/checkpoint/pickler.h"
#include "expnet/checkpoint/vocabulary_file.h"
#include "sanitize_test_util.h"
#include "support/fixtures.h"

using namespace expnet::pickle;

namespace {

using sanitize_test::read_file;

std::string bin(std::initializer_list<int> bytes) {
  std::string out;
  for (const int b : bytes) out += static_cast<char>(b);
  return out;
}

// X + 4-byte length + text
std::string binunicode(const std::string& s) {
  std::string out = "X";
  const auto n = static_cast<uint32_t>(s.size());
  for (int i = 0; i < 4; ++i) out += static_cast<char>((n >> (8 * i)) & 0xff);
  return out + s;
}
std::string short_unicode(const std::string& s) { return "\x8c" + std::string(1, static_cast<char>(s.size())) + s; }

// Runs the machine; returns the error text ("" on success). Anything but a
// PickleError escaping is a failure of the test.
QString error_of(const std::string& data) {
  try {
    parse(data, "input");
    return {};
  } catch (const PickleError& e) {
    return QString::fromStdString(e.what());
  }
}

bool same(const Value& a, const Value& b, int depth = 0) {
  if (depth > 50 || a.kind != b.kind) return false;
  switch (a.kind) {
    case Kind::None: return true;
    case Kind::Bool: return a.boolean == b.boolean;
    case Kind::Int: return a.integer == b.integer;
    case Kind::Float: return std::memcmp(&a.real, &b.real, sizeof(double)) == 0;
    case Kind::Str: case Kind::Bytes: case Kind::Global: return a.text == b.text;
    case Kind::List: case Kind::Tuple: case Kind::Set:
      if (a.items.size() != b.items.size()) return false;
      for (size_t i = 0; i < a.items.size(); ++i)
        if (!same(*a.items[i], *b.items[i], depth + 1)) return false;
      return true;
    case Kind::Dict:
      if (a.entries.size() != b.entries.size() || a.ordered_dict != b.ordered_dict) return false;
      if ((a.state == nullptr) != (b.state == nullptr) || (a.state && !same(*a.state, *b.state, depth + 1))) return false;
      for (size_t i = 0; i < a.entries.size(); ++i)
        if (!same(*a.entries[i].first, *b.entries[i].first, depth + 1) ||
            !same(*a.entries[i].second, *b.entries[i].second, depth + 1))
          return false;
      return true;
    case Kind::Storage: return a.storage->key == b.storage->key && a.storage->dtype == b.storage->dtype;
    case Kind::Tensor:
      return a.tensor.storage->key == b.tensor.storage->key && a.tensor.storage->dtype == b.tensor.storage->dtype &&
             a.tensor.storage->numel == b.tensor.storage->numel && a.tensor.storage_offset == b.tensor.storage_offset &&
             a.tensor.sizes == b.tensor.sizes && a.tensor.strides == b.tensor.strides &&
             a.tensor.parameter == b.tensor.parameter && a.tensor.requires_grad == b.tensor.requires_grad;
  }
  return false;
}

}  // namespace

class TestPickleMachine : public QObject {
  Q_OBJECT
 private slots:
  void releasedVocabularyPickle() {
    EXPNET_FIXTURE(path, "reference/demo_coco_tokens.pickle");
    const std::string data = read_file(path);
    const Document doc = parse(data, "demo_coco_tokens.pickle");
    QCOMPARE(doc.protocol, 3);
    const Value* words = doc.root->find("idx2word_list");
    QVERIFY(words && words->is(Kind::List));
    QCOMPARE(words->items.size(), size_t(10000));
    QCOMPARE(QString::fromStdString(words->items[0]->text), QStringLiteral("\n"));
    QCOMPARE(QString::fromStdString(words->items[1]->text), QStringLiteral("\""));
    const Value* index = doc.root->find("word2idx_dict");
    QVERIFY(index && index->is(Kind::Dict));
    QCOMPARE(index->find("SOS")->integer, int64_t(79));
    QCOMPARE(index->find("EOS")->integer, int64_t(77));

    const expnet::Vocabulary vocab = expnet::load_vocabulary(path.toStdString());
    QCOMPARE(vocab.size(), int64_t(10000));
    QCOMPARE(vocab.sos_id(), int64_t(79));
    QCOMPARE(vocab.eos_id(), int64_t(77));
    QCOMPARE(vocab.pad_id(), int64_t(78));
    QCOMPARE(vocab.unk_id(), int64_t(80));
    // Our JSON round trip reads back through the same entry point.
    const expnet::Vocabulary again = expnet::parse_vocabulary(vocab.to_json(), "json");
    QCOMPARE(again.words(), vocab.words());
  }

  void tinyVocabularyPickleProtocol5() {
    EXPNET_FIXTURE(path, "reference/tiny/vocab.pickle");
    const Document doc = parse(read_file(path), "vocab.pickle");
    QCOMPARE(doc.protocol, 5);
    const expnet::Vocabulary vocab = expnet::load_vocabulary(path.toStdString());
    QCOMPARE(vocab.size(), int64_t(50));
    QCOMPARE(vocab.sos_id(), int64_t(1));
    QCOMPARE(vocab.eos_id(), int64_t(2));
    QCOMPARE(QString::fromStdString(vocab.word(49)), QStringLiteral("sky"));
  }

  void vocabularyErrors() {
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, expnet::parse_vocabulary("", "v"));
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, expnet::parse_vocabulary("hello", "v"));
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, expnet::parse_vocabulary(bin({0x80, 0x02, '}', '.'}), "v"));
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, expnet::load_vocabulary("/nonexistent/vocab.pickle"));
    // word2idx_dict disagreeing with idx2word_list
    Arena arena;
    Value* root = arena.dict();
    root->dict_set(arena.str("idx2word_list"), arena.list({arena.str("PAD"), arena.str("SOS"), arena.str("EOS")}));
    Value* index = arena.dict();
    index->dict_set(arena.str("PAD"), arena.integer(0));
    index->dict_set(arena.str("SOS"), arena.integer(2));
    index->dict_set(arena.str("EOS"), arena.integer(1));
    root->dict_set(arena.str("word2idx_dict"), index);
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, expnet::parse_vocabulary(write(*root), "v"));
  }

  void writerRoundTrip() {
    Arena arena;
    Value* root = arena.dict(true);
    root->dict_set(arena.str("none"), arena.none());
    root->dict_set(arena.str("bools"), arena.list({arena.boolean(true), arena.boolean(false)}));
    Value* ints = arena.list();
    for (const int64_t v : {int64_t(0), int64_t(255), int64_t(256), int64_t(65535), int64_t(65536), int64_t(-1),
                            int64_t(INT32_MAX), int64_t(INT32_MIN), int64_t(INT32_MAX) + 1, int64_t(INT32_MIN) - 1,
                            INT64_MAX, INT64_MIN, int64_t(128), int64_t(-129)})
      ints->items.push_back(arena.integer(v));
    root->dict_set(arena.str("ints"), ints);
    root->dict_set(arena.str("floats"), arena.list({arena.real(0.1), arena.real(-0.0), arena.real(1e300)}));
    root->dict_set(arena.str("str"), arena.str("h\xc3\xa9llo \xe2\x98\x83"));
    std::string all_bytes;
    for (int i = 0; i < 256; ++i) all_bytes += static_cast<char>(i);
    root->dict_set(arena.str("bytes"), arena.bytes(all_bytes));
    root->dict_set(arena.str("tuples"), arena.tuple({arena.tuple(), arena.tuple({arena.integer(1)}),
                                                     arena.tuple({arena.integer(1), arena.integer(2), arena.integer(3),
                                                                  arena.integer(4)})}));
    Value* set = arena.make(Kind::Set);
    set->items = {arena.integer(1), arena.integer(2)};
    root->dict_set(arena.integer(7), set);
    root->dict_set(arena.tuple({arena.integer(1), arena.str("a")}), arena.str("tuple key"));
    Value* metadata = arena.dict();
    metadata->dict_set(arena.str("_metadata"), arena.dict(true));
    root->state = metadata;
    auto storage = std::make_shared<StorageRef>();
    storage->key = "0";
    storage->dtype = DType::BFloat16;
    storage->location = "cpu";
    storage->numel = 24;
    TensorInfo view;
    view.storage = storage;
    view.storage_offset = 2;
    view.sizes = {3, 4};
    view.strides = {1, 5};
    root->dict_set(arena.str("tensor"), arena.tensor(view));
    view.parameter = true;
    view.requires_grad = true;
    root->dict_set(arena.str("parameter"), arena.tensor(view));

    const std::string data = write(*root);
    const Document doc = parse(data, "written");
    QVERIFY(same(*root, *doc.root));
    QCOMPARE(doc.storages.size(), size_t(1));
    // Both tensors name one storage: the reader must hand back one StorageRef.
    QCOMPARE(doc.root->find("tensor")->tensor.storage.get(), doc.root->find("parameter")->tensor.storage.get());
  }

  void dictSemantics() {
    // {1: 'a', 1.0: 'b', True: 'c'} is one key in Python; lists are unhashable.
    const std::string p = bin({0x80, 0x02, '}', '(', 'K', 1, 'X', 1, 0, 0, 0, 'a', 'G', 0x3f, 0xf0, 0, 0, 0, 0, 0, 0,
                               'X', 1, 0, 0, 0, 'b', 0x88, 'X', 1, 0, 0, 0, 'c', 'u', '.'});
    const Document doc = parse(p, "dict");
    QCOMPARE(doc.root->entries.size(), size_t(1));
    QCOMPARE(QString::fromStdString(doc.root->entries[0].second->text), QStringLiteral("c"));
    const QString err = error_of(bin({0x80, 0x02, '}', ']', 'K', 1, 's', '.'}));
    QVERIFY2(err.contains("unhashable"), qPrintable(err));
  }

  void bigIntegers() {
    // LONG1 with redundant sign bytes still fits; 2**70 does not.
    Document ok = parse(bin({0x80, 0x02, 0x8a, 9, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0x00, '.'}), "long");
    QCOMPARE(ok.root->integer, INT64_MAX);
    ok = parse(bin({0x80, 0x02, 0x8a, 9, 0, 0, 0, 0, 0, 0, 0, 0x80, 0xff, '.'}), "long");
    QCOMPARE(ok.root->integer, INT64_MIN);
    ok = parse(bin({0x80, 0x02, 0x8a, 0, '.'}), "long");
    QCOMPARE(ok.root->integer, int64_t(0));
    const QString err = error_of(bin({0x80, 0x02, 0x8a, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0x40, '.'}));
    QVERIFY2(err.contains("64 bits"), qPrintable(err));
    QVERIFY(error_of(bin({0x80, 0x02, 0x8a, 9, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x00, '.'})).contains("64 bits"));
  }

  void maliciousGlobalsRefused_data() {
    QTest::addColumn<QByteArray>("program");
    QTest::addColumn<QString>("name");
    auto global_reduce = [](const std::string& module, const std::string& name) {
      const std::string p = "\x80\x02" "c" + module + "\n" + name + "\n" + binunicode("touch /tmp/expnet-pwned") +
                            "\x85R.";
      return QByteArray(p.data(), static_cast<int>(p.size()));
    };
    auto stack_global_reduce = [](const std::string& module, const std::string& name) {
      const std::string p = "\x80\x04" + short_unicode(module) + short_unicode(name) + "\x93" +
                            short_unicode("touch /tmp/expnet-pwned") + "\x85R.";
      return QByteArray(p.data(), static_cast<int>(p.size()));
    };
    QTest::newRow("GLOBAL posix.system") << global_reduce("posix", "system") << "posix.system";
    QTest::newRow("GLOBAL os.system") << global_reduce("os", "system") << "os.system";
    QTest::newRow("GLOBAL nt.system") << global_reduce("nt", "system") << "nt.system";
    QTest::newRow("GLOBAL builtins.eval") << global_reduce("builtins", "eval") << "builtins.eval";
    QTest::newRow("GLOBAL __builtin__.exec") << global_reduce("__builtin__", "exec") << "builtins.exec";
    QTest::newRow("GLOBAL subprocess.Popen") << global_reduce("subprocess", "Popen") << "subprocess.Popen";
    QTest::newRow("GLOBAL builtins.getattr") << global_reduce("builtins", "getattr") << "builtins.getattr";
    QTest::newRow("GLOBAL torch.load") << global_reduce("torch", "load") << "torch.load";
    QTest::newRow("STACK_GLOBAL posix.system") << stack_global_reduce("posix", "system") << "posix.system";
    QTest::newRow("STACK_GLOBAL os.system") << stack_global_reduce("os", "system") << "os.system";
    QTest::newRow("STACK_GLOBAL builtins.eval") << stack_global_reduce("builtins", "eval") << "builtins.eval";
    QTest::newRow("STACK_GLOBAL subprocess.Popen") << stack_global_reduce("subprocess", "Popen") << "subprocess.Popen";
    QTest::newRow("STACK_GLOBAL subprocess.check_output") << stack_global_reduce("subprocess", "check_output")
                                                         << "subprocess.check_output";
    QTest::newRow("STACK_GLOBAL os.popen") << stack_global_reduce("os", "popen") << "os.popen";
  }
  void maliciousGlobalsRefused() {
    QFETCH(QByteArray, program);
    QFETCH(QString, name);
    const QString err = error_of(std::string(program.constData(), static_cast<size_t>(program.size())));
    QVERIFY2(err.contains("refused") && err.contains("'" + name + "'"), qPrintable(err));
    QVERIFY(!QFile::exists("/tmp/expnet-pwned"));
  }

  void allowedButNotCallable() {
    // A storage class is allowed as a value, never as a callable.
    const QString err = error_of("\x80\x02" "ctorch\nFloatStorage\n)R.");
    QVERIFY2(err.contains("cannot be called"), qPrintable(err));
    // INST/OBJ construct objects: refused.
    QVERIFY(error_of("(cos\nsystem\nS'ls'\ni.").contains("refused"));
    QVERIFY(error_of(bin({0x80, 0x02, '(', 'o', '.'})).contains("refused"));
    // BUILD on arbitrary values is refused.
    QVERIFY(error_of(bin({0x80, 0x02, ']', '}', 'b', '.'})).contains("BUILD"));
  }

  void malformedStructure() {
    QVERIFY(error_of("").contains("empty"));
    QVERIFY(error_of(bin({0x80, 0x02})).contains("truncated"));
    QVERIFY(error_of(bin({0x80, 0x09, 'N', '.'})).contains("protocol"));
    QVERIFY(error_of(bin({0x80, 0x02, '.'})).contains("0 values"));
    QVERIFY(error_of(bin({0x80, 0x02, 'N', 'N', '.'})).contains("2 values"));
    QVERIFY(error_of(bin({0x80, 0x02, 'a', '.'})).contains("underflow"));
    QVERIFY(error_of(bin({0x80, 0x02, 'e', '.'})).contains("MARK"));
    QVERIFY(error_of(bin({0x80, 0x02, 'h', 5, '.'})).contains("never stored"));
    QVERIFY(error_of(bin({0x80, 0x02, 'X', 0xff, 0xff, 0xff, 0xff, 'a', '.'})).contains("larger than"));
    QVERIFY(error_of(bin({0x80, 0x02, 0x8d, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, '.'})).contains("larger than"));
    QVERIFY(error_of(bin({0x80, 0x02, 0x95, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 'N', '.'})).contains("larger than"));
    QVERIFY(error_of(bin({0x80, 0x02, 0xff, '.'})).contains("unknown opcode"));
    QVERIFY(error_of(bin({0x80, 0x02, 'N', 'Q', '.'})).contains("persistent id"));
    QVERIFY(error_of(bin({0x80, 0x05, 0x97, '.'})).contains("out-of-band"));
    // MARK nesting beyond the limit.
    std::string deep = bin({0x80, 0x02});
    deep += std::string(20000, '(');
    QVERIFY(error_of(deep).contains("nested too deep"));
    // Appending a list to itself: parses (Python allows it), owned by the arena, describe() is bounded.
    const Document cyclic = parse(bin({0x80, 0x02, ']', 'q', 0, 'h', 0, 'a', '.'}), "cycle");
    QCOMPARE(cyclic.root->items.size(), size_t(1));
    QVERIFY(describe(*cyclic.root, 5).size() < 200);
    QVERIFY_THROWS_EXCEPTION(PickleError, write(*cyclic.root));
  }

  void tensorViewsAreBounded() {
    // ('storage', torch.FloatStorage, '0', 'cpu', 4) viewed as 3x2 with strides (2,1): needs 6 elements.
    auto program = [](int numel, int offset, int stride0) {
      std::string p = "\x80\x02" "ctorch._utils\n_rebuild_tensor_v2\n(" "(" + binunicode("storage") +
                      "ctorch\nFloatStorage\n" + binunicode("0") + binunicode("cpu") + "K" +
                      std::string(1, static_cast<char>(numel)) + "tQ" + "K" +
                      std::string(1, static_cast<char>(offset)) + "K\x03K\x02\x86" + "K" +
                      std::string(1, static_cast<char>(stride0)) + "K\x01\x86" + "\x89" +
                      "ccollections\nOrderedDict\n)R" + "tR.";
      return p;
    };
    const Document ok = parse(program(6, 0, 2), "tensor");
    QVERIFY(ok.root->is(Kind::Tensor));
    QCOMPARE(ok.root->tensor.sizes, (std::vector<int64_t>{3, 2}));
    QVERIFY(error_of(program(5, 0, 2)).contains("past its storage"));
    QVERIFY(error_of(program(6, 1, 2)).contains("past its storage"));
    QVERIFY(error_of(program(6, 0, 3)).contains("past its storage"));
  }

  void everyTruncationFails() {
    EXPNET_FIXTURE(path, "reference/tiny/vocab.pickle");
    const std::string data = read_file(path);
    for (size_t n = 0; n < data.size(); ++n) {
      const QString err = error_of(data.substr(0, n));
      QVERIFY2(!err.isEmpty(), qPrintable(QString("prefix of %1 bytes parsed").arg(n)));
    }
    QVERIFY(error_of(data).isEmpty());
  }

  void torchDataPklAndMutations() {
    // torch.save stores records uncompressed: data.pkl starts at the first
    // PROTO after its name in the zip's local header (padding is 'Z's).
    EXPNET_FIXTURE(path, "reference/tiny/checkpoint.pth");
    const std::string zip = read_file(path);
    const size_t name = zip.find("checkpoint/data.pkl");
    QVERIFY(name != std::string::npos);
    const size_t start = zip.find("\x80\x02", name);
    size_t used = 0;
    const Document doc = parse_prefix(std::string_view(zip).substr(start), "data.pkl", &used);
    const Value* model = doc.root->find("model_state_dict");
    QVERIFY(model && model->ordered_dict && model->state);
    QCOMPARE(model->entries.size(), size_t(240));
    QCOMPARE(doc.storages.size(), size_t(240));
    const TensorInfo& first = model->entries[0].second->tensor;
    QCOMPARE(first.sizes, (std::vector<int64_t>{24, 3, 4, 4}));
    QCOMPARE(first.strides, (std::vector<int64_t>{48, 16, 4, 1}));
    QCOMPARE(first.storage->numel, int64_t(1152));
    // Mutations of a real torch program: tensor rebuilds with hostile sizes,
    // offsets and storage numbers must be refused or stay in bounds.
    const std::string program = zip.substr(start, used);
    std::mt19937 rng(77);
    for (int round = 0; round < 400; ++round) {
      std::string data = program;
      for (int i = 0; i < 1 + round % 4; ++i) data[rng() % data.size()] = static_cast<char>(rng());
      try {
        const Document d = parse(data, "mutated");
        for (const auto& s : d.storages) QVERIFY(s->numel >= 0);
      } catch (const PickleError&) {
      }
    }
  }

  void randomAndMutatedInputNeverCrash() {
    EXPNET_FIXTURE(path, "reference/demo_coco_tokens.pickle");
    const std::string vocab = read_file(path).substr(0, 4000);
    std::mt19937 rng(1234);
    std::uniform_int_distribution<int> byte(0, 255);
    int refused = 0;
    for (int round = 0; round < 3000; ++round) {
      std::string data;
      if (round % 2 == 0) {  // random bytes after a valid header
        data = bin({0x80, 0x02});
        const int n = 1 + round % 97;
        for (int i = 0; i < n; ++i) data += static_cast<char>(byte(rng));
      } else {  // a real pickle with a few bytes changed
        data = vocab;
        for (int i = 0; i < 1 + round % 5; ++i) data[static_cast<size_t>(rng() % data.size())] = static_cast<char>(byte(rng));
      }
      if (!error_of(data).isEmpty()) ++refused;
    }
    QVERIFY(refused > 1500);  // nearly all must be refused; none may crash
  }
};

QTEST_GUILESS_MAIN(TestPickleMachine)
#include "test_pickle_machine.moc"

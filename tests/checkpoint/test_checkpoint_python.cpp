// Round trips with PyTorch (Debian's /usr/bin/python3 with torch 1.13):
// files torch.save writes load in ours with identical values and structure;
// files we write load in torch.load bit-identical; hostile files are refused.
#include <torch/torch.h>

#include <QDir>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <cstring>
#include <map>
#include <unordered_map>

#include "checkpoint_test_util.h"
#include "expnet/checkpoint/pth_file.h"
#include "expnet/checkpoint/state_dict.h"
#include "expnet/checkpoint/pth_writer.h"
#include "expnet/checkpoint/vocabulary_file.h"
#include "support/fixtures.h"

using namespace checkpoint_test;
using expnet::PthFile;
using expnet::pickle::Kind;
using expnet::pickle::Value;
using nlohmann::json;

namespace {

QString script(const char* name) { return QStringLiteral(CHECKPOINT_TEST_SCRIPTS "/") + name; }

std::string hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (const char c : bytes) {
    out += digits[(static_cast<unsigned char>(c) >> 4) & 0xf];
    out += digits[static_cast<unsigned char>(c) & 0xf];
  }
  return out;
}

// Mirrors canonical() of make_torch_files.py.
json canonical(const Value& v, std::vector<const Value*>& tensors, std::unordered_map<const Value*, size_t>& index) {
  switch (v.kind) {
    case Kind::None: return {{"none", true}};
    case Kind::Bool: return {{"bool", v.boolean}};
    case Kind::Int: return {{"int", std::to_string(v.integer)}};
    case Kind::Float: {
      std::string le(8, '\0');
      std::memcpy(le.data(), &v.real, 8);
      return {{"float", hex(le)}};
    }
    case Kind::Str: return {{"str", v.text}};
    case Kind::Bytes: return {{"bytes", hex(v.text)}};
    case Kind::Tensor: {
      const auto [it, inserted] = index.emplace(&v, tensors.size());
      if (inserted) tensors.push_back(&v);
      return {{"tensor", it->second}};
    }
    case Kind::Tuple: case Kind::List: {
      json items = json::array();
      for (const Value* item : v.items) items.push_back(canonical(*item, tensors, index));
      return {{v.is(Kind::Tuple) ? "tuple" : "list", items}};
    }
    case Kind::Set: {
      std::vector<std::string> items;
      for (const Value* item : v.items) items.push_back(canonical(*item, tensors, index).dump(-1, ' ', true));
      std::sort(items.begin(), items.end());
      return {{"set", items}};
    }
    case Kind::Dict: {
      json entries = json::array();
      for (const auto& [k, val] : v.entries)
        entries.push_back(json::array({canonical(*k, tensors, index), canonical(*val, tensors, index)}));
      return {{"dict", entries}, {"ordered", v.ordered_dict}};
    }
    default: return {{"unexpected", expnet::pickle::kind_name(v.kind)}};
  }
}

QString run_python(const QStringList& args, int timeout_ms = 300000) {
  const auto result = expnet_test::runProcess(expnet_test::torchPython(), args, timeout_ms);
  if (result.exitCode != 0)
    return QStringLiteral("python failed (%1): %2%3").arg(result.exitCode).arg(QString(result.out), QString(result.err));
  return QString::fromUtf8(result.out.trimmed());
}

}  // namespace

class TestCheckpointPython : public QObject {
  Q_OBJECT
 private slots:
  void torchSaveFilesLoadIdentically_data() {
    QTest::addColumn<QString>("name");
    for (const char* name : {"plain_p2", "plain_p4", "plain_p5", "tensors_p2", "tensors_p5", "training",
                             "tensors_legacy", "training_legacy"})
      QTest::newRow(name) << QString(name);
  }
  void torchSaveFilesLoadIdentically() {
    static QString dir;
    if (dir.isEmpty()) {
      dir = expnet_test::makeTempDir("torch-save-files");
      const QString out = run_python({script("make_torch_files.py"), dir});
      QVERIFY2(!out.startsWith("python failed"), qPrintable(out));
    }
    QFETCH(QString, name);
    const json manifest = json::parse(read_bytes(dir + "/" + name + ".json"));
    const std::string blob = read_bytes(dir + "/" + name + ".bin");
    PthFile file((dir + "/" + name + ".pth").toStdString());
    QCOMPARE(QString(file.format()), name.endsWith("legacy") ? QStringLiteral("legacy") : QStringLiteral("zip"));

    std::vector<const Value*> tensors;
    std::unordered_map<const Value*, size_t> index;
    const json ours = canonical(file.root(), tensors, index);
    QVERIFY2(ours == manifest["value"], (ours.dump() + "\n!=\n" + manifest["value"].dump()).c_str());

    const auto& expected = manifest["tensors"];
    QCOMPARE(tensors.size(), expected.size());
    std::map<int, const void*> storage_of_python;  // python storage group -> our storage data
    std::map<const void*, int> python_of_storage;
    for (size_t i = 0; i < tensors.size(); ++i) {
      const auto& e = expected[i];
      const auto& info = tensors[i]->tensor;
      const at::Tensor t = file.tensor(info);
      const std::string what = name.toStdString() + " tensor " + std::to_string(i);
      QCOMPARE(QString::fromStdString(expnet::dtype_name(t.scalar_type())), QString::fromStdString(e["dtype"]));
      QCOMPARE(t.sizes().vec(), e["shape"].get<std::vector<int64_t>>());
      QCOMPARE(t.strides().vec(), e["stride"].get<std::vector<int64_t>>());
      QCOMPARE(t.storage_offset(), e["storage_offset"].get<int64_t>());
      QCOMPARE(info.requires_grad, e["requires_grad"].get<bool>());
      const std::string bytes = tensor_bytes(t);
      QVERIFY2(bytes == blob.substr(e["offset"].get<size_t>(), e["nbytes"].get<size_t>()), what.c_str());
      // Storage sharing: same partition as torch.load's.
      const void* data = t.storage().unsafeGetStorageImpl();
      const int group = e["storage"];
      if (storage_of_python.count(group)) QVERIFY2(storage_of_python[group] == data, what.c_str());
      if (python_of_storage.count(data)) QVERIFY2(python_of_storage[data] == group, what.c_str());
      storage_of_python[group] = data;
      python_of_storage[data] = group;
    }
  }

  void writtenFilesLoadInTorch() {
    const QString dir = expnet_test::makeTempDir("pth-writer");
    const at::Tensor base = torch::arange(24, torch::kFloat32).reshape({4, 6});
    expnet::PthWriter writer;
    auto& arena = writer.arena();
    Value* root = arena.dict(true);
    auto put = [&](const char* key, Value* v) { root->dict_set(arena.str(key), v); };
    put("base", writer.tensor(base));
    put("row", writer.tensor(base[2]));
    put("slice", writer.tensor(base.slice(0, 1, 3).slice(1, 2, 5)));
    put("transposed", writer.tensor(base.t()));
    put("bf16", writer.tensor(torch::arange(6).to(torch::kBFloat16) / 3));
    put("half", writer.tensor(torch::arange(6).to(torch::kHalf) / 3));
    put("double", writer.tensor(torch::arange(6, torch::kFloat64) / 3));
    put("int64", writer.tensor(torch::arange(5) - 2));
    put("int32", writer.tensor((torch::arange(5) - 2).to(torch::kInt32)));
    put("int16", writer.tensor((torch::arange(5) - 2).to(torch::kInt16)));
    put("int8", writer.tensor((torch::arange(5) - 2).to(torch::kInt8)));
    put("uint8", writer.tensor(torch::arange(5).to(torch::kUInt8)));
    put("bool", writer.tensor(torch::arange(6) % 2 == 0));
    put("scalar", writer.tensor(torch::tensor(3.25f)));
    put("empty", writer.tensor(torch::zeros({0, 3})));
    put("int", arena.integer(-5));
    put("big", arena.integer(INT64_MIN));
    put("float", arena.real(0.1));
    put("str", arena.str("h\xc3\xa9llo"));
    put("bytes", arena.bytes(std::string("\x00\xff", 2)));
    put("list", arena.list({arena.integer(1), arena.list({arena.none(), arena.boolean(true)})}));
    put("tuple", arena.tuple({arena.integer(1), arena.integer(2), arena.integer(3), arena.integer(4)}));
    writer.write((dir + "/written.pth").toStdString(), *root);
    QCOMPARE(run_python({script("check_written.py"), dir + "/written.pth"}), QStringLiteral("OK"));
  }

  void exportedCheckpointLoadsInTorch() {
    EXPNET_FIXTURE(config, "reference/tiny/model_config.json");
    EXPNET_FIXTURE(checkpoint, "reference/tiny/checkpoint.pth");
    EXPNET_FIXTURE(vocab, "reference/tiny/vocab.pickle");
    const QString dir = expnet_test::makeTempDir("checkpoint-export");
    const QString out = dir + "/exported.pth";
    const auto result = expnet_test::runProcess(
        expnet_test::cliPath(),
        {"checkpoint", "export", "--model", config, "--checkpoint", checkpoint, "--out", out, "--vocab", vocab});
    QVERIFY2(result.exitCode == 0, result.err.constData());
    QCOMPARE(run_python({script("check_export.py"), out, checkpoint, config, vocab}), QStringLiteral("OK"));

    // Our own file reads back: metadata, and exporting it again keeps the vocabulary.
    PthFile file(out.toStdString());
    const auto metadata = expnet::read_metadata(file);
    QVERIFY(metadata.config_json && metadata.vocabulary_json);
    QCOMPARE(expnet::parse_vocabulary(*metadata.vocabulary_json, "stored").words(),
             expnet::load_vocabulary(vocab.toStdString()).words());
    const auto again = expnet_test::runProcess(
        expnet_test::cliPath(), {"checkpoint", "export", "--model", config, "--checkpoint", out, "--out", dir + "/again.pth"});
    QVERIFY2(again.exitCode == 0, again.err.constData());
    QCOMPARE(run_python({script("check_export.py"), dir + "/again.pth", checkpoint, config, vocab}), QStringLiteral("OK"));

    // A config that is not a JSON object is refused, and nothing is written.
    const auto bad = expnet_test::runProcess(
        expnet_test::cliPath(), {"checkpoint", "export", "--model", vocab, "--checkpoint", checkpoint, "--out", dir + "/bad.pth"});
    QCOMPARE(bad.exitCode, 1);
    QVERIFY(!QFile::exists(dir + "/bad.pth"));

    // A checkpoint of another model (the tiny one under the `small` preset) is
    // refused with the names that differ, and nothing is written.
    const auto other = expnet_test::runProcess(
        expnet_test::cliPath(), {"checkpoint", "export", "--model", "small", "--checkpoint", checkpoint, "--out",
                                 dir + "/other.pth", "--vocab", vocab});
    QCOMPARE(other.exitCode, 1);
    QVERIFY2(other.err.contains("does not match --model small") && other.err.contains("mis-shaped"),
             other.err.constData());
    QVERIFY(!QFile::exists(dir + "/other.pth"));
  }

  void swinImageNetCheckpointIntoBackbone() {
    const QString dir = expnet_test::makeTempDir("checkpoint-special");
    const QString marker = dir + "/PWNED";
    const QString out = run_python({script("make_special_files.py"), dir, marker});
    QVERIFY2(!out.startsWith("python failed"), qPrintable(out));
    const std::string swin = (dir + "/swin.pth").toStdString();
    auto model = module_with({{"swin_transf.patch_embed.proj.weight", {4, 3, 2, 2}, at::kFloat},
                              {"swin_transf.layers.0.blocks.0.attn.relative_position_bias_table", {9, 2}, at::kFloat},
                              {"swin_transf.layers.0.blocks.0.attn.relative_position_index", {4, 4}, at::kLong},
                              {"swin_transf.layers.0.blocks.1.attn.relative_position_index", {4, 4}, at::kLong},
                              {"encoders.0.weight", {3}, at::kFloat}});
    const auto report = expnet::load_swin_backbone(*model, swin);
    QCOMPARE(QString::fromStdString(report.wrapper), QStringLiteral("model"));
    QCOMPARE(report.loaded.size(), size_t(3));
    QCOMPARE(report.ignored, (std::vector<std::string>{"head.weight", "head.bias"}));
    QCOMPARE(report.missing.size(), size_t(2));
    PthFile file(swin);
    const auto state = expnet::find_state_dict(file.root(), swin);
    const auto params = model->named_parameters(true);
    const auto buffers = model->named_buffers(true);
    QCOMPARE(tensor_bytes(params["swin_transf.patch_embed.proj.weight"]), tensor_bytes(file.tensor(*state.entries[0].second)));
    QCOMPARE(tensor_bytes(buffers["swin_transf.layers.0.blocks.0.attn.relative_position_index"]),
             tensor_bytes(file.tensor(*state.entries[2].second)));
    // A backbone parameter absent from the file is an error.
    auto other = module_with({{"swin_transf.patch_embed.proj.weight", {4, 3, 2, 2}, at::kFloat},
                              {"swin_transf.norm.weight", {8}, at::kFloat}});
    try {
      expnet::load_swin_backbone(*other, swin);
      QFAIL("loaded a Swin checkpoint that lacks a backbone parameter");
    } catch (const std::runtime_error& e) {
      QVERIFY2(QString(e.what()).contains("swin_transf.norm.weight"), e.what());
    }
  }

  void maliciousFilesRefused_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("global");
    QTest::newRow("os.system (GLOBAL)") << "evil_system.pth" << "posix.system";
    QTest::newRow("eval (STACK_GLOBAL)") << "evil_eval.pth" << "builtins.eval";
    QTest::newRow("subprocess.Popen") << "evil_popen.pth" << "subprocess.Popen";
    QTest::newRow("legacy os.system") << "evil_legacy.pth" << "posix.system";
    QTest::newRow("vocabulary os.system") << "evil_vocab.pickle" << "posix.system";
    QTest::newRow("zip without data.pkl") << "nodata.pth" << "";
  }
  void maliciousFilesRefused() {
    QFETCH(QString, file);
    QFETCH(QString, global);
    static QString base;
    if (base.isEmpty()) {
      base = expnet_test::makeTempDir("checkpoint-malicious");
      const QString out = run_python({script("make_special_files.py"), base, base + "/PWNED"});
      QVERIFY2(!out.startsWith("python failed"), qPrintable(out));
    }
    const QString marker = base + "/PWNED";
    const std::string path = (base + "/" + file).toStdString();
    QString err;
    try {
      if (file.endsWith(".pickle"))
        expnet::load_vocabulary(path);
      else
        PthFile pth(path);
    } catch (const std::runtime_error& e) {
      err = e.what();
    }
    QVERIFY2(!err.isEmpty(), "a malicious file was accepted");
    QVERIFY2(err.contains(QString::fromStdString(path)), qPrintable(err));
    if (!global.isEmpty()) QVERIFY2(err.contains("refused") && err.contains("'" + global + "'"), qPrintable(err));
    QVERIFY(!QFile::exists(marker));
  }

  // Tensor names are the file's text: printed with their escape sequences defused, and
  // a sum of crafted shapes past int64 said so instead of a negative total.
  void inspectDefusesNamesAndHugeTotals() {
    const QString dir = expnet_test::makeTempDir("checkpoint-inspect-names");
    const QString out = run_python({"-c", QStringLiteral(
        "import torch, sys\n"
        "big = torch.zeros(1).expand(2**62)\n"
        "torch.save({'a\\x1b[31mred\\x07': torch.zeros(2), 'b': big, 'c': big}, sys.argv[1])\n"), dir + "/names.pth"});
    QVERIFY2(!out.startsWith("python failed"), qPrintable(out));
    const auto text = expnet_test::runProcess(expnet_test::cliPath(), {"checkpoint", "inspect", dir + "/names.pth"});
    QVERIFY2(text.exitCode == 0, text.err.constData());
    QVERIFY2(!text.out.contains('\x1b') && !text.out.contains('\x07'), text.out.constData());
    QVERIFY2(text.out.contains("a\\x1b[31mred\\x07"), text.out.constData());
    QVERIFY2(text.out.contains("total elements: more than"), text.out.constData());
    const auto json = expnet_test::runProcess(expnet_test::cliPath(), {"checkpoint", "inspect", "--json", dir + "/names.pth"});
    QVERIFY2(json.exitCode == 0, json.err.constData());
    QVERIFY2(json.out.contains("\"a\\u001b[31mred\\u0007\""), json.out.constData());  // JSON's own escapes
  }
};

QTEST_GUILESS_MAIN(TestCheckpointPython)
#include "test_checkpoint_python.moc"

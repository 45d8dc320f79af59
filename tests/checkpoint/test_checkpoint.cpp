// The .pth reader against the fixtures made with the authors' PyTorch code,
// loading by name, and bad files. (PyTorch round trips: test_checkpoint_python.)
#include <torch/torch.h>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include <random>

#include "checkpoint_test_util.h"
#include "expnet/checkpoint/pth_file.h"
#include "expnet/checkpoint/state_dict.h"
#include "support/fixtures.h"

using namespace checkpoint_test;
using expnet::PthFile;
using expnet::pickle::Kind;

namespace {

QJsonObject read_json(const QString& path) { return QJsonDocument::fromJson(QByteArray::fromStdString(read_bytes(path))).object(); }

std::vector<int64_t> to_sizes(const QJsonArray& a) {
  std::vector<int64_t> out;
  for (const auto& v : a) out.push_back(v.toInteger());
  return out;
}

QString error_opening(const QString& path) {
  try {
    PthFile file(path.toStdString());
    for (const auto& s : file.storages()) file.read_storage(*s);
    return {};
  } catch (const std::runtime_error& e) {
    return QString::fromStdString(e.what());
  }
}

}  // namespace

class TestCheckpoint : public QObject {
  Q_OBJECT
 private slots:
  void readerAgreesWithExpectedBin() {
    EXPNET_FIXTURE(pth, "reference/tiny/expected.pth");
    EXPNET_FIXTURE(bin, "reference/tiny/expected.bin");
    EXPNET_FIXTURE(json, "reference/tiny/expected.json");
    const std::string raw = read_bytes(bin);
    const QJsonObject tensors = read_json(json)["tensors"].toObject();
    PthFile file(pth.toStdString());
    QCOMPARE(QString(file.format()), QStringLiteral("zip"));
    const auto state = expnet::find_state_dict(file.root(), pth.toStdString());
    QCOMPARE(state.entries.size(), size_t(tensors.size()));
    for (const auto& [name, info] : state.entries) {
      const QJsonObject expected = tensors[QString::fromStdString(name)].toObject();
      QVERIFY2(!expected.isEmpty(), name.c_str());
      const at::Tensor t = file.tensor(*info);
      QCOMPARE(QString::fromStdString(expnet::dtype_name(t.scalar_type())), expected["dtype"].toString());
      QCOMPARE(t.sizes().vec(), to_sizes(expected["shape"].toArray()));
      const std::string bytes = tensor_bytes(t);
      const auto offset = static_cast<size_t>(expected["offset"].toInteger());
      QVERIFY(offset + bytes.size() <= raw.size());
      QVERIFY2(raw.compare(offset, bytes.size(), bytes) == 0, name.c_str());
    }
  }

  void trainingCheckpointLoads() {
    EXPNET_FIXTURE(pth, "reference/tiny/checkpoint.pth");
    PthFile file(pth.toStdString());
    const auto& root = file.root();
    QVERIFY(root.is(Kind::Dict));
    QStringList keys;
    for (const auto& [k, v] : root.entries) keys << QString::fromStdString(k->text);
    QCOMPARE(keys, (QStringList{"model_state_dict", "optimizer_state_dict", "scheduler_state_dict", "data_loader_state_dict"}));
    const auto* model = root.find("model_state_dict");
    QVERIFY(model->ordered_dict);
    QVERIFY(model->state && model->state->find("_metadata"));
    const auto* metadata = model->state->find("_metadata");
    QVERIFY(metadata->ordered_dict);
    QCOMPARE(metadata->find("swin_transf")->find("version")->integer, int64_t(1));
    // Values as torch.load shows them (python3 -c "torch.load(...)['optimizer_state_dict']").
    const auto* group = root.find("optimizer_state_dict")->find("param_groups")->items.at(0);
    const auto* betas = group->find("betas");
    QVERIFY(betas->is(Kind::Tuple));
    QCOMPARE(betas->items.at(0)->real, 0.9);
    QCOMPARE(betas->items.at(1)->real, 0.98);
    QCOMPARE(group->find("eps")->real, 1e-08);
    QVERIFY(group->find("foreach")->is(Kind::None));
    QCOMPARE(group->find("amsgrad")->boolean, false);
    QCOMPARE(group->find("params")->items.size(), size_t(229));
    QCOMPARE(group->find("params")->items.at(228)->integer, int64_t(228));
    QCOMPARE(group->find("buffer")->items.size(), size_t(10));
    QVERIFY(root.find("optimizer_state_dict")->find("state")->entries.empty());
    const auto* scheduler = root.find("scheduler_state_dict");
    QCOMPARE(scheduler->find("base_lrs")->items.at(0)->real, 0.0002);
    QVERIFY(scheduler->find("lr_lambdas")->items.at(0)->is(Kind::None));
    QCOMPARE(root.find("data_loader_state_dict")->find("batch_size")->integer, int64_t(48));
    QCOMPARE(root.find("data_loader_state_dict")->find("array_of_init_seed")->items.at(2)->integer, int64_t(33));

    std::string wrapper;
    const auto tensors = expnet::read_state_dict(pth.toStdString(), &wrapper);
    QCOMPARE(QString::fromStdString(wrapper), QStringLiteral("model_state_dict"));
    QCOMPARE(tensors.size(), size_t(240));
    QCOMPARE(QString::fromStdString(tensors.front().first), QStringLiteral("swin_transf.patch_embed.proj.weight"));
    QCOMPARE(tensors.front().second.sizes().vec(), (std::vector<int64_t>{24, 3, 4, 4}));
  }

  void loadsIntoModuleByName() {
    EXPNET_FIXTURE(pth, "reference/tiny/checkpoint.pth");
    const auto reference = expnet::read_state_dict(pth.toStdString());
    std::vector<std::tuple<std::string, std::vector<int64_t>, at::ScalarType>> entries;
    for (const auto& [name, t] : reference) entries.emplace_back(name, t.sizes().vec(), t.scalar_type());

    auto module = module_with(entries);
    const auto report = expnet::load_state_dict(*module, pth.toStdString());
    QCOMPARE(report.loaded.size(), reference.size());
    QVERIFY(report.missing.empty() && report.unexpected.empty());
    std::map<std::string, at::Tensor> loaded;
    for (const auto& [name, t] : expnet::module_state(*module)) loaded[name] = t;
    QCOMPARE(loaded.size(), reference.size());
    for (const auto& [name, t] : reference) QVERIFY2(tensor_bytes(loaded.at(name)) == tensor_bytes(t), name.c_str());
    // Parameters stay parameters (trainable) after loading.
    QVERIFY(module->named_parameters(true)["swin_transf.patch_embed.proj.weight"].requires_grad());

    // Missing, unexpected and mis-shaped entries are errors naming them.
    auto fewer = entries;
    fewer.erase(fewer.begin() + 3);
    fewer.emplace_back("extra.weight", std::vector<int64_t>{2}, at::kFloat);
    std::get<1>(fewer[0]) = {24, 3, 4, 5};
    try {
      auto m = module_with(fewer);
      expnet::load_state_dict(*m, pth.toStdString());
      QFAIL("a mismatching module loaded");
    } catch (const std::runtime_error& e) {
      const QString err = e.what();
      QVERIFY2(err.contains("mis-shaped: swin_transf.patch_embed.proj.weight (checkpoint float32[24, 3, 4, 4], model float32[24, 3, 4, 5])"), qPrintable(err));
      QVERIFY2(err.contains("missing from the checkpoint: extra.weight"), qPrintable(err));
      QVERIFY2(err.contains("not in the model: " + QString::fromStdString(std::get<0>(entries[3]))), qPrintable(err));
    }
    // Allowed missing/unexpected: the rest loads, extra keeps its value.
    fewer = entries;
    fewer.erase(fewer.begin() + 3);
    fewer.emplace_back("extra.weight", std::vector<int64_t>{2}, at::kFloat);
    auto partial = module_with(fewer);
    expnet::LoadOptions options;
    options.allow_missing = options.allow_unexpected = true;
    const auto partial_report = expnet::load_state_dict(*partial, pth.toStdString(), options);
    QCOMPARE(partial_report.missing, std::vector<std::string>{"extra.weight"});
    QCOMPARE(partial_report.unexpected.size(), size_t(1));
    QCOMPARE(partial_report.loaded.size(), reference.size() - 1);
  }

  void inspectCommandListsEntries() {
    EXPNET_FIXTURE(pth, "reference/tiny/expected.pth");
    EXPNET_FIXTURE(json, "reference/tiny/expected.json");
    const QJsonObject tensors = read_json(json)["tensors"].toObject();
    const auto result = expnet_test::runProcess(expnet_test::cliPath(), {"checkpoint", "inspect", "--json", pth});
    QVERIFY2(result.exitCode == 0, result.err.constData());
    const auto lines = result.out.trimmed().split('\n');
    QCOMPARE(lines.size(), tensors.size());
    for (const auto& line : lines) {
      const QJsonObject entry = QJsonDocument::fromJson(line).object();
      const QJsonObject expected = tensors[entry["name"].toString()].toObject();
      QVERIFY2(!expected.isEmpty(), line.constData());
      QCOMPARE(entry["dtype"].toString(), expected["dtype"].toString());
      QCOMPARE(entry["shape"].toArray(), expected["shape"].toArray());
    }
    const auto bad = expnet_test::runProcess(expnet_test::cliPath(), {"checkpoint", "inspect", json});
    QCOMPARE(bad.exitCode, 1);
    QVERIFY2(bad.err.contains("not a PyTorch checkpoint"), bad.err.constData());
  }

  void badFilesGiveClearErrors() {
    EXPNET_FIXTURE(pth, "reference/tiny/expected.pth");
    const QString dir = expnet_test::makeTempDir("checkpoint-bad");
    const std::string good = read_bytes(pth);

    QVERIFY(error_opening(dir + "/missing.pth").contains("no such file"));
    write_bytes(dir + "/empty.pth", "");
    QVERIFY(error_opening(dir + "/empty.pth").contains("empty file"));
    write_bytes(dir + "/text.pth", "hello, this is not a checkpoint\n");
    QVERIFY(error_opening(dir + "/text.pth").contains("not a PyTorch checkpoint"));

    std::mt19937 rng(99);
    for (int i = 0; i < 20; ++i) {
      std::string random(static_cast<size_t>(1 + rng() % 5000), '\0');
      for (auto& c : random) c = static_cast<char>(rng());
      if (i % 2) random.replace(0, 4, "PK\x03\x04");  // random data behind a zip signature
      const QString path = dir + QString("/random%1.pth").arg(i);
      write_bytes(path, random);
      const QString err = error_opening(path);
      QVERIFY2(!err.isEmpty() && err.contains(path), qPrintable(err));
    }
    // Every truncation must fail cleanly (the zip directory is at the end).
    for (size_t n = 1; n < good.size(); n += (n < 300 ? 1 : 997)) {
      const QString path = dir + "/truncated.pth";
      write_bytes(path, good.substr(0, n));
      QVERIFY2(!error_opening(path).isEmpty(), qPrintable(QString("truncated to %1 bytes opened").arg(n)));
    }
    // A corrupted storage record size or pickle inside an intact archive.
    std::string corrupt = good;
    const size_t pkl = corrupt.find("data.pkl");
    QVERIFY(pkl != std::string::npos);
    for (size_t i = pkl + 60; i < pkl + 400 && i < corrupt.size(); i += 7) corrupt[i] = static_cast<char>(0xff);
    write_bytes(dir + "/corrupt.pth", corrupt);
    QVERIFY(!error_opening(dir + "/corrupt.pth").isEmpty());
  }
};

QTEST_GUILESS_MAIN(TestCheckpoint)
#include "test_checkpoint.moc"

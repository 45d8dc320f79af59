// Memory of loading an official-size checkpoint (520 entries, 233.8 M
// parameters, 935 MB): written by our writer from a module with the shapes of
// official_state_dict.json, loaded into a fresh module. Loading may add at most
// one storage at a time (plus small overhead) to the module's own memory: the
// state dict is never materialised next to the module.
#include <torch/torch.h>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include <chrono>
#include <fstream>
#include <string>

#include "checkpoint_test_util.h"
#include "expnet/checkpoint/state_dict.h"
#include "expnet/checkpoint/pth_writer.h"
#include "support/fixtures.h"

using namespace checkpoint_test;

namespace {

// kB from /proc/self/status ("VmRSS", "VmHWM").
long proc_status_kb(const std::string& key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key + ":", 0) == 0) return std::stol(line.substr(key.size() + 1));
  return -1;
}

void reset_peak() {  // Linux >= 4.0: writing 5 to clear_refs resets VmHWM
  std::ofstream("/proc/self/clear_refs") << "5";
}

}  // namespace

class TestCheckpointMemory : public QObject {
  Q_OBJECT
 private slots:
  void officialSizeLoadsWithoutSecondCopy() {
    EXPNET_FIXTURE(official, "reference/official_state_dict.json");
    const QJsonObject doc = QJsonDocument::fromJson(QByteArray::fromStdString(read_bytes(official))).object();
    std::vector<std::tuple<std::string, std::vector<int64_t>, at::ScalarType>> entries;
    int64_t elements = 0;
    for (const auto& e : doc["entries"].toArray()) {
      const QJsonObject entry = e.toObject();
      std::vector<int64_t> shape;
      int64_t n = 1;
      for (const auto& s : entry["shape"].toArray()) {
        shape.push_back(s.toInteger());
        n *= s.toInteger();
      }
      elements += n;
      entries.emplace_back(entry["name"].toString().toStdString(), shape,
                           entry["dtype"].toString() == "int64" ? at::kLong : at::kFloat);
    }
    QCOMPARE(entries.size(), size_t(520));
    const std::string path = (expnet_test::makeTempDir("checkpoint-memory") + "/official.pth").toStdString();
    {
      auto source = module_with(entries);
      torch::NoGradGuard no_grad;
      for (auto& p : source->parameters()) p.uniform_(-1, 1);
      expnet::CheckpointMetadata metadata;
      metadata.config_json = "{}";
      expnet::save_checkpoint(path, expnet::module_state(*source), metadata);
    }
    auto target = module_with(entries);  // zero-filled: its pages are resident
    const long module_kb = proc_status_kb("VmRSS");
    reset_peak();
    const auto start = std::chrono::steady_clock::now();
    const auto report = expnet::load_state_dict(*target, path);
    const double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const long peak_kb = proc_status_kb("VmHWM");
    QCOMPARE(report.loaded.size(), size_t(520));
    const long added_mb = (peak_kb - module_kb) / 1024;
    // Figures for the report only (no timing assertion).
    qInfo("official-size checkpoint: %lld elements; RSS with the module %ld MB, peak while loading %ld MB (+%ld MB); "
          "load_state_dict %.2f s",
          static_cast<long long>(elements), module_kb / 1024, peak_kb / 1024, added_mb, load_s);
    // The largest storage is 1536x6144 float32 (37.7 MB); a second copy of the model would add 935 MB.
    QVERIFY2(added_mb < 150, qPrintable(QString("loading added %1 MB").arg(added_mb)));
    // And the values arrived (a random parameter is not all zero any more).
    QVERIFY(target->named_parameters(true)["swin_transf.patch_embed.proj.weight"].abs().sum().item<float>() > 0);
  }
};

QTEST_GUILESS_MAIN(TestCheckpointMemory)
#include "test_checkpoint_memory.moc"

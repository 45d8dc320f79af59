// Backbone feature cache on disk: float16 round trip against the float32
// backbone output, resume after an interruption gives the same bytes as an
// uninterrupted extraction, truncated/damaged/foreign files are refused with
// clear errors, and `expnet features extract|info` on a real checkpoint.
#include <QFile>
#include <QtTest>

#include <torch/torch.h>

#include <filesystem>
#include <fstream>

#include "expnet/checkpoint/state_dict.h"
#include "expnet/checkpoint/pth_writer.h"
#include "expnet/data/dataset.h"
#include "expnet/data/feature_cache.h"
#include "expnet/image/image_decode.h"
#include "expnet/model/expansion_net.h"
#include "expnet/model/model_config.h"
#include "expnet/image/preprocess.h"
#include "expnet/data/shapes_dataset.h"
#include "support/fixtures.h"

using namespace expnet;
namespace fs = std::filesystem;

namespace {

const char* kTinyModel = R"({"swin_img_size": 32, "swin_patch_size": 4, "swin_in_chans": 3, "swin_embed_dim": 16,
  "swin_depths": [1, 1], "swin_num_heads": [1, 2], "swin_window_size": 4, "swin_mlp_ratio": 2.0,
  "swin_qkv_bias": true, "swin_ape": false, "swin_patch_norm": true, "final_swin_dim": 32,
  "d_model": 32, "N_enc": 1, "N_dec": 1, "ff": 64, "num_heads": 2, "num_exp_enc_list": [4, 8],
  "num_exp_dec": 4, "max_seq_len": 22})";

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Runs `f`, expecting a std::runtime_error whose message contains `needle`.
template <typename F>
bool throws_with(F&& f, const std::string& needle, std::string* message = nullptr) {
  try {
    f();
  } catch (const std::runtime_error& e) {
    if (message) *message = e.what();
    return std::string(e.what()).find(needle) != std::string::npos;
  }
  return false;
}

}  // namespace

class TestFeatureCache : public QObject {
  Q_OBJECT

  std::string dir_;
  Dataset dataset_;
  ModelConfig config_;
  std::unique_ptr<ExpansionNet> model_;
  FeatureCacheHeader header_;
  std::vector<std::string> paths_;

  std::function<at::Tensor(const at::Tensor&)> backbone() {
    return [this](const at::Tensor& x) { return (*model_)->backbone(x); };
  }
  // An extraction whose backbone throws "simulated crash" at its call number `crash_call`.
  void extractCrashingAt(const FeatureExtractOptions& o, int crash_call) {
    int calls = 0;
    auto dying = [&](const at::Tensor& x) {
      if (++calls == crash_call) throw std::runtime_error("simulated crash");
      return (*model_)->backbone(x);
    };
    torch::NoGradGuard ng;
    extract_feature_cache(header_, paths_, dying, o);
  }
  std::string fresh(const std::string& name) {
    const std::string p = dir_ + "/" + name;
    fs::remove(p);
    fs::remove(p + ".partial");
    fs::remove(p + ".partial.json");
    return p;
  }
  std::string extract(const std::string& name) {
    FeatureExtractOptions o;
    o.out = fresh(name);
    torch::NoGradGuard ng;
    extract_feature_cache(header_, paths_, backbone(), o);
    return o.out;
  }

 private slots:
  void initTestCase() {
    torch::set_num_threads(1);  // same bits in every extraction of this test
    dir_ = expnet_test::makeTempDir("feature_cache").toStdString();
    ShapesOptions so;
    so.out_dir = dir_ + "/shapes";
    so.images = 23;  // 19 train: chunks of 4 leave a partial last chunk
    so.seed = 5;
    so.threads = 1;
    dataset_ = load_dataset(make_shapes_dataset(so).json_path);
    config_ = ModelConfig::from_json(kTinyModel, "tiny");
    torch::manual_seed(3);
    model_ = std::make_unique<ExpansionNet>(config_, 20);
    (*model_)->eval();
    for (const auto& img : dataset_.images)
      if (is_training_split(img.split)) {
        header_.ids.push_back(img.cocoid);
        paths_.push_back(dataset_.image_path(img));
      }
    QCOMPARE(paths_.size(), size_t(19));
    const std::string text = config_.to_json();
    header_.model_config_hash = feature_hash_hex(feature_hash(text.data(), text.size()));
    header_.backbone = backbone_identity(*(*model_)->swin_transf);
    header_.image_size = config_.swin_img_size;
    header_.chunk_rows = 4;
    header_.splits = "train+restval";
  }

  void roundTripMatchesFloat32Backbone() {
    const std::string file = extract("round.fcache");
    FeatureCacheReader reader(file);
    const auto& h = reader.header();
    QCOMPARE(h.rows(), int64_t(19));
    QVERIFY(h.ids == header_.ids);
    QCOMPARE(h.backbone, header_.backbone);
    // The float32 truth: the backbone run here on every image at once.
    std::vector<cv::Mat> mats;
    for (const auto& p : paths_) mats.push_back(load_image_rgb(p));
    torch::Tensor truth;
    {
      torch::NoGradGuard ng;
      truth = (*model_)->backbone(images_to_model_input(mats, 32));
    }
    QCOMPARE(h.tokens, truth.size(1));
    QCOMPARE(h.dim, truth.size(2));
    QCOMPARE(h.dim, int64_t(32));
    std::vector<int64_t> rows(19);
    for (int64_t r = 0; r < 19; ++r) rows[static_cast<size_t>(r)] = r;
    std::reverse(rows.begin(), rows.end());  // any order
    const auto got = reader.features(rows);
    QCOMPARE(got.scalar_type(), torch::kFloat);
    const auto want = truth.flip(0);
    // float16: 11 significant bits, relative error <= 2^-11.
    const double worst = ((got - want).abs() / (want.abs() + 1e-3)).max().item<double>();
    QVERIFY2(worst < 1e-3, qPrintable(QString::number(worst)));
    QVERIFY(!torch::equal(got, want));  // really stored as float16
    QCOMPARE(reader.row_of(header_.ids[7]), int64_t(7));
    QCOMPARE(reader.row_of(-12345), int64_t(-1));
    reader.verify();
    // File size: data + header + trailer, nothing held in memory beyond the map.
    QVERIFY(reader.file_bytes() > 19 * h.tokens * h.dim * 2);
  }

  void resumedExtractionEqualsUninterrupted() {
    const std::string whole = extract("whole.fcache");
    // Interrupted after 2 committed chunks: the "crash" happens in the 3rd batch.
    FeatureExtractOptions o;
    o.out = fresh("resumed.fcache");
    QVERIFY(throws_with([&] { extractCrashingAt(o, 3); }, "simulated crash"));
    QVERIFY(!fs::exists(o.out));
    QVERIFY(fs::exists(o.out + ".partial"));
    QCOMPARE(feature_cache_partial_rows(o.out), int64_t(8));
    // An unfinished cache is never read as one.
    QVERIFY(throws_with([&] { FeatureCacheReader r(o.out); }, "not finished"));
    QVERIFY(throws_with([&] { FeatureCacheReader r(o.out + ".partial"); }, "unfinished extraction"));
    // A crash mid-write leaves garbage after the committed rows: resume rewrites it.
    {
      std::string bytes = read_bytes(o.out + ".partial");
      for (size_t i = bytes.size() - 200; i < bytes.size(); ++i) bytes[i] = static_cast<char>(0x7b);
      write_bytes(o.out + ".partial", bytes);
    }
    // Without --resume: refused, naming what to do.
    QVERIFY(throws_with([&] { extract_feature_cache(header_, paths_, backbone(), o); }, "--resume"));
    o.resume = true;
    int64_t first_progress = -1;
    o.progress = [&](int64_t done, int64_t) {
      if (first_progress < 0) first_progress = done;
    };
    FeatureExtractResult r;
    {
      torch::NoGradGuard ng;
      r = extract_feature_cache(header_, paths_, backbone(), o);
    }
    QCOMPARE(first_progress, int64_t(8));
    QCOMPARE(r.resumed_rows, int64_t(8));
    QCOMPARE(r.computed_rows, int64_t(11));
    QVERIFY(!fs::exists(o.out + ".partial"));
    QVERIFY(!fs::exists(o.out + ".partial.json"));
    QVERIFY(read_bytes(o.out) == read_bytes(whole));
    // --resume on a finished file of the same identity: nothing to do.
    FeatureExtractResult again = extract_feature_cache(header_, paths_, backbone(), o);
    QVERIFY(again.already_complete);
  }

  void resumingWithAnotherBackboneIsRefused() {
    FeatureExtractOptions o;
    o.out = fresh("other.fcache");
    QVERIFY(throws_with([&] { extractCrashingAt(o, 2); }, "simulated crash"));
    auto other = header_;
    other.backbone = "0123456789abcdef";
    o.resume = true;
    QVERIFY(throws_with([&] { extract_feature_cache(other, paths_, backbone(), o); }, "other backbone weights"));
  }

  void cacheFromAnotherBackboneIsRefused() {
    const std::string file = extract("identity.fcache");
    FeatureCacheReader reader(file);
    reader.require_identity(header_);  // same: accepted
    // Another backbone: one weight changed changes the identity.
    torch::manual_seed(3);
    ExpansionNet changed(config_, 20);
    {
      torch::NoGradGuard ng;
      changed->swin_transf->named_parameters()[0].value().view(-1)[0] += 1e-3;
    }
    auto other = header_;
    other.backbone = backbone_identity(*changed->swin_transf);
    QVERIFY(other.backbone != header_.backbone);
    std::string message;
    QVERIFY(throws_with([&] { reader.require_identity(other); }, "other backbone weights", &message));
    QVERIFY(message.find(file) != std::string::npos);
    auto fewer = header_;
    fewer.ids.pop_back();
    QVERIFY(throws_with([&] { reader.require_identity(fewer); }, "other images"));
    // An existing file is not overwritten or reused for another backbone.
    FeatureExtractOptions o;
    o.out = file;
    o.resume = true;
    QVERIFY(throws_with([&] { extract_feature_cache(other, paths_, backbone(), o); }, "other backbone weights"));
    o.resume = false;
    QVERIFY(throws_with([&] { extract_feature_cache(header_, paths_, backbone(), o); }, "already exists"));
  }

  void truncatedOrDamagedFileIsRefused() {
    const std::string good = extract("good.fcache");
    const std::string bytes = read_bytes(good);
    const std::string bad = dir_ + "/bad.fcache";
    // Cut anywhere: refused on open.
    for (size_t keep : {bytes.size() - 1, bytes.size() - 20, bytes.size() / 2, size_t(4100), size_t(60), size_t(10), size_t(0)}) {
      write_bytes(bad, bytes.substr(0, keep));
      std::string message;
      QVERIFY2(throws_with([&] { FeatureCacheReader r(bad); }, bad, &message), qPrintable(QString::fromStdString(message)));
      QVERIFY2(message.find("truncated") != std::string::npos || message.find("not an expnet feature cache") != std::string::npos ||
                   message.find("damaged") != std::string::npos,
               qPrintable(QString::fromStdString(message)));
    }
    // One flipped bit in the data: the checksum names the rows.
    std::string flipped = bytes;
    flipped[4096 + 3000] = static_cast<char>(flipped[4096 + 3000] ^ 0x10);
    write_bytes(bad, flipped);
    {
      FeatureCacheReader r(bad);
      std::string message;
      QVERIFY(throws_with([&] { r.verify(); }, "fail their checksum", &message));
      QVERIFY(message.find("rows ") != std::string::npos);
    }
    // Not a cache at all.
    write_bytes(bad, std::string(8192, 'x'));
    QVERIFY(throws_with([&] { FeatureCacheReader r(bad); }, "not an expnet feature cache"));
    QVERIFY(throws_with([&] { FeatureCacheReader r(dir_ + "/missing.fcache"); }, "cannot open"));
  }

  void cliExtractAndInfo() {
    // A checkpoint of ours (config inside) with the model's weights.
    const std::string ck = dir_ + "/tiny.pth";
    CheckpointMetadata meta;
    meta.config_json = config_.to_json();
    save_checkpoint(ck, module_state(**model_), meta);
    const QString out = QString::fromStdString(fresh("cli.fcache"));
    const QStringList args{"features", "extract", "--checkpoint", QString::fromStdString(ck), "--dataset",
                           QString::fromStdString(dir_ + "/shapes"), "--out", out, "--batch", "4", "--threads", "1"};
    const auto a = expnet_test::runProcess(expnet_test::cliPath(), args);
    QVERIFY2(a.exitCode == 0, a.err.constData());
    QVERIFY(a.err.contains("images/s"));
    QVERIFY(a.err.contains("19/19"));
    // Same features as the in-process extraction with the same weights.
    QVERIFY(read_bytes(out.toStdString()).size() == read_bytes(extract("inproc.fcache")).size());
    FeatureCacheReader cli(out.toStdString()), mine(dir_ + "/inproc.fcache");
    QCOMPARE(cli.header().backbone, header_.backbone);
    std::vector<int64_t> rows{0, 5, 18};
    QVERIFY(torch::equal(cli.features(rows), mine.features(rows)));

    const auto info = expnet_test::runProcess(expnet_test::cliPath(), {"features", "info", out, "--verify", "--json"});
    QVERIFY2(info.exitCode == 0, info.err.constData());
    QVERIFY(info.out.contains("\"rows\":19"));
    QVERIFY(info.out.contains(QByteArray("\"backbone\":\"") + QByteArray::fromStdString(header_.backbone)));
    // Again without --resume: a clear error; with it: already complete.
    const auto b = expnet_test::runProcess(expnet_test::cliPath(), args);
    QCOMPARE(b.exitCode, 1);
    QVERIFY(b.err.contains("already exists"));
    const auto c = expnet_test::runProcess(expnet_test::cliPath(), QStringList(args) << "--resume");
    QVERIFY2(c.exitCode == 0, c.err.constData());
    QVERIFY(c.out.contains("already complete"));
    // A truncated file: info fails with the reason.
    const std::string bytes = read_bytes(out.toStdString());
    write_bytes(out.toStdString(), bytes.substr(0, bytes.size() - 100));
    const auto d = expnet_test::runProcess(expnet_test::cliPath(), {"features", "info", out});
    QCOMPARE(d.exitCode, 1);
    QVERIFY2(d.err.contains("truncated"), d.err.constData());
    // An unknown split.
    const auto e = expnet_test::runProcess(expnet_test::cliPath(),
                                           {"features", "extract", "--checkpoint", QString::fromStdString(ck), "--dataset",
                                            QString::fromStdString(dir_ + "/shapes"), "--out", out + "2", "--split", "bogus"});
    QCOMPARE(e.exitCode, 1);
    QVERIFY(e.err.contains("unknown split"));
  }
};

QTEST_GUILESS_MAIN(TestFeatureCache)
#include "test_feature_cache.moc"

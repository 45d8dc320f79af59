// expnet train, frozen-backbone XE stage: with the on-disk feature cache the
// step losses equal those of the same run with the backbone run on every
// batch (feature_cache "off"), within float16 tolerance; the cache lives in
// the run folder while the stage runs and is removed when it ends; a run
// killed inside the frozen stage resumes with the cache, bit-identically.
#include <QFile>
#include <QProcess>
#include <QtTest>

#include <torch/torch.h>

#include <csignal>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "run_folder_util.h"
#include "expnet/checkpoint/state_dict.h"
#include "expnet/train/run_store.h"
#include "support/fixtures.h"

namespace {

QString write_config(const QString& dir, const QString& cache) {
  const QString text = QStringLiteral(R"({
 "name": "frozen-cache", "seed": 11,
 "model": {"swin_img_size": 32, "swin_patch_size": 4, "swin_in_chans": 3, "swin_embed_dim": 16,
           "swin_depths": [1, 1], "swin_num_heads": [1, 2], "swin_window_size": 4, "swin_mlp_ratio": 2.0,
           "swin_qkv_bias": true, "swin_ape": false, "swin_patch_norm": true, "final_swin_dim": 32,
           "d_model": 32, "N_enc": 1, "N_dec": 1, "ff": 64, "num_heads": 2, "num_exp_enc_list": [4, 8],
           "num_exp_dec": 4, "max_seq_len": 22},
 "dataset": "shapes", "shapes_images": 60, "vocab_min_count": 1, "validation_images": 3,
 "validation_beam": 1, "workers": 1, "feature_cache": "%1", "checkpoint_every": 1,
 "stages": [{"name": "A", "objective": "xe", "backbone": "frozen", "batch": 8, "lr": 1e-3,
             "schedule": "fixed", "epochs": 2, "dropout": 0.1, "max_batches_per_epoch": 5}]
})").arg(cache);
  const QString path = dir + "/config.json";
  QFile f(path);
  f.open(QIODevice::WriteOnly);
  f.write(text.toUtf8());
  return path;
}

std::vector<double> run_losses(const QString& name, const QString& cache, QByteArray* err) {
  const QString dir = expnet_test::makeTempDir(name);
  const auto r = expnet_test::runProcess(
      expnet_test::cliPath(),
      {"train", "--config", write_config(dir, cache), "--out", dir + "/run", "--threads", "1", "--no-progress", "--json"});
  *err = r.err;
  if (r.exitCode != 0) return {};
  expnet::RunStore store((dir + "/run/runs.sqlite").toStdString());
  std::vector<double> losses;
  for (const auto& s : store.steps(store.find_run("frozen-cache").id)) losses.push_back(s.loss);
  // The stage's cache is gone once the stage finished (disk stays bounded).
  if (std::filesystem::exists((dir + "/run/features").toStdString()) &&
      !std::filesystem::is_empty((dir + "/run/features").toStdString()))
    losses.push_back(-1);  // marks a leftover for the test to fail on
  return losses;
}

using expnet_test::latest_step;

}  // namespace

class TestTrainFeatureCache : public QObject {
  Q_OBJECT

 private slots:
  void diskCacheGivesTheLossesOfTheBackbone() {
    QByteArray err_disk, err_off;
    const auto disk = run_losses("train_cache_disk", "disk", &err_disk);
    QVERIFY2(!disk.empty(), err_disk.constData());
    QVERIFY2(err_disk.contains("extracting backbone features"), err_disk.constData());
    const auto off = run_losses("train_cache_off", "off", &err_off);
    QVERIFY2(!off.empty(), err_off.constData());
    QVERIFY(!err_off.contains("extracting backbone features"));
    QCOMPARE(disk.size(), size_t(10));  // 2 epochs x 5 steps, no leftover cache
    QCOMPARE(off.size(), size_t(10));
    for (size_t i = 0; i < disk.size(); ++i) {
      QVERIFY(std::isfinite(disk[i]) && disk[i] > 0);
      // float16 features: relative differences around 1e-4, growing a little with the updates.
      QVERIFY2(std::abs(disk[i] - off[i]) <= 2e-3 * std::abs(off[i]),
               qPrintable(QString("step %1: %2 vs %3").arg(i).arg(disk[i], 0, 'g', 10).arg(off[i], 0, 'g', 10)));
    }
    // The losses move: the comparison is not between two constants.
    QVERIFY(std::abs(disk.front() - disk.back()) > 1e-3);
  }

  // SIGKILL inside the frozen stage, --resume: the cache file is found, checked
  // and reused; the final parameters equal an uninterrupted run's bit for bit.
  void killedInFrozenStageResumesExactly() {
    const QString whole = expnet_test::makeTempDir("train_cache_whole");
    const QStringList base{"train", "--config", write_config(whole, "disk"), "--threads", "1", "--no-progress", "--json"};
    const auto a = expnet_test::runProcess(expnet_test::cliPath(), QStringList(base) << "--out" << whole + "/run");
    QVERIFY2(a.exitCode == 0, a.err.constData());
    const QString killed = expnet_test::makeTempDir("train_cache_killed") + "/run";
    QProcess p;
    p.start(expnet_test::cliPath(), QStringList(base) << "--out" << killed);
    QVERIFY(p.waitForStarted());
    QVERIFY2(expnet_test::signal_at_step(p, killed, 3, 5, SIGKILL), "the run ended before it could be killed");
    p.waitForFinished();
    const int at = latest_step(killed);
    QVERIFY(at >= 3 && at < 10);
    // The cache of the running stage is still there for the resume.
    QVERIFY(!std::filesystem::is_empty((killed + "/features").toStdString()));
    const auto b = expnet_test::runProcess(expnet_test::cliPath(), QStringList(base) << "--out" << killed << "--resume");
    QVERIFY2(b.exitCode == 0, b.err.constData());
    QVERIFY2(!b.err.contains("extracting backbone features"), b.err.constData());  // reused, not recomputed
    const auto x = expnet::read_state_dict((whole + "/run/final.pth").toStdString());
    const auto y = expnet::read_state_dict((killed + "/final.pth").toStdString());
    QCOMPARE(x.size(), y.size());
    QVERIFY(expnet_test::same_entries(x, y));
  }
};

QTEST_GUILESS_MAIN(TestTrainFeatureCache)
#include "test_train_feature_cache.moc"

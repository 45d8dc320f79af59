// Helpers shared by the distributed tests (test_distributed*.cpp).
#pragma once

#include "run_folder_util.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QtTest>

#include <torch/torch.h>

#include <fstream>

#include "expnet/checkpoint/state_dict.h"
#include "support/fixtures.h"

namespace {

const QString kConfig = QStringLiteral(EXPNET_TRAIN_TEST_DIR "/dist_train.json");

// dist_train.json with some stage-0 keys changed, written into `dir`.
inline QString config_with(const QString& dir, const QJsonObject& stage_changes, int max_batches = -1, int checkpoint_every = -1,
                           const QJsonObject& root_changes = {}) {
  QFile in(kConfig);
  in.open(QIODevice::ReadOnly);
  QJsonObject root = QJsonDocument::fromJson(in.readAll()).object();
  QJsonArray stages = root["stages"].toArray();
  QJsonObject stage = stages[0].toObject();
  for (auto it = stage_changes.begin(); it != stage_changes.end(); ++it) stage[it.key()] = it.value();
  if (max_batches > 0) stage["max_batches_per_epoch"] = max_batches;
  stages[0] = stage;
  root["stages"] = stages;
  if (checkpoint_every >= 0) root["checkpoint_every"] = checkpoint_every;
  for (auto it = root_changes.begin(); it != root_changes.end(); ++it) root[it.key()] = it.value();
  const QString path = dir + "/config.json";
  QFile out(path);
  out.open(QIODevice::WriteOnly);
  out.write(QJsonDocument(root).toJson());
  return path;
}

// Attention key biases have an exactly zero gradient (softmax is invariant to a
// shift shared by all keys), so their computed gradient is rounding noise that
// RAdam's m/sqrt(v) turns into lr-sized steps: any change of summation order
// (2 ranks, or another thread count) moves them differently. They are left out;
// every other parameter must agree. Swin's fused qkv bias keeps its q and v thirds.
inline torch::Tensor comparable_part(const std::string& name, const torch::Tensor& t) {
  const auto ends_with = [&](const std::string& suffix) {
    return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (ends_with("mha.Wk.bias")) return {};
  if (ends_with("attn.qkv.bias")) {
    const int64_t c = t.size(0) / 3;
    return torch::cat({t.narrow(0, 0, c), t.narrow(0, 2 * c, c)});
  }
  return t;
}

inline double max_abs_difference(const QString& a, const QString& b) {
  const auto x = expnet::read_state_dict(a.toStdString());
  const auto y = expnet::read_state_dict(b.toStdString());
  if (x.size() != y.size()) return 1e9;
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (x[i].first != y[i].first || x[i].second.sizes() != y[i].second.sizes()) return 1e9;
    const auto p = comparable_part(x[i].first, x[i].second.to(torch::kDouble));
    const auto q = comparable_part(y[i].first, y[i].second.to(torch::kDouble));
    if (p.defined() && p.numel() > 0) worst = std::max(worst, (p - q).abs().max().item<double>());
  }
  return worst;
}

using expnet_test::latest_step;

// timeout_s 0: no --dist-timeout (the config's dist_timeout holds).
inline void start_rank(QProcess& p, int rank, int port, const QString& config, const QString& out, int timeout_s) {
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert("RANK", QString::number(rank));
  env.insert("LOCAL_RANK", QString::number(rank));
  env.insert("WORLD_SIZE", "2");
  env.insert("MASTER_ADDR", "127.0.0.1");
  env.insert("MASTER_PORT", QString::number(port));
  p.setProcessEnvironment(env);
  QStringList args{"train", "--config", config, "--out", out, "--threads", "1", "--no-progress"};
  if (timeout_s > 0) args << "--dist-timeout" << QString::number(timeout_s);
  p.start(expnet_test::cliPath(), args);
}

}  // namespace


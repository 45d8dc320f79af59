#include "runs/runslisting.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSet>

#include <algorithm>
#include <exception>
#include <map>

#include "expnet/remote/run_mirror.h"
#include "expnet/train/run_lock.h"
#include "expnet/train/run_registry.h"

QString describeModelSize(const QJsonObject& config) {
  const QJsonObject model = config.value(QStringLiteral("model")).toObject();
  if (model.isEmpty()) return {};
  const int d = model.value(QStringLiteral("d_model")).toInt();
  const int encoders = model.value(QStringLiteral("N_enc")).toInt();
  const int decoders = model.value(QStringLiteral("N_dec")).toInt();
  return QStringLiteral("d %1 · %2+%3 layers").arg(d).arg(encoders).arg(decoders);
}

QString describeRecipe(const QJsonObject& config) {
  QStringList stages;
  for (const auto& stage : config.value(QStringLiteral("stages")).toArray()) {
    const QJsonObject s = stage.toObject();
    stages << QStringLiteral("%1 %2 ep").arg(s.value(QStringLiteral("objective")).toString(QStringLiteral("xe")))
                  .arg(s.value(QStringLiteral("epochs")).toInt(1));
  }
  const QString dataset = QFileInfo(config.value(QStringLiteral("dataset")).toString(QStringLiteral("shapes"))).fileName();
  return QStringLiteral("%1: %2").arg(dataset, stages.join(QStringLiteral(" → ")));
}

RunsListing loadRunsListing(const QStringList& extraStores) {
  RunsListing listing;
  QStringList paths;
  try {
    for (const auto& store : expnet::known_run_stores()) {
      const QString path = QString::fromStdString(store.path);
      if (store.exists)
        paths << path;
      else
        listing.missingStores << path;
    }
  } catch (const std::exception& e) {
    listing.problems.append({QStringLiteral("registry"), QString::fromStdString(e.what())});
  }
  for (const QString& extra : extraStores) paths << QFileInfo(extra).absoluteFilePath();
  QSet<QString> seen;
  for (const QString& path : paths) {
    const QString resolved = QFileInfo(path).canonicalFilePath();  // empty when the file is gone
    const QString canonical = resolved.isEmpty() ? path : resolved;
    if (seen.contains(canonical)) continue;
    seen.insert(canonical);
    listing.stores << canonical;
    try {
      const auto store = expnet::RunStore(canonical.toStdString(), expnet::RunStore::Open::existing);
      // A mirror's status is the host's, true when it was mirrored: no lock of its trainer is here.
      const auto mirror = expnet::mirror_origin(canonical.toStdString());
      for (auto& info : store.list_runs()) {
        RunRow row;
        row.storePath = canonical;
        if (mirror) row.host = QString::fromStdString(mirror->host);
        row.live = mirror ? info.status == "running" : expnet::run_is_live(canonical.toStdString(), info.id);
        row.status = mirror ? QString::fromStdString(info.status) : QString::fromStdString(expnet::run_status(info, row.live));
        const QJsonObject config = QJsonDocument::fromJson(QByteArray::fromStdString(info.config_json)).object();
        row.recipe = describeRecipe(config);
        row.modelSize = describeModelSize(config);
        row.info = std::move(info);
        listing.rows.push_back(std::move(row));
      }
    } catch (const std::exception& e) {
      listing.problems.append({canonical, QString::fromStdString(e.what())});
    }
  }
  std::stable_sort(listing.rows.begin(), listing.rows.end(),
                   [](const RunRow& a, const RunRow& b) { return a.info.created_at > b.info.created_at; });
  return listing;
}

QVector<RunDetails> loadRunDetails(const QVector<RunRef>& runs) {
  QVector<RunDetails> out;
  std::map<QString, std::vector<int>> byStore;  // one connection per store
  for (int i = 0; i < runs.size(); ++i) {
    RunDetails details;
    details.storePath = runs[i].storePath;
    details.id = runs[i].id;
    details.key = RunRow::runKey(runs[i].storePath, runs[i].id);
    out.append(details);
    byStore[runs[i].storePath].push_back(i);
  }
  for (const auto& [path, indexes] : byStore) {
    try {
      const auto store = expnet::RunStore(path.toStdString(), expnet::RunStore::Open::existing);
      for (int i : indexes) {
        RunDetails& d = out[i];
        try {
          const auto info = store.find_run(std::to_string(d.id));
          d.config = QJsonDocument::fromJson(QByteArray::fromStdString(info.config_json)).object();
          d.rows = std::make_shared<RunRows>(RunRows{store.steps(d.id), store.validations(d.id)});
          d.samples = store.samples(d.id);
        } catch (const std::exception& e) {
          d.error = QString::fromStdString(e.what());
        }
      }
    } catch (const std::exception& e) {
      for (int i : indexes) out[i].error = QString::fromStdString(e.what());
    }
  }
  return out;
}

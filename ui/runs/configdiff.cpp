#include "runs/configdiff.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QMap>

#include <algorithm>

namespace {

// A scalar as JSON writes it (strings quoted): a one-element array, brackets stripped.
QString compactJson(const QJsonValue& value) {
  const QByteArray json = QJsonDocument(QJsonArray{value}).toJson(QJsonDocument::Compact);
  return QString::fromUtf8(json.mid(1, json.size() - 2));
}

void flatten(const QJsonValue& value, const QString& path, QVector<QPair<QString, QString>>& out) {
  if (value.isObject()) {
    const QJsonObject object = value.toObject();
    if (object.isEmpty()) out.append({path, QStringLiteral("{}")});
    for (auto it = object.begin(); it != object.end(); ++it)
      flatten(it.value(), path.isEmpty() ? it.key() : path + QLatin1Char('.') + it.key(), out);
  } else if (value.isArray()) {
    const QJsonArray array = value.toArray();
    if (array.isEmpty()) out.append({path, QStringLiteral("[]")});
    for (int i = 0; i < array.size(); ++i) flatten(array[i], QStringLiteral("%1[%2]").arg(path).arg(i), out);
  } else {
    out.append({path, compactJson(value)});
  }
}

}  // namespace

QVector<QPair<QString, QString>> flattenConfig(const QJsonObject& config) {
  QVector<QPair<QString, QString>> out;
  flatten(config, QString(), out);
  return out;
}

QVector<ConfigDifference> diffConfigs(const QVector<QJsonObject>& configs) {
  QVector<ConfigDifference> out;
  if (configs.size() < 2) return out;
  QVector<QMap<QString, QString>> leaves;
  QMap<QString, int> keys;  // ordered union
  for (const QJsonObject& config : configs) {
    QMap<QString, QString> map;
    for (const auto& [key, value] : flattenConfig(config)) {
      map.insert(key, value);
      keys.insert(key, 0);
    }
    leaves.append(map);
  }
  const QString absent = QStringLiteral("—");
  for (auto it = keys.keyBegin(); it != keys.keyEnd(); ++it) {
    ConfigDifference difference{*it, {}};
    for (const auto& map : leaves) difference.values << map.value(*it, absent);
    const bool same = std::all_of(difference.values.begin(), difference.values.end(),
                                  [&](const QString& v) { return v == difference.values.front(); });
    if (!same) out.append(difference);
  }
  return out;
}

// The keys on which several runs' training configs differ, flattened to paths
// ("stages[1].lr", "model.d_model") so nested recipes compare line by line.
#pragma once

#include <QJsonObject>
#include <QString>
#include <QStringList>
#include <QVector>

struct ConfigDifference {
  QString key;           // flattened path
  QStringList values;    // one per config, as compact JSON; "—" where the key is absent
};

// Every leaf key whose value is not the same in all `configs` (a key missing in
// some is a difference). Sorted by key; with fewer than two configs, none.
QVector<ConfigDifference> diffConfigs(const QVector<QJsonObject>& configs);

// The leaves of one config: path -> compact JSON of the value.
QVector<QPair<QString, QString>> flattenConfig(const QJsonObject& config);

#include "caption/recentmodels.h"

#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMenu>

namespace {
QString absolute(const QString& path) { return path.isEmpty() ? path : QFileInfo(path).absoluteFilePath(); }

// A config is a preset name or a JSON file.
bool isConfigFile(const QString& model) { return model.endsWith(QStringLiteral(".json"), Qt::CaseInsensitive); }

bool sameModel(const ModelRequest& a, const ModelRequest& b) {
  return a.model == b.model && a.checkpoint == b.checkpoint && a.vocab == b.vocab;
}
}  // namespace

void RecentModels::add(const ModelRequest& request) {
  ModelRequest kept;
  kept.model = isConfigFile(request.model) ? absolute(request.model) : request.model;
  kept.checkpoint = absolute(request.checkpoint);
  kept.vocab = absolute(request.vocab);
  kept.precision = request.precision;  // reloaded as it was loaded
  models_.removeIf([&](const ModelRequest& m) { return sameModel(m, kept); });
  models_.prepend(kept);
  while (models_.size() > kMax) models_.removeLast();
}

QString RecentModels::missingFile(const ModelRequest& request) {
  for (const QString& path : {request.checkpoint, request.vocab, isConfigFile(request.model) ? request.model : QString()})
    if (!path.isEmpty() && !QFileInfo::exists(path)) return path;
  return {};
}

QStringList RecentModels::toSettings() const {
  QStringList entries;
  for (const auto& m : models_)
    entries << QString::fromUtf8(
        QJsonDocument(QJsonObject{{"model", m.model}, {"checkpoint", m.checkpoint}, {"vocab", m.vocab}, {"precision", m.precision}})
            .toJson(QJsonDocument::Compact));
  return entries;
}

void RecentModels::fromSettings(const QStringList& entries) {
  models_.clear();
  for (const QString& entry : entries) {
    const QJsonObject o = QJsonDocument::fromJson(entry.toUtf8()).object();
    if (o.isEmpty() || models_.size() >= kMax) continue;
    ModelRequest m;
    m.model = o.value(QStringLiteral("model")).toString();
    m.checkpoint = o.value(QStringLiteral("checkpoint")).toString();
    m.vocab = o.value(QStringLiteral("vocab")).toString();
    m.precision = o.value(QStringLiteral("precision")).toString(QStringLiteral("fp32"));
    models_.push_back(m);
  }
}

void RecentModels::fillMenu(QMenu* menu, const std::function<void(const ModelRequest&)>& load) const {
  menu->clear();
  for (const auto& m : models_) {
    const QString missing = missingFile(m);
    QAction* action = menu->addAction(modelDisplayName(m), menu, [load, m] { load(m); });
    action->setToolTip(missing.isEmpty() ? m.checkpoint : QStringLiteral("%1 is gone").arg(missing));
    action->setEnabled(missing.isEmpty());
  }
  if (models_.isEmpty()) menu->addAction(QStringLiteral("(no model loaded yet)"))->setEnabled(false);
  menu->setToolTipsVisible(true);
}

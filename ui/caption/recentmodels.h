// The models loaded lately (config, checkpoint, vocabulary), newest first, at
// most kMax: the Model box's "Recent" menu, and the model the studio reloads at
// start. Kept in the settings as one JSON object per model.
#pragma once

#include <QStringList>
#include <QVector>

#include <functional>

#include "caption/captionworker.h"

class QMenu;

class RecentModels {
 public:
  // Puts the model first (its files made absolute; device and threads are not kept).
  void add(const ModelRequest& request);
  const QVector<ModelRequest>& models() const { return models_; }

  // The first file a model names that is gone (checkpoint, vocabulary, config JSON), or "".
  static QString missingFile(const ModelRequest& request);

  QStringList toSettings() const;
  void fromSettings(const QStringList& entries);  // entries that are not such objects are skipped

  // One item per model calling `load`, or a disabled "(no model loaded yet)".
  void fillMenu(QMenu* menu, const std::function<void(const ModelRequest&)>& load) const;

 private:
  static constexpr int kMax = 8;
  QVector<ModelRequest> models_;
};

// Form fields a loaded checkpoint may fill: the decoding options it carries
// (expnet/decode/carried_decoding.h), each field read and written as JSON under
// its option key. A checkpoint's options replace the user's values; the next
// model's load gives back the user's value of every field the previous
// checkpoint set and the user left as it was, and the settings remember the
// user's values, never a checkpoint's. A field the user changes stays theirs.
#pragma once

#include <QJsonObject>
#include <QJsonValue>
#include <QString>
#include <QStringList>
#include <QVector>

#include <functional>

class CarriedFields {
 public:
  using Get = std::function<QJsonValue()>;
  using Set = std::function<void(const QJsonValue&)>;
  void add(const QString& key, Get get, Set set);

  // The options of the model just loaded (its checkpoint's "decoding"; {} for none).
  void apply(const QJsonObject& carried);
  const QJsonObject& carried() const { return carried_; }

  // Carried keys in effect: without a field, or whose field still shows the checkpoint's value.
  QStringList inEffect() const;
  // Carried keys whose field the user changed since the load.
  QStringList changed() const;
  // What the settings keep for `key`: the user's value, not the checkpoint's.
  QJsonValue userValue(const QString& key) const;
  // "From the checkpoint: beam_size 3, max_word_run 1 (changed here: beam_size)"; "" when none carried.
  QString note() const;

 private:
  struct Field {
    QString key;
    Get get;
    Set set;
  };
  const Field* field(const QString& key) const;
  bool showsCarried(const Field& field) const;

  QVector<Field> fields_;
  QJsonObject carried_;
  QJsonObject shown_;  // what each field showed once the checkpoint's value was set (widgets may round)
  QJsonObject user_;   // each field's value before the checkpoint set it
};

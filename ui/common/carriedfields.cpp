#include "common/carriedfields.h"

namespace {
// Spin boxes give integers and doubles: 3 and 3.0 are one value.
bool sameValue(const QJsonValue& a, const QJsonValue& b) {
  if (a.isDouble() && b.isDouble()) return a.toDouble() == b.toDouble();
  return a == b;
}

QString valueText(const QJsonValue& value) {
  if (value.isString()) return value.toString();
  if (value.isBool()) return value.toBool() ? QStringLiteral("true") : QStringLiteral("false");
  return QString::number(value.toDouble());
}
}  // namespace

void CarriedFields::add(const QString& key, Get get, Set set) { fields_.push_back({key, std::move(get), std::move(set)}); }

const CarriedFields::Field* CarriedFields::field(const QString& key) const {
  for (const auto& f : fields_)
    if (f.key == key) return &f;
  return nullptr;
}

bool CarriedFields::showsCarried(const Field& f) const { return sameValue(f.get(), shown_.value(f.key)); }

void CarriedFields::apply(const QJsonObject& carried) {
  // The previous checkpoint's values go; the user's come back where untouched.
  for (const auto& f : fields_)
    if (shown_.contains(f.key) && showsCarried(f)) f.set(user_.value(f.key));
  shown_ = {};
  user_ = {};
  carried_ = carried;
  for (const auto& f : fields_) {
    if (!carried.contains(f.key)) continue;
    user_.insert(f.key, f.get());
    f.set(carried.value(f.key));
    shown_.insert(f.key, f.get());
  }
}

QStringList CarriedFields::inEffect() const {
  QStringList keys;
  for (auto it = carried_.begin(); it != carried_.end(); ++it) {
    const Field* f = field(it.key());
    if (!f || showsCarried(*f)) keys << it.key();
  }
  return keys;
}

QStringList CarriedFields::changed() const {
  QStringList keys;
  for (const auto& f : fields_)
    if (shown_.contains(f.key) && !showsCarried(f)) keys << f.key;
  return keys;
}

QJsonValue CarriedFields::userValue(const QString& key) const {
  const Field* f = field(key);
  if (!f) return {};
  return shown_.contains(key) && showsCarried(*f) ? user_.value(key) : f->get();
}

QString CarriedFields::note() const {
  if (carried_.isEmpty()) return {};
  QStringList parts;
  for (auto it = carried_.begin(); it != carried_.end(); ++it) parts << it.key() + QLatin1Char(' ') + valueText(it.value());
  QString text = QStringLiteral("From the checkpoint: %1").arg(parts.join(QStringLiteral(", ")));
  const QStringList mine = changed();
  if (!mine.isEmpty()) text += QStringLiteral(" (changed here: %1)").arg(mine.join(QStringLiteral(", ")));
  return text;
}

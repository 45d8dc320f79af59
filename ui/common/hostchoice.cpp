#include "common/hostchoice.h"

#include <QSignalBlocker>

#include "expnet/remote/hosts.h"

HostChoice::HostChoice(QWidget* parent) : QComboBox(parent) { reload(); }

QString HostChoice::host() const { return currentIndex() <= 0 ? QString() : currentText(); }

bool HostChoice::setHost(const QString& host) {
  const int index = host.isEmpty() ? 0 : findText(host);
  if (index >= 0) setCurrentIndex(index);
  return index >= 0;
}

QString HostChoice::reload() {
  const QString current = host();
  QStringList names;
  QString error;
  try {
    for (const auto& h : expnet::load_hosts()) names << QString::fromStdString(h.name);
  } catch (const std::exception& e) {
    error = QString::fromStdString(e.what());
  }
  {
    const QSignalBlocker quiet(this);
    clear();
    addItem(QStringLiteral("this computer"));
    addItems(names);
  }
  if (!setHost(current)) setCurrentIndex(0);  // a removed host: this computer (announced)
  return error;
}

void HostChoice::showPopup() {
  reload();
  QComboBox::showPopup();
}

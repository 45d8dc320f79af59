// "Where": this computer, or a host of hosts.json (expnet/remote/hosts.h), as
// a combo box. Reads the list again on reload() (after the Hosts dialog) and
// each time it opens, so a host added elsewhere (the CLI) is offered too.
#pragma once

#include <QComboBox>

class HostChoice : public QComboBox {
  Q_OBJECT
 public:
  explicit HostChoice(QWidget* parent = nullptr);
  QString host() const;  // "" for this computer
  // Selects this computer ("") or a host; false when the host is not in the list.
  bool setHost(const QString& host);
  // The hosts file again; its error (one sentence naming the file), "" when it is fine.
  QString reload();
  void showPopup() override;
};

// File > Hosts…: the remote hosts of hosts.json (expnet/remote/hosts.h), the
// same list `expnet hosts` edits: add or update, remove, and check (runs
// `expnet hosts check` in a child process: the engine there, its GPUs and free
// space, or one sentence on what is wrong and what to do).
#pragma once

#include <QDialog>

#include "common/hostcommand.h"
#include "expnet/remote/hosts.h"

class HintLabel;
class QLineEdit;
class QPushButton;
class QTableWidget;

class HostsDialog : public QDialog {
  Q_OBJECT
 public:
  explicit HostsDialog(QWidget* parent = nullptr);

  // Validated (check_host) and saved; false with `error` naming the field otherwise.
  bool addHost(const expnet::Host& host, QString* error);
  bool removeHost(const QString& name, QString* error);
  void check(const QString& name);
  bool isChecking() const { return checker_.isRunning(); }
  QString status() const;
  QStringList hostNames() const;

 signals:
  void hostsChanged();
  void checked(const QString& host, bool ok, const QString& text);

 private:
  void reload();
  void onChecked(int exitCode, const QByteArray& out);
  void fillForm(int row);
  void addFromForm();
  void setStatus(const QString& text, bool error);

  std::vector<expnet::Host> hosts_;
  QTableWidget* table_;
  QLineEdit *name_, *destination_, *program_, *workDir_, *sshOptions_;
  QPushButton *add_, *remove_, *check_;
  HintLabel* status_;
  HostCommand checker_;
  QString checking_;
};

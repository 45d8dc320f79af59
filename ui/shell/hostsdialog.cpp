#include "shell/hostsdialog.h"

#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QProcess>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>

#include "common/hintlabel.h"

HostsDialog::HostsDialog(QWidget* parent) : QDialog(parent) {
  setWindowTitle(QStringLiteral("Hosts"));
  auto* layout = new QVBoxLayout(this);
  auto* intro = new QLabel(QStringLiteral(
      "Machines the studio trains on, reached with your own OpenSSH: its config, keys and agent (docs/remote.md). "
      "The command line shares this list: expnet hosts, expnet train --host."));
  intro->setWordWrap(true);
  layout->addWidget(intro);
  table_ = new QTableWidget(0, 4);
  table_->setObjectName(QStringLiteral("hosts"));
  table_->setHorizontalHeaderLabels({QStringLiteral("Name"), QStringLiteral("SSH destination"), QStringLiteral("expnet there"),
                                     QStringLiteral("Work folder")});
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->verticalHeader()->hide();
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  connect(table_, &QTableWidget::currentCellChanged, this, [this](int row) { fillForm(row); });
  layout->addWidget(table_, 1);

  auto* form = new QFormLayout;
  name_ = new QLineEdit;
  name_->setPlaceholderText(QStringLiteral("gpu1"));
  destination_ = new QLineEdit;
  destination_->setPlaceholderText(QStringLiteral("user@gpu1.example.org, or an alias of ~/.ssh/config"));
  program_ = new QLineEdit(QStringLiteral("expnet"));
  program_->setToolTip(QStringLiteral("expnet on the host: a name on its PATH or an absolute path"));
  workDir_ = new QLineEdit(QStringLiteral("~/expnet"));
  workDir_->setToolTip(QStringLiteral("Where runs go on the host; relative run folders and dataset paths start there"));
  sshOptions_ = new QLineEdit;
  sshOptions_->setPlaceholderText(QStringLiteral("optional, e.g. -F /path/ssh_config"));
  sshOptions_->setToolTip(QStringLiteral("Extra ssh arguments, split as a command line (quotes group); never run by a shell"));
  form->addRow(QStringLiteral("Name:"), name_);
  form->addRow(QStringLiteral("SSH destination:"), destination_);
  form->addRow(QStringLiteral("expnet there:"), program_);
  form->addRow(QStringLiteral("Work folder:"), workDir_);
  form->addRow(QStringLiteral("SSH options:"), sshOptions_);
  layout->addLayout(form);

  auto* buttons = new QHBoxLayout;
  add_ = new QPushButton(QStringLiteral("Add or update"));
  remove_ = new QPushButton(QStringLiteral("Remove"));
  check_ = new QPushButton(QStringLiteral("Check"));
  check_->setToolTip(QStringLiteral("Reach the host over ssh: its expnet version, GPUs and free space"));
  auto* close = new QPushButton(QStringLiteral("Close"));
  connect(add_, &QPushButton::clicked, this, &HostsDialog::addFromForm);
  connect(remove_, &QPushButton::clicked, this, [this] {
    QString error;
    if (!removeHost(name_->text().trimmed(), &error)) setStatus(error, true);
  });
  connect(check_, &QPushButton::clicked, this, [this] { check(name_->text().trimmed()); });
  connect(close, &QPushButton::clicked, this, &QDialog::accept);
  for (QPushButton* b : {add_, remove_, check_}) buttons->addWidget(b);
  buttons->addStretch(1);
  buttons->addWidget(close);
  layout->addLayout(buttons);
  status_ = HintLabel::statusLine(QStringLiteral("status"));
  layout->addWidget(status_);

  connect(&checker_, &HostCommand::finished, this, &HostsDialog::onChecked);
  resize(720, 460);
  reload();
}

void HostsDialog::onChecked(int exitCode, const QByteArray& out) {
  check_->setEnabled(true);
  const QJsonObject report = QJsonDocument::fromJson(out.left(out.indexOf('\n'))).object();
  if (exitCode != 0 || !report.value(QStringLiteral("ok")).toBool()) {
    const QString why = checker_.lastError().isEmpty() ? QStringLiteral("host '%1': the check failed").arg(checking_)
                                                       : checker_.lastError();
    setStatus(why, true);
    emit checked(checking_, false, why);
    return;
  }
  const QJsonObject doctor = report.value(QStringLiteral("doctor")).toObject();
  QStringList gpus;
  for (const auto& gpu : doctor.value(QStringLiteral("gpus")).toArray())
    gpus << QStringLiteral("%1 (%2 GiB)")
                .arg(gpu.toObject().value(QStringLiteral("name")).toString())
                .arg(gpu.toObject().value(QStringLiteral("memory_bytes")).toDouble() / double(1 << 30), 0, 'f', 0);
  const QString text = QStringLiteral("%1: expnet %2, %3, %4 GiB free in its work folder")
                           .arg(checking_, doctor.value(QStringLiteral("version")).toString(),
                                gpus.isEmpty() ? QStringLiteral("no GPU (trains on its CPUs)") : gpus.join(QStringLiteral(", ")))
                           .arg(doctor.value(QStringLiteral("free_bytes")).toDouble() / double(1 << 30), 0, 'f', 1);
  setStatus(text, false);
  emit checked(checking_, true, text);
}

void HostsDialog::reload() {
  try {
    hosts_ = expnet::load_hosts();
  } catch (const std::exception& e) {
    hosts_.clear();
    setStatus(QString::fromStdString(e.what()), true);
  }
  table_->setRowCount(int(hosts_.size()));
  for (int row = 0; row < int(hosts_.size()); ++row) {
    const auto& h = hosts_[size_t(row)];
    const QStringList cells{QString::fromStdString(h.name), QString::fromStdString(h.destination),
                            QString::fromStdString(h.program), QString::fromStdString(h.work_dir)};
    for (int column = 0; column < cells.size(); ++column) table_->setItem(row, column, new QTableWidgetItem(cells[column]));
  }
  table_->resizeColumnsToContents();
}

void HostsDialog::fillForm(int row) {
  if (row < 0 || row >= int(hosts_.size())) return;
  const auto& h = hosts_[size_t(row)];
  name_->setText(QString::fromStdString(h.name));
  destination_->setText(QString::fromStdString(h.destination));
  program_->setText(QString::fromStdString(h.program));
  workDir_->setText(QString::fromStdString(h.work_dir));
  QStringList options;
  for (const auto& option : h.ssh_options) {
    const QString text = QString::fromStdString(option);
    options << (text.contains(QLatin1Char(' ')) ? QLatin1Char('"') + text + QLatin1Char('"') : text);
  }
  sshOptions_->setText(options.join(QLatin1Char(' ')));
}

void HostsDialog::addFromForm() {
  expnet::Host host;
  host.name = name_->text().trimmed().toStdString();
  host.destination = destination_->text().trimmed().toStdString();
  host.program = program_->text().trimmed().toStdString();
  host.work_dir = workDir_->text().trimmed().toStdString();
  for (const QString& option : QProcess::splitCommand(sshOptions_->text())) host.ssh_options.push_back(option.toStdString());
  QString error;
  if (!addHost(host, &error)) setStatus(error, true);
}

bool HostsDialog::addHost(const expnet::Host& host, QString* error) {
  try {
    expnet::add_host(host);
  } catch (const std::exception& e) {
    *error = QString::fromStdString(e.what());
    return false;
  }
  reload();
  setStatus(QStringLiteral("Saved %1 in %2; Check reaches it.")
                .arg(QString::fromStdString(host.name), QString::fromStdString(expnet::hosts_file_path())),
            false);
  emit hostsChanged();
  return true;
}

bool HostsDialog::removeHost(const QString& name, QString* error) {
  try {
    expnet::remove_host(name.toStdString());
  } catch (const std::exception& e) {
    *error = QString::fromStdString(e.what());
    return false;
  }
  reload();
  setStatus(QStringLiteral("Removed %1.").arg(name), false);
  emit hostsChanged();
  return true;
}

void HostsDialog::check(const QString& name) {
  if (checker_.isRunning() || name.isEmpty()) return;
  checking_ = name;
  check_->setEnabled(false);
  setStatus(QStringLiteral("Checking %1 over ssh…").arg(name), false);
  checker_.start({QStringLiteral("hosts"), QStringLiteral("check"), name, QStringLiteral("--json")});
}

QString HostsDialog::status() const { return status_->text(); }

QStringList HostsDialog::hostNames() const {
  QStringList names;
  for (const auto& h : hosts_) names << QString::fromStdString(h.name);
  return names;
}

void HostsDialog::setStatus(const QString& text, bool error) {
  status_->setText(text);
  status_->setKind(error ? HintLabel::Kind::Error : HintLabel::Kind::Status);
}

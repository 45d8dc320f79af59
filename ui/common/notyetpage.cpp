#include "common/notyetpage.h"

#include <QLabel>
#include <QVBoxLayout>

#include "common/hintlabel.h"

NotYetPage::NotYetPage(QString id, QString title, QString capability, QString meanwhile, QWidget* parent)
    : StudioPage(parent),
      id_(std::move(id)),
      title_(std::move(title)),
      capability_(std::move(capability)),
      meanwhile_(std::move(meanwhile)) {
  auto* layout = new QVBoxLayout(this);
  auto* heading = new QLabel(QStringLiteral("<h2>%1</h2>").arg(title_.toHtmlEscaped()));
  auto* status = new QLabel(QStringLiteral("<b>Not yet available.</b> This page shows no content until its capability is built."));
  auto* text = new QLabel(capability_);
  auto* where = new HintLabel(meanwhile_);
  for (auto* label : {heading, status, text, static_cast<QLabel*>(where)}) {
    label->setWordWrap(true);
    label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(label);
  }
  layout->addStretch();
  layout->setContentsMargins(32, 24, 32, 24);
}

QJsonObject NotYetPage::describe() const {
  return {{"status", "not yet available"}, {"capability", capability_}, {"meanwhile", meanwhile_}};
}

#include "common/notyetpage.h"

#include <QLabel>
#include <QVBoxLayout>

NotYetPage::NotYetPage(QString id, QString title, QString capability, QString tracking, QWidget* parent)
    : StudioPage(parent),
      id_(std::move(id)),
      title_(std::move(title)),
      capability_(std::move(capability)),
      tracking_(std::move(tracking)) {
  auto* layout = new QVBoxLayout(this);
  auto* heading = new QLabel(QStringLiteral("<h2>%1</h2>").arg(title_.toHtmlEscaped()));
  auto* status = new QLabel(QStringLiteral("<b>Not yet available.</b> This page shows no content until its capability is built."));
  auto* text = new QLabel(capability_);
  text->setWordWrap(true);
  auto* where = new QLabel(tracking_);
  where->setWordWrap(true);
  where->setStyleSheet(QStringLiteral("color: #5a6470;"));
  for (auto* label : {heading, status, text, where}) {
    label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(label);
  }
  layout->addStretch();
  layout->setContentsMargins(32, 24, 32, 24);
}

QJsonObject NotYetPage::describe() const {
  return {{"status", "not yet available"}, {"capability", capability_}, {"tracking", tracking_}};
}

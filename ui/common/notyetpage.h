// A page whose capability is not built yet: it says so plainly, names the
// capability and what serves meanwhile (the command line, another page), and
// shows no placeholder content.
#pragma once

#include "shell/studiopage.h"

class NotYetPage : public StudioPage {
  Q_OBJECT
 public:
  NotYetPage(QString id, QString title, QString capability, QString meanwhile, QWidget* parent = nullptr);
  QString pageId() const override { return id_; }
  QString title() const override { return title_; }
  QJsonObject describe() const override;

 private:
  QString id_, title_, capability_, meanwhile_;
};

// What the Caption page says beside the captions while the built-in demo model
// is loaded: it knows only coloured shapes, and how to caption photographs
// with the authors' released model (which the program never downloads itself;
// the button opens the page that links to it).
#pragma once

#include <QUrl>
#include <QWidget>

class HintLabel;

class DemoNotice : public QWidget {
  Q_OBJECT
 public:
  DemoNotice();
  // The authors' repository, whose README links the drive with rf_model.pth and demo_coco_tokens.pickle.
  static QUrl releasePage();
  QString text() const;

 private:
  HintLabel* label_;
};

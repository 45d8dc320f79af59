// Base of every studio page: the main window lists pages by id and title, and
// `--screenshot` asks the shown page what it displays (describe()) and whether
// work is still pending (isBusy()), and before quitting, what work would be lost.
#pragma once

#include <QJsonObject>
#include <QWidget>

class StudioPage : public QWidget {
  Q_OBJECT
 public:
  using QWidget::QWidget;
  // Lower-case id used by `--page NAME`: caption, attention, training, datasets, runs, compare.
  virtual QString pageId() const = 0;
  virtual QString title() const = 0;
  // What a user sees on this page, as JSON (listed items, plotted series, ...).
  virtual QJsonObject describe() const = 0;
  // True while the page waits for background work whose result it will show.
  virtual bool isBusy() const { return false; }
  // The page's own remembered settings (QSettings), restored and saved by the
  // main window with its geometry; screenshots skip them to stay reproducible.
  virtual void restoreSettings() {}
  virtual void saveSettings() const {}
  // What quitting now would stop (one sentence; "" when nothing): the main window
  // asks before it quits, and on "stop" calls stopForQuit() and quits at quitSafe().
  virtual QString workLostOnQuit() const { return {}; }
  virtual void stopForQuit() {}

 signals:
  void quitSafe();
};

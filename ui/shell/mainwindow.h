// The studio's main window: a navigation list on the left, the pages in a
// stack, the menu bar (File, View, Help), the runtime and the loaded model in
// the status bar. It only wires pages together; each page owns its widgets,
// workers and models.
#pragma once

#include <QMainWindow>
#include <QVector>

class QActionGroup;
class QLabel;
class QListWidget;
class QStackedWidget;
class CaptionPage;
class StudioContext;
class StudioPage;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(StudioContext* context, QWidget* parent = nullptr);

  QStringList pageIds() const;
  // Shows the page with this id; false when there is none.
  bool showPage(const QString& id);
  StudioPage* currentPage() const;
  StudioPage* page(const QString& id) const;
  // Window geometry and the last page, remembered across sessions (QSettings).
  bool restoreSettings();  // false: no saved window geometry (the first start)

 protected:
  void closeEvent(QCloseEvent* event) override;

 private:
  void addPage(StudioPage* page);
  void fitNavigationWidth();
  void buildMenus(CaptionPage* captionPage);
  void updateStatus();
  bool askBeforeQuitting();  // false: not now (cancelled, or quitting once a page's work has stopped)

  StudioContext* context_;
  QListWidget* navigation_;
  QStackedWidget* stack_;
  QVector<StudioPage*> pages_;
  QActionGroup* pageActions_;
  QLabel* deviceLabel_;
  QLabel* modelLabel_;
  bool quitting_ = false;  // the user chose to stop the work and quit
};

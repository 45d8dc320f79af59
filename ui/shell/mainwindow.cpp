#include "shell/mainwindow.h"

#include <algorithm>

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QCloseEvent>
#include <QFontMetrics>
#include <QFrame>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QPushButton>
#include <QScrollArea>
#include <QSettings>
#include <QStackedWidget>
#include <QStatusBar>

#include "attention/attentionpage.h"
#include "caption/captionpage.h"
#include "compare/comparepage.h"
#include "datasets/datasetspage.h"
#include "runs/runactions.h"
#include "runs/runspage.h"
#include "common/theme.h"
#include "common/wheelguard.h"
#include "shell/aboutdialog.h"
#include "shell/hostsdialog.h"
#include "shell/studiocontext.h"
#include "shell/studiopage.h"
#include "training/trainingpage.h"

MainWindow::MainWindow(StudioContext* context, QWidget* parent)
    : QMainWindow(parent),
      context_(context),
      navigation_(new QListWidget),
      stack_(new QStackedWidget),
      pageActions_(new QActionGroup(this)),
      deviceLabel_(new QLabel),
      modelLabel_(new QLabel) {
  setWindowTitle(QStringLiteral("ExpansionNet Studio"));
  qApp->installEventFilter(new WheelGuard(this));  // the wheel scrolls pages, not the value boxes under the pointer
  auto* central = new QWidget;
  auto* layout = new QHBoxLayout(central);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(0);
  navigation_->setObjectName(QStringLiteral("navigation"));
  navigation_->setFrameShape(QFrame::NoFrame);
  navigation_->setFocusPolicy(Qt::NoFocus);
  const Theme theme = Theme::current();
  navigation_->setStyleSheet(
      QStringLiteral("QListWidget#navigation { background: %1; color: %2; font-size: 11pt; padding-top: 8px; outline: 0; }"
                     "QListWidget#navigation::item { padding: 9px 16px; border: none; color: %2; }"
                     "QListWidget#navigation::item:selected { background: %3; color: %4; }")
          .arg(Theme::css(theme.navigationBackground()), Theme::css(theme.navigationText()),
               Theme::css(theme.navigationSelected()), Theme::css(theme.navigationSelectedText())));
  layout->addWidget(navigation_);
  layout->addWidget(stack_, 1);
  setCentralWidget(central);

  auto* captionPage = new CaptionPage(context_);
  addPage(captionPage);
  auto* attentionPage = new AttentionPage(context_);
  attentionPage->setImageList(captionPage->model());  // pick any of the Caption page's images
  addPage(attentionPage);
  auto* trainingPage = new TrainingPage(context_);
  addPage(trainingPage);
  auto* datasetsPage = new DatasetsPage(context_);
  addPage(datasetsPage);
  connect(datasetsPage, &DatasetsPage::attentionRequested, this, [this, attentionPage](const QString& file) {
    showPage(attentionPage->pageId());
    attentionPage->openImage(file);
  });
  auto* runsPage = new RunsPage;
  addPage(runsPage);
  connect(runsPage->actions(), &RunActions::openCheckpointRequested, this, [this, captionPage](const QString& checkpoint) {
    ModelRequest request;
    request.checkpoint = checkpoint;
    showPage(captionPage->pageId());
    captionPage->loadModel(request);
  });
  connect(runsPage->actions(), &RunActions::resumeRequested, this, [this, trainingPage](const QString& folder) {
    showPage(trainingPage->pageId());
    trainingPage->setOutputDir(folder);
    trainingPage->openRun(folder);
    trainingPage->resume();
  });
  connect(runsPage->actions(), &RunActions::resumeOnHostRequested, this,
          [this, trainingPage](const QString& host, const QString& folder, const QJsonObject& config) {
            showPage(trainingPage->pageId());
            trainingPage->resumeOnHost(host, folder, config);
          });
  addPage(new ComparePage(context_));
  fitNavigationWidth();

  connect(navigation_, &QListWidget::currentRowChanged, stack_, &QStackedWidget::setCurrentIndex);
  connect(stack_, &QStackedWidget::currentChanged, this, [this](int index) {
    if (QAction* action = pageActions_->actions().value(index)) action->setChecked(true);
  });
  buildMenus(captionPage);
  navigation_->setCurrentRow(0);
  pageActions_->actions().first()->setChecked(true);

  statusBar()->addPermanentWidget(modelLabel_);
  statusBar()->addPermanentWidget(deviceLabel_);
  connect(context_, &StudioContext::runtimeChanged, this, &MainWindow::updateStatus);
  connect(context_, &StudioContext::modelChanged, this, &MainWindow::updateStatus);
  updateStatus();
}

void MainWindow::buildMenus(CaptionPage* captionPage) {
  QMenu* file = menuBar()->addMenu(QStringLiteral("&File"));
  // No shortcut here: Ctrl+O belongs to the page shown (the Caption and Attention pages both open images).
  QAction* openImages = file->addAction(QStringLiteral("Open images…"), this, [this, captionPage] {
    showPage(captionPage->pageId());
    captionPage->openImages();
  });
  openImages->setStatusTip(QStringLiteral("Add images or a folder to the Caption page (Ctrl+O on that page)"));
  QAction* openDataset = file->addAction(QStringLiteral("Open dataset…"), this, [this] {
    showPage(QStringLiteral("datasets"));
    qobject_cast<DatasetsPage*>(page(QStringLiteral("datasets")))->openDatasetDialog();
  });
  openDataset->setStatusTip(QStringLiteral("Browse a captioning dataset on the Datasets page (Karpathy/COCO JSON, CSV, "
                                           "JSONL, a shapes folder)"));
  QMenu* recent = file->addMenu(QStringLiteral("Recent"));
  recent->setObjectName(QStringLiteral("recentMenu"));
  connect(recent, &QMenu::aboutToShow, this, [this, recent, captionPage] {
    captionPage->recent().fillMenu(recent, [this, captionPage](const QString& path) {
      showPage(captionPage->pageId());
      captionPage->addPaths({path});
    });
  });
  QAction* hosts = file->addAction(QStringLiteral("Hosts…"), this, [this] {
    HostsDialog dialog(this);
    auto* training = qobject_cast<TrainingPage*>(page(QStringLiteral("training")));
    connect(&dialog, &HostsDialog::hostsChanged, training, &TrainingPage::reloadHosts);
    dialog.exec();
  });
  hosts->setStatusTip(QStringLiteral("Machines to train on over ssh (the Training page's Where)"));
  file->addSeparator();
  QAction* quit = file->addAction(QStringLiteral("Quit"), this, [this] { close(); });
  quit->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Q));

  QMenu* view = menuBar()->addMenu(QStringLiteral("&View"));
  for (int i = 0; i < pages_.size(); ++i) {
    StudioPage* page = pages_[i];
    QAction* action = view->addAction(page->title(), this, [this, page] { showPage(page->pageId()); });
    action->setObjectName(QStringLiteral("view_%1").arg(page->pageId()));
    action->setCheckable(true);
    if (i < 9) action->setShortcut(QKeySequence(Qt::CTRL | Qt::Key(Qt::Key_1 + i)));
    pageActions_->addAction(action);
  }

  QMenu* help = menuBar()->addMenu(QStringLiteral("&Help"));
  QAction* docs = help->addAction(QStringLiteral("Documentation"), this, [this] { openDocumentation(this); });
  docs->setStatusTip(QStringLiteral("Open the docs/ folder (studio.md describes the pages)"));
  help->addAction(QStringLiteral("About ExpansionNet Studio…"), this, [this] { showAboutDialog(this); });
}

void MainWindow::addPage(StudioPage* page) {
  pages_.push_back(page);
  // In a scroll area: a page wider or taller than a small screen (1024x640, or 960x540 at
  // twice the scale) scrolls instead of making the window larger than the screen, and
  // no page's size ever changes the window's.
  auto* scroll = new QScrollArea;
  scroll->setObjectName(page->pageId() + QStringLiteral("Scroll"));
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setWidget(page);
  stack_->addWidget(scroll);
  navigation_->addItem(page->title());
}

// As wide as the longest page name needs (its 11 pt font and 16 px paddings), not more:
// on a laptop screen every pixel goes to the page.
void MainWindow::fitNavigationWidth() {
  QFont navigationFont = navigation_->font();
  navigationFont.setPointSizeF(11);
  int widest = 0;
  for (const auto* page : pages_) widest = std::max(widest, QFontMetrics(navigationFont).horizontalAdvance(page->title()));
  navigation_->setFixedWidth(widest + 2 * 16 + 24);
}

QStringList MainWindow::pageIds() const {
  QStringList ids;
  for (const auto* page : pages_) ids << page->pageId();
  return ids;
}

StudioPage* MainWindow::page(const QString& id) const {
  for (auto* page : pages_)
    if (page->pageId() == id) return page;
  return nullptr;
}

bool MainWindow::showPage(const QString& id) {
  const int index = pageIds().indexOf(id);
  if (index < 0) return false;
  navigation_->setCurrentRow(index);
  return true;
}

StudioPage* MainWindow::currentPage() const { return pages_.value(stack_->currentIndex(), nullptr); }

bool MainWindow::restoreSettings() {
  QSettings settings;
  const bool restored = restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray());
  restoreState(settings.value(QStringLiteral("window/state")).toByteArray());
  showPage(settings.value(QStringLiteral("window/page"), QStringLiteral("caption")).toString());
  for (auto* page : pages_) page->restoreSettings();
  return restored;
}

void MainWindow::closeEvent(QCloseEvent* event) {
  if (!askBeforeQuitting()) return event->ignore();
  QSettings settings;
  settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
  settings.setValue(QStringLiteral("window/state"), saveState());
  if (auto* page = currentPage()) settings.setValue(QStringLiteral("window/page"), page->pageId());
  for (const auto* page : pages_) page->saveSettings();
  QMainWindow::closeEvent(event);
}

// Work that quitting would stop (a trainer here): stop it with a checkpoint and quit once it
// has, or do not quit. Never a run lost without a question.
bool MainWindow::askBeforeQuitting() {
  if (quitting_) return true;
  for (StudioPage* page : pages_) {
    const QString lost = page->workLostOnQuit();
    if (lost.isEmpty()) continue;
    QMessageBox box(QMessageBox::Question, QStringLiteral("Quit ExpansionNet Studio?"), lost, QMessageBox::NoButton, this);
    box.setObjectName(QStringLiteral("quitQuestion"));
    QPushButton* stop = box.addButton(QStringLiteral("Stop with a checkpoint, then quit"), QMessageBox::AcceptRole);
    box.addButton(QMessageBox::Cancel);
    box.setDefaultButton(QMessageBox::Cancel);
    box.exec();
    if (box.clickedButton() != stop) return false;
    quitting_ = true;
    connect(page, &StudioPage::quitSafe, this, &QWidget::close, Qt::SingleShotConnection);
    statusBar()->showMessage(QStringLiteral("Stopping the training with a checkpoint; the studio quits once it is written…"));
    page->stopForQuit();
    return false;
  }
  return true;
}

void MainWindow::updateStatus() {
  deviceLabel_->setText(QStringLiteral("Device: %1 | Threads: %2").arg(context_->device()).arg(context_->threads()));
  const QString model = context_->modelName();
  modelLabel_->setText(model.isEmpty() ? QStringLiteral("No model loaded") : QStringLiteral("Model: %1").arg(model));
}

#include "shell/mainwindow.h"

#include <QCloseEvent>
#include <QFrame>
#include <QHBoxLayout>
#include <QSettings>
#include <QLabel>
#include <QListWidget>
#include <QStackedWidget>
#include <QStatusBar>

#include "shell/studiocontext.h"
#include "shell/studiopage.h"
#include "attention/attentionpage.h"
#include "caption/captionpage.h"
#include "common/notyetpage.h"
#include "training/trainingpage.h"

namespace {
// Pages whose capability lands with a later issue. Each says so, and names it.
StudioPage* notYet(const char* id, const char* title, const char* capability, const char* tracking) {
  return new NotYetPage(QString::fromLatin1(id), QString::fromLatin1(title), QString::fromUtf8(capability),
                        QString::fromUtf8(tracking));
}
}  // namespace

MainWindow::MainWindow(StudioContext* context, QWidget* parent)
    : QMainWindow(parent),
      context_(context),
      navigation_(new QListWidget),
      stack_(new QStackedWidget),
      deviceLabel_(new QLabel),
      modelLabel_(new QLabel) {
  setWindowTitle(QStringLiteral("ExpansionNet Studio"));
  auto* central = new QWidget;
  auto* layout = new QHBoxLayout(central);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(0);
  navigation_->setFixedWidth(180);
  navigation_->setObjectName(QStringLiteral("navigation"));
  navigation_->setFrameShape(QFrame::NoFrame);
  navigation_->setFocusPolicy(Qt::NoFocus);
  navigation_->setStyleSheet(QStringLiteral(
      "QListWidget#navigation { background: #2b3440; color: #e8edf2; font-size: 11pt; padding-top: 8px; outline: 0; }"
      "QListWidget#navigation::item { padding: 9px 16px; border: none; color: #e8edf2; }"
      "QListWidget#navigation::item:selected { background: #3d7ab8; color: white; }"));
  layout->addWidget(navigation_);
  layout->addWidget(stack_, 1);
  setCentralWidget(central);

  auto* captionPage = new CaptionPage(context_);
  addPage(captionPage);
  auto* attentionPage = new AttentionPage(context_);
  attentionPage->setImageList(captionPage->model());  // pick any of the Caption page's images
  addPage(attentionPage);
  addPage(new TrainingPage(context_));
  addPage(notYet("datasets", "Datasets",
                 "Browse caption datasets (COCO/Karpathy, CSV, JSON Lines, the built-in shapes set) with "
                 "statistics and per-sample evaluation.",
                 "Needs the dataset index (issue: Datasets)."));
  addPage(notYet("runs", "Runs",
                 "Every training run in the run store: configuration, stages, best checkpoints and scores.",
                 "Needs the run store (issue: Training)."));
  addPage(notYet("compare", "Compare",
                 "Autoregressive (AIC) versus partially non-autoregressive (PNAIC) decoding side by side: "
                 "captions, CIDEr-D and speed.",
                 "Planned after the open issues (PNAIC decoding)."));

  connect(navigation_, &QListWidget::currentRowChanged, stack_, &QStackedWidget::setCurrentIndex);
  navigation_->setCurrentRow(0);

  statusBar()->addPermanentWidget(modelLabel_);
  statusBar()->addPermanentWidget(deviceLabel_);
  connect(context_, &StudioContext::runtimeChanged, this, &MainWindow::updateStatus);
  connect(context_, &StudioContext::modelChanged, this, &MainWindow::updateStatus);
  updateStatus();
}

void MainWindow::addPage(StudioPage* page) {
  pages_.push_back(page);
  stack_->addWidget(page);
  navigation_->addItem(page->title());
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

void MainWindow::restoreSettings() {
  QSettings settings;
  restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray());
  restoreState(settings.value(QStringLiteral("window/state")).toByteArray());
  showPage(settings.value(QStringLiteral("window/page"), QStringLiteral("caption")).toString());
  for (auto* page : pages_) page->restoreSettings();
}

void MainWindow::closeEvent(QCloseEvent* event) {
  QSettings settings;
  settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
  settings.setValue(QStringLiteral("window/state"), saveState());
  if (auto* page = currentPage()) settings.setValue(QStringLiteral("window/page"), page->pageId());
  for (const auto* page : pages_) page->saveSettings();
  QMainWindow::closeEvent(event);
}

void MainWindow::updateStatus() {
  deviceLabel_->setText(QStringLiteral("Device: %1 | Threads: %2").arg(context_->device()).arg(context_->threads()));
  const QString model = context_->modelName();
  modelLabel_->setText(model.isEmpty() ? QStringLiteral("No model loaded") : QStringLiteral("Model: %1").arg(model));
}

#include "caption/alttextbar.h"

#include <QAction>
#include <QHash>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QProgressBar>
#include <QToolButton>

#include <algorithm>

#include "caption/captionmodel.h"

AltTextBar::AltTextBar(CaptionModel* items, std::function<QList<int>()> selectedRows, QWidget* parent)
    : QWidget(parent), items_(items), selectedRows_(std::move(selectedRows)), saver_(new AltTextSaver(this)) {
  button_ = new QToolButton;
  button_->setObjectName(QStringLiteral("saveAltText"));
  button_->setText(QStringLiteral("Save as alt text"));
  button_->setToolTip(
      QStringLiteral("Write the selected images' captions (as edited) into the photos' own metadata, as "
                     "IPTC alt text and, where empty, their description; the menu has the options"));
  button_->setPopupMode(QToolButton::MenuButtonPopup);
  button_->setToolButtonStyle(Qt::ToolButtonTextOnly);
  auto* menu = new QMenu(button_);
  menu->addAction(QStringLiteral("Save the selected images' captions"), this, &AltTextBar::saveSelected);
  menu->addAction(QStringLiteral("Save every captioned image's caption"), this, &AltTextBar::saveAll);
  menu->addSeparator();
  sidecar_ = menu->addAction(QStringLiteral("Into sidecars only (photo.jpg.xmp): never touch the images"));
  overwrite_ = menu->addAction(QStringLiteral("Replace alt text a person wrote"));
  keepMtime_ = menu->addAction(QStringLiteral("Keep the images' modification times"));
  for (QAction* option : {sidecar_, overwrite_, keepMtime_}) option->setCheckable(true);
  button_->setMenu(menu);
  connect(button_, &QToolButton::clicked, this, &AltTextBar::saveSelected);

  bar_ = new QProgressBar;
  bar_->setObjectName(QStringLiteral("altTextProgress"));
  bar_->setMaximumWidth(160);
  bar_->setFormat(QStringLiteral("%v of %m saved"));
  bar_->hide();
  summary_ = new QLabel;
  summary_->setObjectName(QStringLiteral("altTextSummary"));
  summary_->setWordWrap(true);
  summary_->hide();
  auto* row = new QHBoxLayout(this);
  row->setContentsMargins(0, 0, 0, 0);
  row->addWidget(button_);
  row->addWidget(bar_);
  row->addWidget(summary_, 1);
  row->addStretch(0);  // the button stays at the left while the summary is hidden

  connect(saver_, &AltTextSaver::fileSaved, this, &AltTextBar::fileSaved);
  connect(saver_, &AltTextSaver::finished, this, &AltTextBar::finished);
  updateState();
}

AltTextChoices AltTextBar::choices() const {
  return {sidecar_->isChecked(), overwrite_->isChecked(), keepMtime_->isChecked()};
}

void AltTextBar::setChoices(const AltTextChoices& choices) {
  sidecar_->setChecked(choices.sidecar);
  overwrite_->setChecked(choices.overwrite);
  keepMtime_->setChecked(choices.keepMtime);
}

QString AltTextBar::summary() const { return summary_->text(); }

void AltTextBar::saveRows(const QList<int>& rows) {
  if (saver_->isSaving()) return;
  QList<int> chosen = rows;
  if (chosen.isEmpty())
    for (int row = 0; row < items_->rowCount(); ++row) chosen << row;
  std::sort(chosen.begin(), chosen.end());
  QVector<AltTextJob> jobs;
  for (const int row : chosen) {
    const CaptionItem& item = items_->item(row);
    if (item.status != CaptionItem::Status::Done) continue;
    jobs.push_back({row, item.path, item.caption(), item.modelCaption(), item.builtinModel, item.checkpoint});
    items_->setAltText(row, QStringLiteral("Saving…"));
  }
  if (jobs.isEmpty()) {
    summary_->setText(QStringLiteral("Nothing to save: caption the images first."));
    summary_->show();
    return;
  }
  bar_->setRange(0, int(jobs.size()));
  bar_->setValue(0);
  bar_->show();
  summary_->hide();
  saver_->save(jobs, choices());
  updateState();
  emit savingStarted();
}

void AltTextBar::fileSaved(int row, const QString& action, const QString& reason) {
  static const QHash<QString, QString> kWords = {{QStringLiteral("written"), QStringLiteral("Written into the image")},
                                                 {QStringLiteral("sidecar"), QStringLiteral("Written to its sidecar")},
                                                 {QStringLiteral("skipped"), QStringLiteral("Skipped")},
                                                 {QStringLiteral("failed"), QStringLiteral("Failed")}};
  items_->setAltText(row,
                     kWords.value(action, action) + (reason.isEmpty() ? QString() : QStringLiteral(": ") + reason));
  bar_->setValue(bar_->value() + 1);
}

void AltTextBar::finished(const AltTextTotals& totals) {
  // Rows a cancel left keep no "Saving…".
  for (int row = 0; row < items_->rowCount(); ++row)
    if (items_->item(row).altText == QStringLiteral("Saving…")) items_->setAltText(row, QString());
  QString text = QStringLiteral("Alt text: %1 written into images, %2 into sidecars, %3 skipped, %4 failed")
                     .arg(totals.written)
                     .arg(totals.sidecars)
                     .arg(totals.skipped)
                     .arg(totals.failed);
  if (totals.left > 0) text += QStringLiteral(", %1 left (cancelled)").arg(totals.left);
  summary_->setText(totals.sidecars + totals.skipped + totals.failed > 0 ? text + QStringLiteral(" (each row says why)")
                                                                         : text);
  summary_->show();
  bar_->hide();
  updateState();
  emit savingFinished();
}

void AltTextBar::updateState() {
  bool any = false;
  for (const auto& item : items_->items()) any = any || item.status == CaptionItem::Status::Done;
  button_->setEnabled(any && !saver_->isSaving());
}

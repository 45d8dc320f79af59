#include "compare/comparetable.h"

#include <QFileInfo>
#include <QHeaderView>
#include <QJsonDocument>
#include <QLabel>
#include <QPainter>

#include "common/theme.h"
#include "compare/groupcaption.h"

namespace {
constexpr int kThumbnail = 72;

QLabel* richLabel(const QString& html) {
  auto* label = new QLabel(html);
  label->setTextFormat(Qt::RichText);
  label->setWordWrap(true);
  label->setMargin(4);
  label->setAlignment(Qt::AlignLeft | Qt::AlignVCenter);
  label->setTextInteractionFlags(Qt::TextSelectableByMouse);
  return label;
}
}  // namespace

CompareTable::CompareTable(QWidget* parent) : QTableWidget(parent) {
  setObjectName(QStringLiteral("compareTable"));
  setColumnCount(1);
  setHorizontalHeaderLabels({QStringLiteral("Image")});
  setSelectionBehavior(QAbstractItemView::SelectRows);
  setSelectionMode(QAbstractItemView::SingleSelection);
  setEditTriggers(QAbstractItemView::NoEditTriggers);
  setIconSize(QSize(kThumbnail, kThumbnail));
  verticalHeader()->setVisible(false);
  verticalHeader()->setDefaultSectionSize(kThumbnail + 16);
  // Every mode in view side by side: the caption columns share the width.
  horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  horizontalHeader()->setMinimumSectionSize(110);
  horizontalHeader()->setSectionResizeMode(0, QHeaderView::Fixed);
  setColumnWidth(0, 170);
  setTextElideMode(Qt::ElideMiddle);
  setWordWrap(true);
  connect(this, &QTableWidget::itemSelectionChanged, this, [this] { emit selectionChangedTo(selectedCaptions()); });
}

int CompareTable::rowOf(const QString& image) const {
  for (int i = 0; i < rows_.size(); ++i)
    if (rows_[i].image == image) return i;
  return -1;
}

bool CompareTable::hasImage(const QString& image) const { return rowOf(image) >= 0; }

void CompareTable::addImages(const QStringList& images) {
  for (const auto& image : images) {
    if (hasImage(image)) continue;
    rows_.push_back({image, {}, {}});
    const int row = rowCount();
    insertRow(row);
    auto* item = new QTableWidgetItem(QFileInfo(image).fileName());
    item->setToolTip(image);
    setItem(row, 0, item);
    refreshRow(row);
  }
}

void CompareTable::setThumbnail(const QString& image, const QImage& thumbnail) {
  const int row = rowOf(image);
  if (row < 0 || thumbnail.isNull()) return;
  // Centred in a fixed square so that the file names line up whatever the shape.
  QPixmap square(kThumbnail, kThumbnail);
  square.fill(Theme::current().imageBackdrop());
  const QImage fitted = thumbnail.scaled(kThumbnail, kThumbnail, Qt::KeepAspectRatio, Qt::SmoothTransformation);
  QPainter painter(&square);
  painter.drawImage((kThumbnail - fitted.width()) / 2, (kThumbnail - fitted.height()) / 2, fitted);
  painter.end();
  item(row, 0)->setIcon(QIcon(square));
}

void CompareTable::ensureMode(const QString& mode) {
  if (modes_.contains(mode)) return;
  modes_ << mode;
  setColumnCount(std::max(columnCount(), int(modes_.size()) + 1));
  setHorizontalHeaderItem(int(modes_.size()), new QTableWidgetItem(mode));
  for (int row = 0; row < rows_.size(); ++row) refreshRow(row);
}

void CompareTable::setEntry(const ComparedImage& compared) {
  const int row = rowOf(compared.image);
  if (row < 0) return;
  rows_[row].captions.clear();
  for (int m = 0; m < compared.modes.size() && size_t(m) < compared.captions.size(); ++m)
    rows_[row].captions.insert(compared.modes[m], compared.captions[size_t(m)]);
  rows_[row].error.clear();
  for (const auto& mode : compared.modes) ensureMode(mode);
  refreshRow(row);
  if (currentRow() == row) emit selectionChangedTo(selectedCaptions());
}

void CompareTable::failImages(const QStringList& images, const QString& error, bool permanent) {
  for (const auto& image : images) {
    const int row = rowOf(image);
    if (row < 0 || !rows_[row].captions.isEmpty()) continue;
    rows_[row].error = error;
    rows_[row].permanent = permanent;
    refreshRow(row);
  }
}

QStringList CompareTable::resetCaptions() {
  QStringList images;
  modes_.clear();
  setColumnCount(1);
  for (int row = 0; row < rows_.size(); ++row) {
    Row& r = rows_[row];
    if (!r.permanent) {
      r.captions = {};
      r.error.clear();
      images << r.image;
    }
    refreshRow(row);
  }
  return images;
}

QLabel* CompareTable::cellLabel(int row, int column) {
  if (auto* label = qobject_cast<QLabel*>(cellWidget(row, column))) return label;
  auto* label = richLabel(QString());
  setCellWidget(row, column, label);
  return label;
}

void CompareTable::refreshRow(int row) {
  const Theme theme = Theme::current();
  const Row& r = rows_[row];
  if (columnCount() < 2) {  // no mode yet: one column says what the rows wait for
    setColumnCount(2);
    setHorizontalHeaderItem(1, new QTableWidgetItem(QStringLiteral("Captions")));
  }
  if (!r.error.isEmpty() || r.captions.isEmpty()) {
    // The error, or that the row waits for its captions, in the first mode's column.
    cellLabel(row, 1)->setText(
        r.error.isEmpty()
            ? QStringLiteral("<span style=\"color:%1\">Queued…</span>").arg(Theme::css(theme.mutedText()))
            : QStringLiteral("<span style=\"color:%1\">%2</span>").arg(Theme::css(theme.errorText()), r.error.toHtmlEscaped()));
    for (int c = 2; c < columnCount(); ++c) cellLabel(row, c)->clear();
    return;
  }
  for (int m = 0; m < modes_.size(); ++m) {
    QString html;
    if (const auto found = r.captions.constFind(modes_[m]); found != r.captions.cend()) {
      html = captionHtml(*found, 0, showDeleted_, theme);
      if (found->error.empty())
        html += QStringLiteral("<br><span style=\"color:%1; font-size:small\">%2 steps · %3 ms</span>")
                    .arg(Theme::css(theme.mutedText()))
                    .arg(found->steps)
                    .arg(found->decode_ms, 0, 'f', 2);
    }
    cellLabel(row, m + 1)->setText(html);
  }
}

void CompareTable::setShowDeleted(bool show) {
  showDeleted_ = show;
  for (int row = 0; row < rows_.size(); ++row) refreshRow(row);
}

void CompareTable::clearRows() {
  rows_.clear();
  setRowCount(0);
  setColumnCount(1);
  modes_.clear();
}

ModeCaptions CompareTable::selectedCaptions() const {
  const int row = currentRow();
  return row >= 0 && row < rows_.size() ? rows_[row].captions : ModeCaptions();
}

QJsonArray CompareTable::describeRows() const {
  QJsonArray out;
  for (const auto& r : rows_) {
    QJsonObject modes;
    for (auto it = r.captions.cbegin(); it != r.captions.cend(); ++it)
      modes.insert(it.key(), QJsonDocument::fromJson(QByteArray::fromStdString(expnet::mode_caption_json(*it))).object());
    QJsonObject row{{"image", r.image}, {"modes", modes}};
    if (!r.error.isEmpty()) row.insert(QStringLiteral("error"), r.error);
    out.append(row);
  }
  return out;
}

#include "datasets/imagedetail.h"

#include <QHBoxLayout>
#include <QJsonArray>
#include <QImageReader>
#include <QLabel>
#include <QPushButton>
#include <QRegularExpression>
#include <QTextBrowser>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include "common/theme.h"

namespace {
// Each searched word in bold wherever it stands as a whole word (case-insensitive).
QString highlighted(const QString& text, const QString& words, const Theme& theme) {
  QString html = text.toHtmlEscaped();
  for (const QString& word : words.split(QRegularExpression(QStringLiteral("\\W+")), Qt::SkipEmptyParts)) {
    const QRegularExpression re(QStringLiteral("\\b(%1)\\b").arg(QRegularExpression::escape(word)),
                                QRegularExpression::CaseInsensitiveOption);
    html.replace(re, QStringLiteral("<b style=\"color:%1\">\\1</b>").arg(Theme::css(theme.accent())));
  }
  return html;
}

QString scoresLine(const GridItem& item) {
  return QStringLiteral("CIDEr-D %1 · BLEU-4 %2").arg(item.ciderD, 0, 'f', 3).arg(item.bleu4, 0, 'f', 3);
}
}  // namespace

ImageDetail::ImageDetail(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  picture_ = new QLabel;
  picture_->setAlignment(Qt::AlignCenter);
  picture_->setMinimumHeight(160);
  picture_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Expanding);
  const Theme theme = Theme::current();
  picture_->setStyleSheet(QStringLiteral("background: %1; color: %2")
                              .arg(Theme::css(theme.imageBackdrop()), Theme::css(theme.imageBackdropText())));
  text_ = new QTextBrowser;
  text_->setObjectName(QStringLiteral("imageDetailText"));
  text_->setOpenLinks(false);
  caption_ = new QPushButton(QStringLiteral("Caption with the loaded model"));
  caption_->setObjectName(QStringLiteral("captionImage"));
  attention_ = new QPushButton(QStringLiteral("Open in Attention page"));
  attention_->setObjectName(QStringLiteral("openInAttention"));
  attention_->setToolTip(QStringLiteral("Trace where the loaded model looks while it captions this image"));
  auto* buttons = new QHBoxLayout;
  buttons->addWidget(caption_);
  buttons->addWidget(attention_);
  layout->addWidget(picture_, 3);
  layout->addWidget(text_, 2);
  layout->addLayout(buttons);
  connect(caption_, &QPushButton::clicked, this, [this] { emit captionRequested(item_.file); });
  connect(attention_, &QPushButton::clicked, this, [this] { emit attentionRequested(item_.file); });
  connect(&loading_, &QFutureWatcher<QImage>::finished, this, [this] {
    image_ = loading_.result();
    imageError_ = image_.isNull() ? QStringLiteral("Cannot read %1").arg(item_.file) : QString();
    showImage();
  });
  clear();
}

void ImageDetail::clear() {
  item_ = GridItem();
  image_ = QImage();
  picture_->setText(QStringLiteral("Select an image"));
  text_->clear();
  caption_->setEnabled(false);
  attention_->setEnabled(false);
}

void ImageDetail::setCaptionEnabled(bool enabled, const QString& why) {
  caption_->setEnabled(enabled && hasItem());
  caption_->setToolTip(why);
}

void ImageDetail::showItem(const GridItem& item, const QString& words, const GridItem* other) {
  const bool sameImage = item.cocoid == item_.cocoid && item.file == item_.file;
  item_ = item;
  if (!sameImage) {
    modelCaption_.clear();
    image_ = QImage();
    picture_->setText(QStringLiteral("Loading…"));
    const QString file = item.file;
    // A full-size photo can take tens of ms to decode: not on the UI thread.
    loading_.setFuture(QtConcurrent::run([file] {
      QImageReader reader(file);
      reader.setAutoTransform(true);
      return reader.read();
    }));
  }
  words_ = words;
  other_ = other ? *other : GridItem();
  attention_->setEnabled(true);
  render();
}

void ImageDetail::render() {
  const GridItem& item = item_;
  const GridItem* other = other_.evaluated ? &other_ : nullptr;
  const QString& words = words_;
  const Theme theme = Theme::current();
  QString html = QStringLiteral("<p><b>References</b></p><ol>");
  for (const auto& reference : item.references) html += QStringLiteral("<li>%1</li>").arg(highlighted(reference, words, theme));
  html += QStringLiteral("</ol>");
  if (item.evaluated)
    html += QStringLiteral("<p><b>Model</b>: %1<br><span style=\"color:%2\">%3</span></p>")
                .arg(item.caption.toHtmlEscaped(), Theme::css(theme.mutedText()), scoresLine(item));
  if (other && other->evaluated)
    html += QStringLiteral("<p><b>Compared evaluation</b>: %1<br><span style=\"color:%2\">%3 (CIDEr-D %4%5)</span></p>")
                .arg(other->caption.toHtmlEscaped(), Theme::css(theme.mutedText()), scoresLine(*other),
                     other->ciderD >= item.ciderD ? QStringLiteral("+") : QString())
                .arg(other->ciderD - item.ciderD, 0, 'f', 3);
  if (!modelCaption_.isEmpty())
    html += QStringLiteral("<p><b>Loaded model</b>: %1</p>").arg(modelCaption_.toHtmlEscaped());
  html += QStringLiteral("<p style=\"color:%1\">id %2 · %3 · %4%5</p>")
              .arg(Theme::css(theme.mutedText()))
              .arg(item.cocoid)
              .arg(item.split, item.file.toHtmlEscaped(),
                   item.width > 0 ? QStringLiteral(" · %1 x %2").arg(item.width).arg(item.height) : QString());
  text_->setHtml(html);
}

void ImageDetail::showModelCaption(const QString& caption) {
  modelCaption_ = caption;
  render();
}

void ImageDetail::showImage() {
  if (image_.isNull()) {
    picture_->setPixmap(QPixmap());
    picture_->setText(imageError_.isEmpty() ? QStringLiteral("Select an image") : imageError_);
    return;
  }
  picture_->setPixmap(QPixmap::fromImage(image_.scaled(picture_->size(), Qt::KeepAspectRatio, Qt::SmoothTransformation)));
}

void ImageDetail::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  if (!image_.isNull()) showImage();
}

QJsonObject ImageDetail::describe() const {
  if (!hasItem()) return {};
  QJsonObject out{{"cocoid", item_.cocoid}, {"file", item_.file}, {"split", item_.split},
                  {"references", QJsonArray::fromStringList(item_.references)},
                  {"image_loaded", !image_.isNull()}};
  if (!imageError_.isEmpty()) out.insert(QStringLiteral("image_error"), imageError_);
  if (item_.evaluated) out.insert(QStringLiteral("caption"), item_.caption);
  if (!modelCaption_.isEmpty()) out.insert(QStringLiteral("loaded_model_caption"), modelCaption_);
  return out;
}

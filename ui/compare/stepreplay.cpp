#include "compare/stepreplay.h"

#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSlider>
#include <QVBoxLayout>

#include "common/hintlabel.h"
#include "common/theme.h"
#include "compare/groupcaption.h"

namespace {
// The same image's captions (the selection refreshed), as opposed to another image's.
bool sameCaptions(const ModeCaptions& a, const ModeCaptions& b) {
  if (a.keys() != b.keys()) return false;
  for (auto it = a.cbegin(); it != a.cend(); ++it) {
    const expnet::ModeCaption& other = b.value(it.key());
    if (it->text != other.text || it->steps != other.steps || it->error != other.error) return false;
  }
  return true;
}
}  // namespace

StepReplay::StepReplay(QWidget* parent)
    : QWidget(parent), play_(new QPushButton(QStringLiteral("Play"))), grid_(new QGridLayout) {
  play_->setObjectName(QStringLiteral("replayPlay"));
  play_->setToolTip(QStringLiteral("Run through the decoding steps of the selected image, one step every 0.6 s"));
  slider_ = new QSlider(Qt::Horizontal);
  slider_->setObjectName(QStringLiteral("replayStep"));
  slider_->setToolTip(QStringLiteral("Decoding step: each mode's caption as it stood after this step"));
  slider_->setRange(0, 0);
  slider_->setPageStep(1);
  slider_->setTickPosition(QSlider::TicksBelow);
  stepLabel_ = new QLabel;
  stepLabel_->setMinimumWidth(110);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  auto* bar = new QHBoxLayout;
  bar->addWidget(new HintLabel(QStringLiteral("Step replay:")));
  bar->addWidget(play_);
  bar->addWidget(slider_, 1);
  bar->addWidget(stepLabel_);
  layout->addLayout(bar);
  grid_->setColumnStretch(1, 1);
  grid_->setVerticalSpacing(2);
  layout->addLayout(grid_);
  timer_.setInterval(600);
  connect(&timer_, &QTimer::timeout, this, [this] {
    if (slider_->value() >= slider_->maximum()) {
      togglePlay();
      return;
    }
    slider_->setValue(slider_->value() + 1);
  });
  connect(play_, &QPushButton::clicked, this, &StepReplay::togglePlay);
  connect(slider_, &QSlider::valueChanged, this, &StepReplay::refresh);
  setCaptions({}, {});
}

int StepReplay::steps() const {
  int most = 0;
  for (const auto& mode : modes_) most = std::max(most, captions_.value(mode).steps);
  return most;
}

int StepReplay::step() const { return slider_->value(); }

void StepReplay::setStep(int step) { slider_->setValue(std::clamp(step, 0, slider_->maximum())); }

void StepReplay::setCaptions(const ModeCaptions& captions, const QStringList& modes) {
  const bool sameImage = sameCaptions(captions, captions_);
  captions_ = captions;
  modes_.clear();
  for (const auto& mode : modes)
    if (captions.contains(mode)) modes_ << mode;
  while (lines_.size() < modes_.size() * 2) {
    auto* label = new QLabel;
    label->setTextFormat(Qt::RichText);
    label->setWordWrap(lines_.size() % 2 == 1);
    grid_->addWidget(label, int(lines_.size() / 2), int(lines_.size() % 2));
    lines_.push_back(label);
  }
  for (int i = 0; i < lines_.size(); ++i) lines_[i]->setVisible(i < modes_.size() * 2);
  slider_->setMaximum(steps());
  play_->setEnabled(steps() > 0);
  // A new image starts from its finished captions; Play runs from step 1.
  if (!sameImage) slider_->setValue(slider_->maximum());
  refresh();
}

void StepReplay::setShowDeleted(bool show) {
  showDeleted_ = show;
  refresh();
}

void StepReplay::togglePlay() {
  if (timer_.isActive()) {
    timer_.stop();
    play_->setText(QStringLiteral("Play"));
    return;
  }
  if (slider_->value() >= slider_->maximum()) slider_->setValue(1);
  timer_.start();
  play_->setText(QStringLiteral("Pause"));
}

void StepReplay::refresh() {
  const Theme theme = Theme::current();
  const int step = slider_->value();
  stepLabel_->setText(modes_.isEmpty() ? QStringLiteral("no image selected")
                                       : QStringLiteral("step %1 of %2").arg(step).arg(slider_->maximum()));
  for (int m = 0; m < modes_.size(); ++m) {
    const expnet::ModeCaption caption = captions_.value(modes_[m]);
    const int steps = caption.steps;
    const QString state = step >= steps ? QStringLiteral("done in %1").arg(steps) : QStringLiteral("step %1").arg(step);
    lines_[m * 2]->setText(QStringLiteral("<b>%1</b> <span style=\"color:%2\">(%3)</span>")
                               .arg(modes_[m].toHtmlEscaped(), Theme::css(theme.mutedText()), state));
    lines_[m * 2 + 1]->setText(step == 0 ? QString() : captionHtml(caption, step, showDeleted_, theme));
  }
}

QJsonObject StepReplay::describe() const {
  QJsonObject modes;
  const Theme theme = Theme::current();
  for (const auto& mode : modes_)
    modes.insert(mode, captionHtml(captions_.value(mode), slider_->value(), showDeleted_, theme));
  return {{"step", slider_->value()}, {"steps", slider_->maximum()}, {"modes", modes}};
}

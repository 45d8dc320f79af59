#include "attention/expansiontabs.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSettings>
#include <QSpinBox>
#include <QVBoxLayout>

#include <algorithm>

#include "attention/expansionplot.h"
#include "attention/imageview.h"
#include "attention/tracemaps.h"
#include "common/formfields.h"
#include "common/hintlabel.h"

namespace {
// New items for a selector, keeping its choice when it still exists.
void refill(QComboBox* box, const QStringList& items) {
  const int keep = box->currentIndex();
  const QSignalBlocker block(box);
  box->clear();
  box->addItems(items);
  box->setCurrentIndex(keep >= 0 && keep < items.size() ? keep : 0);
}

QStringList directions() { return {QStringLiteral("Forward"), QStringLiteral("Backward"), QStringLiteral("Scores z")}; }
QStringList streams() { return {QStringLiteral("Stream a"), QStringLiteral("Stream b")}; }
const char* kStreamTip = "Stream a uses relu(z), stream b relu(-z)";
}  // namespace

ExpansionTabs::ExpansionTabs() {
  setObjectName(QStringLiteral("expansionTabs"));
  addTab(buildStaticTab(), QStringLiteral("Static expansion (encoder)"));
  addTab(buildDynamicTab(), QStringLiteral("Dynamic expansion (decoder)"));
  setTabToolTip(0, QStringLiteral("Length transformation matrices of the encoder's Static Expansion"));
  setTabToolTip(1, QStringLiteral("Length transformation matrices of the decoder's Dynamic Expansion over the "
                                  "caption's tokens"));
}

QWidget* ExpansionTabs::buildStaticTab() {
  staticLayer_ = choiceField(QStringLiteral("staticLayer"), {}, QStringLiteral("Encoder layer"));
  staticGroup_ = choiceField(QStringLiteral("staticGroup"), {},
                             QStringLiteral("Static Expansion group: each has its own number of expansion slots"));
  staticDirection_ = choiceField(QStringLiteral("staticDirection"), directions(),
                                 QStringLiteral("Forward: slots x grid cells (where each slot gathers from; rows sum to "
                                                "1). Backward: grid cells x slots (how each cell reads the slots back). "
                                                "Scores z: the raw length transformation matrix"));
  staticStream_ = choiceField(QStringLiteral("staticStream"), streams(), QString::fromLatin1(kStreamTip));
  for (auto* box : {staticLayer_, staticGroup_, staticDirection_, staticStream_})
    connect(box, &QComboBox::currentIndexChanged, this, &ExpansionTabs::updateStaticMap);
  staticPlot_ = new ExpansionPlot;
  staticPlot_->setObjectName(QStringLiteral("staticPlot"));
  staticPlot_->setToolTip(QStringLiteral("Click a slot's row (or column) to see its distribution over the image"));
  connect(staticPlot_, &ExpansionPlot::cellClicked, this, [this](int row, int col) {
    setSlot((staticDirection_->currentIndex() == Backward ? col : row) + 1);
  });
  slot_ = integerField(QStringLiteral("slot"), 1, 1, 1, {},
                       QStringLiteral("Expansion slot of the group whose distribution over the image is shown"));
  connect(slot_, &QSpinBox::valueChanged, this, &ExpansionTabs::updateStaticMap);
  slotView_ = new ImageView;
  slotView_->setObjectName(QStringLiteral("slotMap"));
  slotView_->setMinimumSize(150, 110);
  slotView_->setMaximumWidth(260);
  slotView_->setToolTip(QStringLiteral("The slot's forward weights over the image grid (where it gathers from)"));
  slotInfo_ = new QLabel;
  slotInfo_->setWordWrap(true);
  slotInfo_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);

  auto* selectors = new QHBoxLayout;  // the items name themselves ("Encoder 1", "G2 (8 slots)")
  for (auto* box : {staticLayer_, staticGroup_, staticDirection_, staticStream_}) selectors->addWidget(box);
  selectors->addStretch(1);
  auto* slotRow = new QHBoxLayout;
  slotRow->addWidget(new HintLabel(QStringLiteral("Slot:")));
  slotRow->addWidget(slot_);
  slotRow->addStretch(1);
  auto* slotColumn = new QVBoxLayout;
  slotColumn->addLayout(slotRow);
  slotColumn->addWidget(slotInfo_);
  slotColumn->addStretch(1);
  auto* bottom = new QHBoxLayout;
  bottom->addWidget(slotView_, 1);
  bottom->addLayout(slotColumn, 1);

  auto* tab = new QWidget;
  tab->setObjectName(QStringLiteral("staticTab"));
  auto* layout = new QVBoxLayout(tab);
  layout->addLayout(selectors);
  layout->addWidget(staticPlot_, 3);
  layout->addLayout(bottom, 1);
  return tab;
}

QWidget* ExpansionTabs::buildDynamicTab() {
  dynamicLayer_ = choiceField(QStringLiteral("dynamicLayer"), {}, QStringLiteral("Decoder layer"));
  dynamicDirection_ = choiceField(QStringLiteral("dynamicDirection"), directions(),
                                  QStringLiteral("Forward: (position, slot) x positions, causal; Backward: positions x "
                                                 "(position, slot); Scores z: the raw length transformation matrix"));
  dynamicStream_ = choiceField(QStringLiteral("dynamicStream"), streams(), QString::fromLatin1(kStreamTip));
  for (auto* box : {dynamicLayer_, dynamicDirection_, dynamicStream_})
    connect(box, &QComboBox::currentIndexChanged, this, &ExpansionTabs::updateDynamicMap);
  dynamicPlot_ = new ExpansionPlot;
  dynamicPlot_->setObjectName(QStringLiteral("dynamicPlot"));
  auto* selectors = new QHBoxLayout;
  for (auto* box : {dynamicLayer_, dynamicDirection_, dynamicStream_}) selectors->addWidget(box);
  selectors->addStretch(1);
  auto* tab = new QWidget;
  tab->setObjectName(QStringLiteral("dynamicTab"));
  auto* layout = new QVBoxLayout(tab);
  layout->addLayout(selectors);
  layout->addWidget(dynamicPlot_, 1);
  return tab;
}

void ExpansionTabs::setTrace(std::shared_ptr<const AttentionTrace> trace) {
  trace_ = std::move(trace);
  QStringList encoder, groups, decoder;
  for (size_t l = 0; l < trace_->encoder.size(); ++l) encoder << QStringLiteral("Encoder %1").arg(l + 1);
  for (size_t g = 0; g < trace_->groups.size(); ++g)
    groups << QStringLiteral("G%1 (%2 slots)").arg(g + 1).arg(trace_->groups[g]);
  for (size_t l = 0; l < trace_->decoder.size(); ++l) decoder << QStringLiteral("Decoder %1").arg(l + 1);
  refill(staticLayer_, encoder);
  refill(staticGroup_, groups);
  refill(dynamicLayer_, decoder);
  updateStaticMap();
  updateDynamicMap();
}

void ExpansionTabs::setStaticSelection(int layer, int group, int direction, int stream) {
  const QSignalBlocker a(staticLayer_), b(staticGroup_), c(staticDirection_), d(staticStream_);
  staticLayer_->setCurrentIndex(layer);
  staticGroup_->setCurrentIndex(group);
  staticDirection_->setCurrentIndex(direction);
  staticStream_->setCurrentIndex(stream);
  updateStaticMap();
}

void ExpansionTabs::setDynamicSelection(int layer, int direction, int stream) {
  const QSignalBlocker a(dynamicLayer_), b(dynamicDirection_), c(dynamicStream_);
  dynamicLayer_->setCurrentIndex(layer);
  dynamicDirection_->setCurrentIndex(direction);
  dynamicStream_->setCurrentIndex(stream);
  updateDynamicMap();
}

void ExpansionTabs::setSlot(int slot) { slot_->setValue(slot); }
int ExpansionTabs::staticGroup() const { return staticGroup_->currentIndex(); }
int ExpansionTabs::slot() const { return slot_->value(); }

void ExpansionTabs::updateStaticMap() {
  if (!trace_ || trace_->encoder.empty())
    return staticPlot_->clearMatrix(trace_ && !trace_->encoderMissing.isEmpty() ? trace_->encoderMissing
                                                                               : QStringLiteral("No trace yet"));
  const int layer = std::max(0, staticLayer_->currentIndex()), group = std::max(0, staticGroup_->currentIndex());
  const int direction = staticDirection_->currentIndex(), stream = staticStream_->currentIndex();
  const int start = groupStart(*trace_, group), size = trace_->groups.at(size_t(group));
  const TraceExpansion& e = trace_->encoder.at(size_t(layer));
  const TraceMatrix& full = expansionMatrix(e, direction, stream);
  const TraceMatrix block = direction == Backward ? full.colBlock(start, size) : full.rowBlock(start, size);
  const QString cells = QStringLiteral("grid cell (row-major, %1×%1)").arg(trace_->gridSide);
  const QString slotAxis = QStringLiteral("slot of group %1").arg(group + 1);
  ExpansionPlot::Axes axes;
  axes.x = direction == Backward ? slotAxis : cells;
  axes.y = direction == Backward ? cells : slotAxis;
  staticPlot_->showMatrix(block,
                          QStringLiteral("Encoder %1 · group %2 (%3 slots) · %4")
                              .arg(layer + 1)
                              .arg(group + 1)
                              .arg(size)
                              .arg(directionName(direction, stream)),
                          axes, direction == Scores);

  // The chosen slot's forward row: a distribution over the grid (sums to 1).
  {
    const QSignalBlocker block(slot_);
    slot_->setRange(1, size);
  }
  const int slot = slot_->value() - 1;
  const TraceMatrix& forward = stream == StreamA ? e.forwardA : e.forwardB;
  slotWeights_ = forward.rowBlock(start + slot, 1).values;
  slotView_->setImage(attentionOverlay(*trace_, slotWeights_, 0.5));
  double total = 0;
  for (const float w : slotWeights_) total += w;
  slotInfo_->setText(QStringLiteral("Slot %1 of group %2, stream %3: where it gathers from over the image "
                                    "(its forward row; weights sum to %4). Click a row of the map to pick a slot.")
                         .arg(slot + 1)
                         .arg(group + 1)
                         .arg(stream == StreamA ? QStringLiteral("a") : QStringLiteral("b"))
                         .arg(total, 0, 'f', 3));
}

void ExpansionTabs::updateDynamicMap() {
  if (!trace_ || trace_->decoder.empty())
    return dynamicPlot_->clearMatrix(trace_ && !trace_->decoderMissing.isEmpty() ? trace_->decoderMissing
                                                                                : QStringLiteral("No trace yet"));
  const int layer = std::max(0, dynamicLayer_->currentIndex());
  const int direction = dynamicDirection_->currentIndex(), stream = dynamicStream_->currentIndex();
  const TraceMatrix& m = expansionMatrix(trace_->decoder.at(size_t(layer)), direction, stream);
  const QStringList inputs = trace_->inputWords();
  const int slotCount = std::max(1, trace_->decoderSlots);
  QVector<ExpansionPlot::Tick> positions, blocks;
  for (int t = 0; t < inputs.size(); ++t) {
    positions.push_back({double(t), inputs.at(t)});
    blocks.push_back({t * slotCount + (slotCount - 1) / 2.0, inputs.at(t)});  // centre of position t's slot block
  }
  ExpansionPlot::Axes axes;
  const QString byPosition = QStringLiteral("input position (token)");
  const QString bySlot = QStringLiteral("position × %1 slots").arg(slotCount);
  const bool backward = direction == Backward;
  axes.x = backward ? bySlot : byPosition;
  axes.y = backward ? byPosition : bySlot;
  axes.xTicks = backward ? blocks : positions;
  axes.yTicks = backward ? positions : blocks;
  dynamicPlot_->showMatrix(m, QStringLiteral("Decoder %1 · %2").arg(layer + 1).arg(directionName(direction, stream)),
                           axes, direction == Scores);
}

void ExpansionTabs::restore(const QSettings& s) {
  staticDirection_->setCurrentIndex(s.value(QStringLiteral("static_direction"), 0).toInt());
  staticStream_->setCurrentIndex(s.value(QStringLiteral("static_stream"), 0).toInt());
  dynamicDirection_->setCurrentIndex(s.value(QStringLiteral("dynamic_direction"), 0).toInt());
  dynamicStream_->setCurrentIndex(s.value(QStringLiteral("dynamic_stream"), 0).toInt());
  setCurrentIndex(s.value(QStringLiteral("tab"), 0).toInt());
}

void ExpansionTabs::save(QSettings& s) const {
  s.setValue(QStringLiteral("static_direction"), staticDirection_->currentIndex());
  s.setValue(QStringLiteral("static_stream"), staticStream_->currentIndex());
  s.setValue(QStringLiteral("dynamic_direction"), dynamicDirection_->currentIndex());
  s.setValue(QStringLiteral("dynamic_stream"), dynamicStream_->currentIndex());
  s.setValue(QStringLiteral("tab"), currentIndex());
}

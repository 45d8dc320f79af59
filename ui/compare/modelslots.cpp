#include "compare/modelslots.h"

#include <QComboBox>
#include <QFileInfo>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QToolButton>
#include <QVBoxLayout>

#include "common/browsebutton.h"
#include "common/hintlabel.h"

namespace {
const QString kCheckpointFilter = QStringLiteral("Checkpoints (*.pth *.pt);;All files (*)");
const QString kVocabFilter = QStringLiteral("Vocabularies (*.json *.pickle *.pkl);;All files (*)");
// In ModelSlots::Status's order: describe()'s names of a slot's state.
const QStringList kStatusNames = {QStringLiteral("empty"), QStringLiteral("loading"), QStringLiteral("loaded"),
                                  QStringLiteral("failed")};
}  // namespace

ModelSlots::ModelSlots(const QString& device, QWidget* parent)
    : QGroupBox(QStringLiteral("Models"), parent), device_(device) {
  setObjectName(QStringLiteral("modelSlots"));
  auto* layout = new QVBoxLayout(this);
  rows_ = new QVBoxLayout;
  rows_->setSpacing(6);
  layout->addLayout(rows_);
  auto* add = new QPushButton(QStringLiteral("Add PNAIC model"));
  add->setObjectName(QStringLiteral("addPnaicSlot"));
  add->setToolTip(QStringLiteral("Another PNAIC slot: a checkpoint of a PNAIC model, or a built-in one"));
  connect(add, &QPushButton::clicked, this, [this] { requestLoad(addPnaicSlot(QString()), true); });
  auto* bar = new QHBoxLayout;
  bar->addWidget(add);
  bar->addStretch(1);
  layout->addLayout(bar);
  addSlot(false, QStringLiteral("demo"));
}

int ModelSlots::addPnaicSlot(const QString& spec) { return addSlot(true, spec); }

int ModelSlots::addSlot(bool pnaic, const QString& spec) {
  const int id = nextSlot_++;
  Slot slot;
  slot.loaded.slot = -1;  // nothing sent yet
  slot.row = new QWidget;
  slot.row->setObjectName(QStringLiteral("slot%1").arg(id));
  auto* grid = new QGridLayout(slot.row);
  grid->setContentsMargins(0, 0, 0, 0);
  grid->setHorizontalSpacing(4);
  grid->setVerticalSpacing(2);
  auto* label = new QLabel(pnaic ? QStringLiteral("PNAIC") : QStringLiteral("AIC"));
  label->setMinimumWidth(44);
  slot.spec = new QComboBox;
  slot.spec->setObjectName(QStringLiteral("slotModel%1").arg(id));
  slot.spec->setEditable(true);
  slot.spec->addItems(pnaic ? QStringList{QStringLiteral("pnaic-demo-k5"), QStringLiteral("pnaic-demo-k2")}
                            : QStringList{QStringLiteral("demo")});
  slot.spec->setCurrentText(spec);
  slot.spec->setToolTip(pnaic ? QStringLiteral("A PNAIC checkpoint (.pth of ours) or a built-in PNAIC model")
                              : QStringLiteral("An autoregressive checkpoint (.pth of ours) or the built-in demo model"));
  slot.spec->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
  slot.spec->setMinimumContentsLength(12);
  auto* browse = new BrowseButton(slot.spec, QStringLiteral("Choose a checkpoint"), kCheckpointFilter);
  slot.vocab = new QLineEdit;
  slot.vocab->setObjectName(QStringLiteral("slotVocab%1").arg(id));
  slot.vocab->setPlaceholderText(QStringLiteral("vocabulary, if not in the checkpoint"));
  auto* vocabBrowse = new BrowseButton(slot.vocab, QStringLiteral("Choose the checkpoint's vocabulary"), kVocabFilter);
  slot.state = new HintLabel;
  slot.state->setObjectName(QStringLiteral("slotState%1").arg(id));
  slot.state->setWordWrap(true);
  slot.state->setTextInteractionFlags(Qt::TextSelectableByMouse);
  grid->addWidget(label, 0, 0);
  grid->addWidget(browse->row(), 0, 1);
  if (pnaic) {
    auto* remove = new QToolButton;
    remove->setText(QStringLiteral("✕"));
    remove->setObjectName(QStringLiteral("removeSlot%1").arg(id));
    remove->setToolTip(QStringLiteral("Remove this PNAIC model from the comparison"));
    connect(remove, &QToolButton::clicked, this, [this, id] { removeSlot(id); });
    grid->addWidget(remove, 0, 2);
  }
  grid->addWidget(vocabBrowse->row(), 1, 1);
  grid->addWidget(slot.state, 2, 1, 1, 2);
  rows_->addWidget(slot.row);
  connect(slot.spec, &QComboBox::activated, this, [this, id] { requestLoad(id, false); });
  connect(slot.spec->lineEdit(), &QLineEdit::editingFinished, this, [this, id] { requestLoad(id, false); });
  connect(browse, &BrowseButton::chosen, this, [this, id] { requestLoad(id, false); });
  connect(slot.vocab, &QLineEdit::editingFinished, this, [this, id] { requestLoad(id, false); });
  connect(vocabBrowse, &BrowseButton::chosen, this, [this, id] { requestLoad(id, false); });
  slots_.insert(id, slot);
  return id;
}

void ModelSlots::removeSlot(int id) {
  if (id == 0 || !slots_.contains(id)) return;
  slots_[id].row->deleteLater();
  slots_.remove(id);
  emit slotRemoved(id);
}

void ModelSlots::setSlot(int id, const QString& spec, const QString& vocab) {
  if (!slots_.contains(id)) return;
  slots_[id].spec->setCurrentText(spec);
  slots_[id].vocab->setText(vocab);
  requestLoad(id, false);
}

SlotRequest ModelSlots::requestOf(int id) const {
  const Slot& slot = slots_[id];
  SlotRequest request;
  request.slot = id;
  request.pnaic = id != 0;
  request.spec = slot.spec->currentText().trimmed();
  request.vocab = slot.vocab->text().trimmed();
  request.device = device_;
  request.precision = precision_;
  return request;
}

QVector<SlotRequest> ModelSlots::requests() const {
  QVector<SlotRequest> out;
  for (auto it = slots_.begin(); it != slots_.end(); ++it) out << requestOf(it.key());
  return out;
}

QStringList ModelSlots::toSettings() const {
  QStringList out;
  for (const auto& request : requests()) out << request.spec + QLatin1Char('\t') + request.vocab;
  return out;
}

void ModelSlots::fromSettings(const QStringList& entries) {
  if (entries.isEmpty()) return;
  for (const int id : slots_.keys())
    if (id != 0) removeSlot(id);
  for (int i = 0; i < entries.size(); ++i) {
    const QStringList fields = entries[i].split(QLatin1Char('\t'));
    const int id = i == 0 ? 0 : addPnaicSlot(fields.value(0));
    slots_[id].spec->setCurrentText(fields.value(0));
    slots_[id].vocab->setText(fields.value(1));
  }
}

void ModelSlots::requestLoad(int id, bool force) {
  if (!slots_.contains(id)) return;
  const SlotRequest request = requestOf(id);
  const SlotRequest& last = slots_[id].loaded;
  if (!force && last.slot == id && last.spec == request.spec && last.vocab == request.vocab &&
      last.device == request.device && last.precision == request.precision)
    return;
  slots_[id].loaded = request;
  if (request.spec.isEmpty()) {
    setState(id, Status::Empty, QStringLiteral("Choose a checkpoint or a built-in model"));
    emit slotRemoved(id);  // the worker forgets the slot's previous model
    return;
  }
  showLoading(id);
  emit loadRequested(request);
}

void ModelSlots::setRuntime(const QString& device, const QString& precision) {
  if (device.isEmpty() || (device == device_ && precision == precision_)) return;
  device_ = device;
  if (!precision.isEmpty()) precision_ = precision;
  for (auto it = slots_.begin(); it != slots_.end(); ++it)
    if (it->loaded.slot == it.key() && !it->loaded.spec.isEmpty()) requestLoad(it.key(), false);
}

void ModelSlots::setState(int id, Status status, const QString& message) {
  if (!slots_.contains(id)) return;
  Slot& slot = slots_[id];
  slot.status = status;
  slot.message = message;
  slot.state->setKind(status == Status::Failed ? HintLabel::Kind::Error : HintLabel::Kind::Inline);
  slot.state->setText(message);
  slot.state->setToolTip(message);
}

void ModelSlots::showLoading(int id) { setState(id, Status::Loading, QStringLiteral("Loading…")); }

void ModelSlots::showLoaded(int id, const QString& file, int groups, double loadMs) {
  QString kind = groups > 0 ? QStringLiteral("PNAIC K = %1").arg(groups) : QStringLiteral("AIC");
  if (slots_[id].loaded.precision != QStringLiteral("fp32")) kind += QStringLiteral(" · ") + slots_[id].loaded.precision;
  setState(id, Status::Loaded,
           QStringLiteral("%1 · %2 · %3 ms").arg(kind, QFileInfo(file).fileName()).arg(loadMs, 0, 'f', 0));
  slots_[id].state->setToolTip(QStringLiteral("%1, loaded from %2 in %3 ms").arg(kind, file).arg(loadMs, 0, 'f', 0));
}

void ModelSlots::showFailed(int id, const QString& error) { setState(id, Status::Failed, error); }

bool ModelSlots::loading() const {
  for (const auto& slot : slots_)
    if (slot.status == Status::Loading) return true;
  return false;
}

bool ModelSlots::aicLoaded() const { return slots_.contains(0) && slots_[0].status == Status::Loaded; }

int ModelSlots::loadedPnaicSlots() const {
  int n = 0;
  for (auto it = slots_.begin(); it != slots_.end(); ++it)
    if (it.key() != 0 && it->status == Status::Loaded) ++n;
  return n;
}

QJsonArray ModelSlots::describe() const {
  QJsonArray out;
  for (auto it = slots_.begin(); it != slots_.end(); ++it)
    out.append(QJsonObject{{"slot", it.key()},
                           {"kind", it.key() == 0 ? "aic" : "pnaic"},
                           {"spec", it->spec->currentText()},
                           {"state", kStatusNames.value(static_cast<int>(it->status))},
                           {"message", it->message}});
  return out;
}

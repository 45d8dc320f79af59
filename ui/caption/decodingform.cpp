#include "caption/decodingform.h"

#include <QComboBox>
#include <QStandardItemModel>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSettings>
#include <QSpinBox>

#include <algorithm>

#include "common/formfields.h"
#include "common/hintlabel.h"
#include "expnet/decode/carried_decoding.h"

namespace {
// The search box's items in order, as the engine's JSON names them.
const QStringList kSearchKeys = {QStringLiteral("beam"), QStringLiteral("greedy"), QStringLiteral("sample")};
}  // namespace

DecodingForm::DecodingForm() : QGroupBox(QStringLiteral("Decoding")) {
  search_ = new QComboBox;
  search_->setObjectName(QStringLiteral("search"));
  search_->addItems({QStringLiteral("Beam search"), QStringLiteral("Greedy"), QStringLiteral("Sampling")});
  search_->setToolTip(QStringLiteral("Beam search keeps the best partial captions at each step; greedy takes the "
                                     "most likely word; sampling draws each word from the model's distribution "
                                     "(temperature 1, seed 0: the same captions on every run)"));
  beam_ = integerField(QStringLiteral("beam"), 1, 20, 5, {}, QStringLiteral("Beam width: partial captions kept at each step"));
  nbest_ = integerField(QStringLiteral("nbest"), 1, 20, 3, {}, QStringLiteral("Captions returned per image (at most the beam width)"));
  maxLength_ = integerField(QStringLiteral("maxLength"), 0, 1000, 0, QStringLiteral("model's"),
                            QStringLiteral("Longest caption in tokens, counting the start token; 0 = the model's "
                                           "max_seq_len"));
  lengthPenalty_ = new QDoubleSpinBox;
  lengthPenalty_->setObjectName(QStringLiteral("lengthPenalty"));
  lengthPenalty_->setRange(0, 5);
  lengthPenalty_->setSingleStep(0.1);
  lengthPenalty_->setValue(1.0);
  lengthPenalty_->setToolTip(QStringLiteral("Ranking score = sum log p / length^alpha; 1 = the reference's ranking"));
  noRepeat_ = integerField(QStringLiteral("noRepeat"), 0, 10, 0, QStringLiteral("off"),
                           QStringLiteral("Forbid repeating any n-gram of this size; 0 = off"));
  maxWordRun_ = integerField(QStringLiteral("maxWordRun"), 0, 10, 0, QStringLiteral("off"),
                             QStringLiteral("A word at most this many times in a row (1: no \"red red\"; a word may "
                                            "still come back later); 0 = off"));
  note_ = new HintLabel;
  note_->setObjectName(QStringLiteral("decodingNote"));
  note_->setWordWrap(true);
  note_->setToolTip(QStringLiteral("The model's checkpoint carries these decoding options and they are in use; "
                                   "change a field to override it"));
  note_->hide();
  search_->setProperty("aicTip", search_->toolTip());
  // Beam search returns at most its beam width of captions: n-best cannot ask for more.
  const auto fitNbest = [this] { nbest_->setMaximum(search_->currentIndex() == 0 ? beam_->value() : 20); };
  connect(beam_, &QSpinBox::valueChanged, this, fitNbest);
  connect(search_, &QComboBox::currentIndexChanged, this, fitNbest);
  connect(search_, &QComboBox::currentIndexChanged, this, [this](int index) {
    beam_->setEnabled(index == 0);
    nbest_->setEnabled(index != 1);  // beam: n-best; sampling: samples per image
  });

  // The fields a checkpoint's options fill, under the engine's keys.
  const auto spin = [this](const QString& key, QSpinBox* box) {
    carried_.add(key, [box] { return QJsonValue(box->value()); }, [box](const QJsonValue& v) { box->setValue(v.toInt()); });
    connect(box, &QSpinBox::valueChanged, this, &DecodingForm::updateNote);
  };
  carried_.add(QStringLiteral("search"), [this] { return QJsonValue(kSearchKeys.value(search_->currentIndex())); },
               [this](const QJsonValue& v) { search_->setCurrentIndex(std::max(0, int(kSearchKeys.indexOf(v.toString())))); });
  connect(search_, &QComboBox::currentIndexChanged, this, &DecodingForm::updateNote);
  spin(QStringLiteral("beam_size"), beam_);
  spin(QStringLiteral("num_hypotheses"), nbest_);
  spin(QStringLiteral("max_length"), maxLength_);
  carried_.add(QStringLiteral("length_penalty"), [this] { return QJsonValue(lengthPenalty_->value()); },
               [this](const QJsonValue& v) { lengthPenalty_->setValue(v.toDouble()); });
  connect(lengthPenalty_, &QDoubleSpinBox::valueChanged, this, &DecodingForm::updateNote);
  spin(QStringLiteral("no_repeat_ngram_size"), noRepeat_);
  spin(QStringLiteral("max_word_run"), maxWordRun_);

  auto* left = new QFormLayout;
  left->addRow(QStringLiteral("Search:"), search_);
  left->addRow(QStringLiteral("Beam:"), beam_);
  left->addRow(QStringLiteral("N-best:"), nbest_);
  left->addRow(QStringLiteral("Max length:"), maxLength_);
  auto* right = new QFormLayout;
  right->addRow(QStringLiteral("Length penalty:"), lengthPenalty_);
  right->addRow(QStringLiteral("No-repeat n-gram:"), noRepeat_);
  right->addRow(QStringLiteral("Max word run:"), maxWordRun_);
  auto* grid = new QHBoxLayout;
  grid->addLayout(left);
  grid->addLayout(right);
  auto* form = new QFormLayout(this);
  form->addRow(grid);
  form->addRow(note_);
}

expnet::DecodingOptions DecodingForm::options() const {
  expnet::DecodingOptions options = base_;
  const int index = search_->currentIndex();
  const bool beam = index == 0;
  options.search = beam ? expnet::SearchKind::Beam : index == 2 ? expnet::SearchKind::Sampling : expnet::SearchKind::Greedy;
  options.beam_size = beam ? beam_->value() : 1;
  options.num_hypotheses = beam ? std::min(nbest_->value(), beam_->value()) : index == 2 ? nbest_->value() : 1;
  options.max_length = maxLength_->value();
  options.length_penalty = lengthPenalty_->value();
  options.no_repeat_ngram_size = noRepeat_->value();
  options.max_word_run = maxWordRun_->value();
  return options;
}

QJsonObject DecodingForm::settings(int modelMaxLength) const {
  const auto chosen = options();
  const char* search = chosen.search == expnet::SearchKind::Beam       ? "beam"
                       : chosen.search == expnet::SearchKind::Sampling ? "sampling"
                                                                        : "greedy";
  return QJsonObject{{"search", search},
                     {"beam_size", chosen.beam_size},
                     {"n_best", chosen.num_hypotheses},
                     {"max_length", chosen.max_length > 0 ? chosen.max_length : modelMaxLength},
                     {"length_penalty", chosen.length_penalty},
                     {"no_repeat_ngram_size", chosen.no_repeat_ngram_size},
                     {"max_word_run", chosen.max_word_run},
                     {"from_checkpoint", QJsonArray::fromStringList(carried_.inEffect())}};
}

void DecodingForm::setModelMaxLength(int length) { maxLength_->setMaximum(length); }

void DecodingForm::applyCheckpoint(const QJsonObject& carried) {
  // The engine checked these options when it loaded the checkpoint.
  base_ = expnet::CarriedDecoding::from_json(QJsonDocument(carried).toJson().toStdString(), "the checkpoint").options;
  carried_.apply(carried);
  updateNote();
}

void DecodingForm::setGreedyOnly(bool only) {
  const QString why = QStringLiteral("A PNAIC model decodes its groups greedily: beam search and sampling are for "
                                     "autoregressive (AIC) models");
  auto* items = qobject_cast<QStandardItemModel*>(search_->model());
  for (const int index : {0, 2}) {  // beam search, sampling
    items->item(index)->setEnabled(!only);
    items->item(index)->setToolTip(only ? why : QString());
  }
  if (only) search_->setCurrentIndex(1);
  search_->setToolTip(only ? why : search_->property("aicTip").toString());
}

void DecodingForm::updateNote() {
  note_->setText(carried_.note());
  note_->setVisible(!note_->text().isEmpty());
}

// Settings keys (kept from before the checkpoint fields) and the engine's keys.
namespace {
struct SavedField {
  const char* setting;
  const char* key;
};
constexpr SavedField kSaved[] = {{"beam", "beam_size"},           {"nbest", "num_hypotheses"},
                                 {"max_length", "max_length"},    {"length_penalty", "length_penalty"},
                                 {"no_repeat_ngram", "no_repeat_ngram_size"}, {"max_word_run", "max_word_run"}};
}  // namespace

void DecodingForm::restore(const QSettings& s) {
  search_->setCurrentIndex(std::clamp(s.value(QStringLiteral("search"), 0).toInt(), 0, search_->count() - 1));
  beam_->setValue(s.value(QStringLiteral("beam"), beam_->value()).toInt());
  nbest_->setValue(s.value(QStringLiteral("nbest"), nbest_->value()).toInt());
  maxLength_->setValue(s.value(QStringLiteral("max_length"), 0).toInt());
  lengthPenalty_->setValue(s.value(QStringLiteral("length_penalty"), 1.0).toDouble());
  noRepeat_->setValue(s.value(QStringLiteral("no_repeat_ngram"), 0).toInt());
  maxWordRun_->setValue(s.value(QStringLiteral("max_word_run"), 0).toInt());
}

void DecodingForm::save(QSettings& s) const {
  s.setValue(QStringLiteral("search"), kSearchKeys.indexOf(carried_.userValue(QStringLiteral("search")).toString()));
  for (const auto& field : kSaved)
    s.setValue(QLatin1String(field.setting), carried_.userValue(QLatin1String(field.key)).toVariant());
}

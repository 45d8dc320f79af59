#include "caption/decodingform.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QSettings>
#include <QSpinBox>

#include <algorithm>

#include "common/formfields.h"

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
  connect(search_, &QComboBox::currentIndexChanged, this, [this](int index) {
    beam_->setEnabled(index == 0);
    nbest_->setEnabled(index != 1);  // beam: n-best; sampling: samples per image
  });
  auto* left = new QFormLayout;
  left->addRow(QStringLiteral("Search:"), search_);
  left->addRow(QStringLiteral("Beam:"), beam_);
  left->addRow(QStringLiteral("N-best:"), nbest_);
  auto* right = new QFormLayout;
  right->addRow(QStringLiteral("Max length:"), maxLength_);
  right->addRow(QStringLiteral("Length penalty:"), lengthPenalty_);
  right->addRow(QStringLiteral("No-repeat n-gram:"), noRepeat_);
  auto* grid = new QHBoxLayout;
  grid->addLayout(left);
  grid->addLayout(right);
  auto* form = new QFormLayout(this);
  form->addRow(grid);
}

expnet::DecodingOptions DecodingForm::options() const {
  expnet::DecodingOptions options;
  const int index = search_->currentIndex();
  const bool beam = index == 0;
  options.search = beam ? expnet::SearchKind::Beam : index == 2 ? expnet::SearchKind::Sampling : expnet::SearchKind::Greedy;
  options.beam_size = beam ? beam_->value() : 1;
  options.num_hypotheses = beam ? std::min(nbest_->value(), beam_->value()) : index == 2 ? nbest_->value() : 1;
  options.seed = 0;  // sampling: reproducible captions (the engine's default seed)
  options.max_length = maxLength_->value();
  options.length_penalty = lengthPenalty_->value();
  options.no_repeat_ngram_size = noRepeat_->value();
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
                     {"no_repeat_ngram_size", chosen.no_repeat_ngram_size}};
}

void DecodingForm::setModelMaxLength(int length) { maxLength_->setMaximum(length); }

void DecodingForm::restore(const QSettings& s) {
  search_->setCurrentIndex(std::clamp(s.value(QStringLiteral("search"), 0).toInt(), 0, search_->count() - 1));
  beam_->setValue(s.value(QStringLiteral("beam"), beam_->value()).toInt());
  nbest_->setValue(s.value(QStringLiteral("nbest"), nbest_->value()).toInt());
  maxLength_->setValue(s.value(QStringLiteral("max_length"), 0).toInt());
  lengthPenalty_->setValue(s.value(QStringLiteral("length_penalty"), 1.0).toDouble());
  noRepeat_->setValue(s.value(QStringLiteral("no_repeat_ngram"), 0).toInt());
}

void DecodingForm::save(QSettings& s) const {
  s.setValue(QStringLiteral("search"), search_->currentIndex());
  s.setValue(QStringLiteral("beam"), beam_->value());
  s.setValue(QStringLiteral("nbest"), nbest_->value());
  s.setValue(QStringLiteral("max_length"), maxLength_->value());
  s.setValue(QStringLiteral("length_penalty"), lengthPenalty_->value());
  s.setValue(QStringLiteral("no_repeat_ngram"), noRepeat_->value());
}

// The Caption page's "Decoding" box: search (beam, greedy, sampling), beam
// width, n-best, max length, length penalty, no-repeat n-gram size and max
// word run, as the engine's DecodingOptions and as the settings a captioned
// row keeps. A loaded checkpoint's own decoding options fill the fields
// (and set those without a field), with a note saying so; what the user
// changes afterwards wins.
#pragma once

#include <QGroupBox>
#include <QJsonObject>

#include "common/carriedfields.h"
#include "expnet/decode/decoding.h"

class QComboBox;
class QDoubleSpinBox;
class QSettings;
class QSpinBox;
class HintLabel;

class DecodingForm : public QGroupBox {
  Q_OBJECT
 public:
  DecodingForm();

  expnet::DecodingOptions options() const;
  // The settings as a row records them; max_length 0 ("the model's") is written as `modelMaxLength`.
  QJsonObject settings(int modelMaxLength) const;
  void setModelMaxLength(int length);
  // The decoding options of the model just loaded (CarriedDecoding::to_json() as JSON; {} for none).
  void applyCheckpoint(const QJsonObject& carried);
  // A PNAIC model decodes greedily only: the other searches disabled, saying why.
  void setGreedyOnly(bool only);
  // "From the checkpoint: ..." as the note under the fields shows it; "" when none.
  QString checkpointNote() const { return carried_.note(); }

  void restore(const QSettings& settings);
  void save(QSettings& settings) const;

 private:
  void updateNote();

  QComboBox* search_;
  QSpinBox* beam_;
  QSpinBox* nbest_;
  QSpinBox* maxLength_;
  QDoubleSpinBox* lengthPenalty_;
  QSpinBox* noRepeat_;
  QSpinBox* maxWordRun_;
  HintLabel* note_;
  CarriedFields carried_;
  expnet::DecodingOptions base_;  // the checkpoint's options for the keys without a field
};

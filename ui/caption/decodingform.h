// The Caption page's "Decoding" box: search (beam, greedy, sampling), beam
// width, n-best, max length, length penalty and no-repeat n-gram size, as the
// engine's DecodingOptions and as the settings a captioned row keeps.
#pragma once

#include <QGroupBox>
#include <QJsonObject>

#include "expnet/decode/decoding.h"

class QComboBox;
class QDoubleSpinBox;
class QSettings;
class QSpinBox;

class DecodingForm : public QGroupBox {
  Q_OBJECT
 public:
  DecodingForm();

  expnet::DecodingOptions options() const;
  // The settings as a row records them; max_length 0 ("the model's") is written as `modelMaxLength`.
  QJsonObject settings(int modelMaxLength) const;
  void setModelMaxLength(int length);

  void restore(const QSettings& settings);
  void save(QSettings& settings) const;

 private:
  QComboBox* search_;
  QSpinBox* beam_;
  QSpinBox* nbest_;
  QSpinBox* maxLength_;
  QDoubleSpinBox* lengthPenalty_;
  QSpinBox* noRepeat_;
};

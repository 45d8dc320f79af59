// Step replay: for the image selected on the Compare page, each mode's caption
// as it stood after step N of decoding (a slider, and Play to run through the
// steps). AIC grows by one word per step, PNAIC by one word per group.
#pragma once

#include <QJsonObject>
#include <QStringList>
#include <QTimer>
#include <QWidget>

#include "compare/groupcaption.h"

class QLabel;
class QSlider;
class QPushButton;
class QGridLayout;

class StepReplay : public QWidget {
 public:
  explicit StepReplay(QWidget* parent = nullptr);

  // The selected image's captions; modes in column order.
  void setCaptions(const ModeCaptions& captions, const QStringList& modes);
  void setShowDeleted(bool show);
  void setStep(int step);
  int step() const;
  int steps() const;  // the most steps any mode took
  // {step, steps, modes: {MODE: caption HTML at the step}}.
  QJsonObject describe() const;

 private:
  void togglePlay();
  void refresh();

  ModeCaptions captions_;
  QStringList modes_;
  bool showDeleted_ = false;
  QPushButton* play_;
  QGridLayout* grid_;
  QSlider* slider_;
  QLabel* stepLabel_;
  QVector<QLabel*> lines_;
  QTimer timer_;
};

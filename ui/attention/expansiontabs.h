// The Attention page's right half: the expansion matrices of a trace as colour
// maps. Static Expansion per encoder layer (group, forward/backward/scores,
// stream a/b) with the chosen slot's distribution over the image, and Dynamic
// Expansion per decoder layer over the caption's tokens.
#pragma once

#include <QTabWidget>

#include <memory>
#include <vector>

#include "attention/attentiontrace.h"

class QComboBox;
class QLabel;
class QSettings;
class QSpinBox;
class ExpansionPlot;
class ImageView;

class ExpansionTabs : public QTabWidget {
  Q_OBJECT
 public:
  ExpansionTabs();

  // Fills the layer and group selectors (keeping the choices that still exist) and redraws.
  void setTrace(std::shared_ptr<const AttentionTrace> trace);
  void setStaticSelection(int layer, int group, int direction, int stream);
  void setDynamicSelection(int layer, int direction, int stream);
  void setSlot(int slot);  // counted from 1

  ExpansionPlot* staticPlot() const { return staticPlot_; }
  ExpansionPlot* dynamicPlot() const { return dynamicPlot_; }
  // The chosen slot's forward weights over the grid cells.
  const std::vector<float>& slotWeights() const { return slotWeights_; }
  int staticGroup() const;
  int slot() const;

  void restore(const QSettings& settings);
  void save(QSettings& settings) const;

 private:
  QWidget* buildStaticTab();
  QWidget* buildDynamicTab();
  void updateStaticMap();
  void updateDynamicMap();

  std::shared_ptr<const AttentionTrace> trace_;
  std::vector<float> slotWeights_;
  QComboBox* staticLayer_;
  QComboBox* staticGroup_;
  QComboBox* staticDirection_;
  QComboBox* staticStream_;
  ExpansionPlot* staticPlot_;
  QSpinBox* slot_;
  ImageView* slotView_;
  QLabel* slotInfo_;
  QComboBox* dynamicLayer_;
  QComboBox* dynamicDirection_;
  QComboBox* dynamicStream_;
  ExpansionPlot* dynamicPlot_;
};

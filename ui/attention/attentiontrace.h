// What the Attention page shows, as plain arrays: the worker converts the
// engine's CaptionTrace (expnet/trace/trace.h, LibTorch tensors) into this once, so
// the page and its models never touch LibTorch. Shapes and meanings are those
// of docs/traces.md.
#pragma once

#include <QMetaType>
#include <QString>
#include <QStringList>
#include <QVector>

#include <opencv2/core/mat.hpp>

#include <memory>
#include <vector>

// A row-major float matrix.
struct TraceMatrix {
  int rows = 0, cols = 0;
  std::vector<float> values;
  float at(int row, int col) const { return values[size_t(row) * size_t(cols) + size_t(col)]; }
  bool empty() const { return values.empty(); }
  // Rows [first, first + count) or columns [first, first + count).
  TraceMatrix rowBlock(int first, int count) const;
  TraceMatrix colBlock(int first, int count) const;
};

// One expansion block (Static: NE x N / N x NE; Dynamic: S*E x S / S x S*E).
struct TraceExpansion {
  TraceMatrix z, forwardA, forwardB, backwardA, backwardB;
};

struct AttentionTrace {
  QString path;                 // the image as opened
  int imageWidth = 0, imageHeight = 0;  // original size
  cv::Mat rgb;                  // the image for overlays (CV_8UC3 RGB), longest side at most kDisplaySide
  QVector<qint64> tokens;       // the caption, SOS first, EOS last when produced
  QStringList words;            // the vocabulary word of each token
  QString caption;              // the caption text (no SOS/EOS)
  bool endsWithEos = false;     // the last token is EOS (no word of its own)
  QVector<float> logprobs;      // per generated token: log p(tokens[k+1] | tokens[0..k])
  int gridSide = 0;             // backbone grid side: N = gridSide^2 cells, row-major
  int layers = 0, heads = 0;    // decoder layers, cross-attention heads
  std::vector<float> cross;     // [S][layers][heads][N], S = tokens.size() - 1
  std::vector<TraceExpansion> encoder;  // Static Expansion per encoder layer
  std::vector<TraceExpansion> decoder;  // Dynamic Expansion per decoder layer
  std::vector<int> groups;      // Static Expansion group sizes (num_exp_enc_list)
  int decoderSlots = 0;         // Dynamic Expansion slots per position (num_exp_dec)
  // Why encoder / decoder is empty for a model of other layer kinds (empty: not missing).
  QString encoderMissing, decoderMissing;
  double traceMs = 0;           // decode + traced forward, milliseconds

  static constexpr int kDisplaySide = 1024;

  int steps() const { return tokens.size() > 0 ? int(tokens.size()) - 1 : 0; }
  int cells() const { return gridSide * gridSide; }
  // Generated words the page lets a user pick: every generated token but EOS.
  int wordCount() const;
  QString word(int k) const { return words.value(k + 1); }
  // Cross-attention of generated token k over the grid (N values, row-major):
  // one layer or the mean over layers (layer < 0), one head or the mean over
  // heads (head < 0).
  std::vector<float> wordWeights(int k, int layer, int head) const;
  // Words of the input positions 0..S-1 (SOS first): the Dynamic Expansion axes.
  QStringList inputWords() const { return words.mid(0, steps()); }
};

Q_DECLARE_METATYPE(std::shared_ptr<const AttentionTrace>)

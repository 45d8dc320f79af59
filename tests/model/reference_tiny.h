// The tiny reference fixture (../shared/fixtures/reference/tiny) for model tests:
// weights converted by PyTorch itself (export_state_dict.py) so these tests do
// not depend on the project's .pth reader, and the expected tensors of
// expected.bin at the offsets of expected.json.
#pragma once

#include <QString>

#include <map>
#include <string>

#include "expnet/model/expansion_net.h"

namespace expnet_test {

struct TinyReference {
  expnet::ModelConfig config;
  int64_t pad_id = -1, sos_id = -1, eos_id = -1, vocab_size = 0;
  std::map<std::string, torch::Tensor> expected;  // images, swin_features, encoder_output, ...
};

// Builds the tiny model with the fixture's weights loaded by name. Returns an
// empty QString on success, else the reason (QFAIL it). `dir` = fixture folder.
QString loadTinyReference(const QString& dir, expnet::ExpansionNet& model, TinyReference& reference);

// Max |ours - expected| and a readable description of where it occurs.
struct TensorDiff {
  double max_abs = 0;
  QString where;  // "[0, 3, 17]: ours 0.1234 expected 0.1235"
  QString shape_error;  // non-empty when the shapes differ
};
TensorDiff compareTensors(const torch::Tensor& ours, const torch::Tensor& expected);

}  // namespace expnet_test

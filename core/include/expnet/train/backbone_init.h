// A training run's backbone from another checkpoint (TrainConfig::backbone_checkpoint):
// the Swin weights of a trained model (e.g. the demo's) under a captioner of other
// layers, as the ablations compare captioners over one frozen backbone's features.
#pragma once

#include <cstdint>
#include <string>

namespace expnet {

class ExpansionNetImpl;
struct ModelConfig;

// The checkpoint a backbone_checkpoint value names: "demo" (the built-in demo
// model) or a path.
std::string backbone_checkpoint_path(const std::string& value);

// Copies every swin_transf.* tensor of the checkpoint into `model`; the rest of
// the model keeps its values. The checkpoint may be ours (its stored
// configuration must have the same backbone keys), the authors' (names and shapes
// checked), or Microsoft's Swin ImageNet layout (no swin_transf. prefix:
// load_swin_backbone). Throws std::runtime_error naming the file and the first
// differing key, or the missing or mis-shaped tensor. Returns the tensors copied.
int64_t init_backbone_from_checkpoint(ExpansionNetImpl& model, const std::string& value, const std::string& source);

}  // namespace expnet

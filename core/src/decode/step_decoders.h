// Step decoders over the ExpansionNet model (internal to core).
#pragma once

#include <memory>

#include "expnet/decode/decoding.h"

namespace expnet {

class ExpansionNetImpl;
class ExpansionNet;

// Recomputes the whole prefix and the cross-attention keys/values each step (the reference's way).
std::unique_ptr<StepDecoder> make_full_decoder(ExpansionNetImpl& model, const at::Tensor& encoded);
// Computes the cross-attention keys/values once and one new position per step.
std::unique_ptr<StepDecoder> make_incremental_decoder(const ExpansionNet& model, const at::Tensor& encoded);

}  // namespace expnet

// PNAIC decoding (docs/pnaic-method.md, docs/pnaic.md): the K word groups of
// a caption advance together, one word per unfinished group per step, greedy
// per group, with incremental caches (a step feeds K positions per image). A
// group ends at EOS or DEL; decoding stops when every group has ended or the
// step limit is reached; the caption is the concatenation of the groups that
// did not end with DEL (a group cut by the step limit is kept, as an AIC
// caption cut by max_length is). Steps = the longest group, not the caption's
// length.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "expnet/decode/decoding.h"

namespace at {
class Tensor;
}  // namespace at

namespace expnet {

class ExpansionNet;

// The incremental decoder of a PNAIC model: one row per image, K positions per
// row and step (step t of every group). A group that has ended feeds positions
// nobody sees (the padding of training). Results equal ExpansionNet::decode on
// the group-major layout with step_causal_mask (1e-5; tests/decode).
class GroupDecoderState {
 public:
  // enc_out: images x N x d_model. The model must be a PNAIC model in eval().
  // cpu_kernels false: LibTorch operations even where the fused CPU kernels
  // apply (a float32 model on the CPU); tests compare both.
  GroupDecoderState(const ExpansionNet& model, const at::Tensor& enc_out, bool cpu_kernels = true);
  ~GroupDecoderState();
  // tokens: rows x K ids of step `steps()`; live: rows x K bool, false for a
  // group that has ended (its position is hidden from every other). Returns
  // the next token's log-probs, rows x K x V.
  at::Tensor step(const at::Tensor& tokens, const at::Tensor& live);
  int64_t steps() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// GroupEnd and WordGroup are in decoding.h (a Hypothesis holds its groups).
std::string to_string(GroupEnd end);  // "eos", "del", "length"

struct GroupSpecialTokens {
  int64_t sos = 1, eos = 2, del = -1;
};

// Per image: the caption (as a Hypothesis: SOS, the words of the kept groups in
// group order, then EOS unless a group was cut by the step limit; sum_logprob
// over every token the groups generated, DEL groups included; score =
// sum_logprob) with its groups, and the steps spent.
//
// Options: search must be Greedy (beam search over group configurations is not
// offered: docs/pnaic.md says why); max_length is the step limit per group
// counting SOS (0 = the model's max_seq_len); max_word_run applies inside each
// group; the other log-prob options, n-best and sampling are refused with
// std::invalid_argument naming the option. on_step receives, per image and step,
// the current caption (`best`) and the K words of the step (`group_words`).
std::vector<DecodingResult> decode_groups(const ExpansionNet& model, const at::Tensor& enc_out,
                                          const GroupSpecialTokens& special, const DecodingOptions& options);

// Throws std::invalid_argument when `options` asks for what PNAIC decoding
// does not do (see above), naming the option.
void check_group_decoding_options(const DecodingOptions& options);

}  // namespace expnet

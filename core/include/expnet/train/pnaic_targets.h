// PNAIC training targets (docs/pnaic-method.md, "Training"; docs/training.md,
// "PNAIC"): how a caption is cut into K word groups at training step m of M
// (the curriculum f(m), equal or random cuts, invalid-group deletion with DEL),
// and how a batch of cut captions becomes the decoder's group-major input and
// its targets. Pure functions of their arguments and the generator passed in,
// so a step's draws are a function of (seed, step) and --resume stays exact.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <random>
#include <vector>

namespace expnet {

// f(m) = min(1, sqrt(m (1 - c0^2) / M + c0^2)): the probability of equal-length
// groups at step m of M (c0 at m = 0, 1 from m = M on; 1 when M <= 0).
double curriculum_rate(int64_t step, int64_t total_steps, double c0);

// One caption cut into groups: each group's words (ids, no SOS/EOS/DEL) and
// whether it is the invalid pseudo group (ends with DEL; the others end with EOS).
struct GroupDivision {
  std::vector<std::vector<int64_t>> groups;
  std::vector<bool> invalid;
  bool equal = false;      // the draw s: equal-length cuts (true) or random cuts
  bool deletion = false;   // one group is an invalid copy (ends with DEL)
};

// Cuts `words` into `count` groups of lengths as even as possible (the first
// n mod count groups one word longer). With fewer words than groups, the last
// groups are empty (a group that is just EOS).
std::vector<std::vector<int64_t>> equal_groups(const std::vector<int64_t>& words, int64_t count);
// Cuts at count-1 distinct positions drawn uniformly among the n-1 gaps between
// words (every group non-empty). With n < count there are not enough gaps:
// the division is equal_groups' (one word per group, then empty groups).
std::vector<std::vector<int64_t>> random_groups(const std::vector<int64_t>& words, int64_t count, std::mt19937_64& rng);

// The draw of one caption at curriculum rate f: s ~ Bernoulli(f) picks equal
// (s = 1) or random cuts; with probability p_delete (K >= 2 and at least one
// word) the caption is cut into K-1 groups instead, a group G_i with words is
// drawn uniformly, its first u words (u uniform in 1..|G_i|) are copied into a
// pseudo group inserted right after G_i, which ends with DEL. Always K groups.
GroupDivision draw_group_division(const std::vector<int64_t>& words, int64_t groups, double f, double p_delete,
                                  std::mt19937_64& rng);

struct PnaicTokens {
  int64_t sos = 1, eos = 2, del = -1, pad = 0;
};

// A batch of divisions as the decoder reads it: tokens B x (K*Lg) group-major
// (column g*Lg + t = step t of group g; step 0 is SOS, step t the group's
// word t-1, PAD after), targets B x (K*Lg) (the next token of each step: the
// words, then EOS or DEL, PAD elsewhere). Lg = the longest group's words + 1.
// Throws std::invalid_argument when Lg exceeds max_steps (the model's
// max_seq_len), when a division has not K groups, or DEL is missing (-1) and needed.
struct GroupBatch {
  at::Tensor tokens, targets;  // int64, CPU
  int64_t steps = 0;              // Lg
};
GroupBatch layout_group_batch(const std::vector<GroupDivision>& divisions, int64_t groups, const PnaicTokens& special,
                              int64_t max_steps);

}  // namespace expnet

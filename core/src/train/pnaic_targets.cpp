// Group division draws and the group-major batch layout (see expnet/train/pnaic_targets.h).
#include "expnet/train/pnaic_targets.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace expnet {
namespace {

// A uniform integer in [lo, hi]; std::uniform_int_distribution's output is not
// specified across standard libraries, and the draws should be.
int64_t uniform(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  const uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
  const uint64_t limit = UINT64_MAX - UINT64_MAX % span;  // rejection keeps it unbiased
  uint64_t x;
  do x = rng();
  while (x >= limit);
  return lo + static_cast<int64_t>(x % span);
}

double unit(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

std::vector<std::vector<int64_t>> cut(const std::vector<int64_t>& words, const std::vector<int64_t>& ends) {
  std::vector<std::vector<int64_t>> out;
  int64_t begin = 0;
  for (int64_t end : ends) {
    out.emplace_back(words.begin() + begin, words.begin() + end);
    begin = end;
  }
  return out;
}

}  // namespace

double curriculum_rate(int64_t step, int64_t total_steps, double c0) {
  if (total_steps <= 0) return 1.0;
  const double m = static_cast<double>(std::max<int64_t>(step, 0));
  return std::min(1.0, std::sqrt(m * (1.0 - c0 * c0) / static_cast<double>(total_steps) + c0 * c0));
}

std::vector<std::vector<int64_t>> equal_groups(const std::vector<int64_t>& words, int64_t count) {
  if (count < 1) throw std::invalid_argument("equal_groups: need at least one group");
  const int64_t n = static_cast<int64_t>(words.size());
  std::vector<int64_t> ends;
  int64_t end = 0;
  for (int64_t g = 0; g < count; ++g) {
    end += n / count + (g < n % count ? 1 : 0);
    ends.push_back(end);
  }
  return cut(words, ends);
}

std::vector<std::vector<int64_t>> random_groups(const std::vector<int64_t>& words, int64_t count, std::mt19937_64& rng) {
  if (count < 1) throw std::invalid_argument("random_groups: need at least one group");
  const int64_t n = static_cast<int64_t>(words.size());
  if (n < count) return equal_groups(words, count);
  // count-1 distinct gaps out of 1..n-1: a partial Fisher-Yates shuffle.
  std::vector<int64_t> gaps;
  for (int64_t i = 1; i < n; ++i) gaps.push_back(i);
  for (int64_t i = 0; i < count - 1; ++i) std::swap(gaps[static_cast<size_t>(i)], gaps[static_cast<size_t>(uniform(rng, i, n - 2))]);
  std::vector<int64_t> ends(gaps.begin(), gaps.begin() + (count - 1));
  std::sort(ends.begin(), ends.end());
  ends.push_back(n);
  return cut(words, ends);
}

GroupDivision draw_group_division(const std::vector<int64_t>& words, int64_t groups, double f, double p_delete,
                                  std::mt19937_64& rng) {
  if (groups < 1) throw std::invalid_argument("draw_group_division: K must be >= 1, not " + std::to_string(groups));
  GroupDivision d;
  // Every draw is made whether or not it is used, so one caption always takes
  // the same number of values from the generator's stream before its cuts.
  const double s_draw = unit(rng), delete_draw = unit(rng);
  d.equal = s_draw < f;
  d.deletion = groups >= 2 && !words.empty() && delete_draw < p_delete;
  const int64_t valid = d.deletion ? groups - 1 : groups;
  d.groups = d.equal ? equal_groups(words, valid) : random_groups(words, valid, rng);
  d.invalid.assign(d.groups.size(), false);
  if (!d.deletion) return d;
  std::vector<size_t> with_words;
  for (size_t g = 0; g < d.groups.size(); ++g)
    if (!d.groups[g].empty()) with_words.push_back(g);
  const size_t source = with_words[static_cast<size_t>(uniform(rng, 0, static_cast<int64_t>(with_words.size()) - 1))];
  const int64_t u = uniform(rng, 1, static_cast<int64_t>(d.groups[source].size()));
  std::vector<int64_t> copy(d.groups[source].begin(), d.groups[source].begin() + u);
  d.groups.insert(d.groups.begin() + static_cast<std::ptrdiff_t>(source) + 1, std::move(copy));
  d.invalid.insert(d.invalid.begin() + static_cast<std::ptrdiff_t>(source) + 1, true);
  return d;
}

GroupBatch layout_group_batch(const std::vector<GroupDivision>& divisions, int64_t groups, const PnaicTokens& special,
                              int64_t max_steps) {
  size_t longest = 0;
  for (const auto& d : divisions) {
    if (static_cast<int64_t>(d.groups.size()) != groups || d.invalid.size() != d.groups.size())
      throw std::invalid_argument("layout_group_batch: every division must have K = " + std::to_string(groups) + " groups");
    for (size_t g = 0; g < d.groups.size(); ++g) {
      longest = std::max(longest, d.groups[g].size());
      if (d.invalid[g] && special.del < 0)
        throw std::invalid_argument("layout_group_batch: an invalid group needs DEL, and the vocabulary has none");
    }
  }
  GroupBatch out;
  out.steps = static_cast<int64_t>(longest) + 1;
  if (out.steps > max_steps)
    throw std::invalid_argument("layout_group_batch: a group of " + std::to_string(longest) + " words needs " +
                                std::to_string(out.steps) + " steps, more than the model's max_seq_len " +
                                std::to_string(max_steps));
  const auto rows = static_cast<int64_t>(divisions.size());
  out.tokens = torch::full({rows, groups * out.steps}, special.pad, torch::kLong);
  out.targets = torch::full({rows, groups * out.steps}, special.pad, torch::kLong);
  auto tokens = out.tokens.accessor<int64_t, 2>();
  auto targets = out.targets.accessor<int64_t, 2>();
  for (int64_t b = 0; b < rows; ++b) {
    const auto& d = divisions[static_cast<size_t>(b)];
    for (int64_t g = 0; g < groups; ++g) {
      const auto& words = d.groups[static_cast<size_t>(g)];
      const int64_t base = g * out.steps;
      const auto n = static_cast<int64_t>(words.size());
      tokens[b][base] = special.sos;
      for (int64_t t = 0; t < n; ++t) {
        tokens[b][base + t + 1] = words[static_cast<size_t>(t)];
        targets[b][base + t] = words[static_cast<size_t>(t)];
      }
      targets[b][base + n] = d.invalid[static_cast<size_t>(g)] ? special.del : special.eos;
    }
  }
  return out;
}

}  // namespace expnet

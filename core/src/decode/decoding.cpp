// Search strategies over a StepDecoder. Beam search follows the reference's
// semantics step for step (see docs/decoding.md): the same topk calls in the
// same order, the same EOS bookkeeping (0 / -999 continuations), the same
// cumulative sums, so ties break as torch.topk breaks them there.
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>

#include "expnet/decode/decoding.h"

namespace expnet {
namespace {

constexpr float kBanned = -1e9f;  // not -inf, so cumulative sums stay finite
constexpr float kReferenceDiscard = -999.0f;

using Prefixes = std::vector<std::vector<int64_t>>;

bool has_rules(const DecodingOptions& o, const SpecialTokens& s) {
  return o.min_length > 0 || o.no_repeat_ngram_size > 0 || o.max_word_run > 0 || o.repetition_penalty != 1.0 ||
         (o.block_bad_endings && !s.bad_endings.empty());
}

// Tokens that would repeat an n-gram already in the prefix.
std::vector<int64_t> repeated_ngram_bans(const std::vector<int64_t>& prefix, int n) {
  std::vector<int64_t> bans;
  const auto length = static_cast<int>(prefix.size());
  if (n <= 0 || length < n) return bans;
  // The last n-1 tokens; any earlier occurrence followed by w bans w.
  for (int start = 0; start + n <= length; ++start) {
    bool match = true;
    for (int k = 0; k < n - 1 && match; ++k) match = prefix[start + k] == prefix[length - (n - 1) + k];
    if (match) bans.push_back(prefix[start + n - 1]);
  }
  return bans;
}

// The last generated word when it already ends a run of `max_run` equal words
// (SOS not counted), else -1: that word may not come once more.
int64_t word_run_ban(const std::vector<int64_t>& prefix, int max_run) {
  const auto length = static_cast<int>(prefix.size());
  if (max_run <= 0 || length - 1 < max_run) return -1;
  for (int k = length - max_run; k < length - 1; ++k)
    if (prefix[k] != prefix[length - 1]) return -1;
  return prefix[length - 1];
}

// Returns the log-probs used for ranking: the model's, altered by the
// options that change them. With every such option off it is `raw` itself.
at::Tensor ranking_logprobs(const at::Tensor& raw, const Prefixes& prefixes, const DecodingOptions& o,
                            const SpecialTokens& s) {
  if (!has_rules(o, s)) return raw;
  auto ranked = raw.clone();
  auto cpu = ranked.to(torch::kCPU).contiguous();
  auto* data = cpu.data_ptr<float>();
  const int64_t vocab = cpu.size(1);
  const std::set<int64_t> bad(s.bad_endings.begin(), s.bad_endings.end());
  for (size_t row = 0; row < prefixes.size(); ++row) {
    const auto& prefix = prefixes[row];
    float* r = data + static_cast<int64_t>(row) * vocab;
    const int generated = static_cast<int>(prefix.size()) - 1;  // SOS not counted
    if (o.repetition_penalty != 1.0) {
      std::set<int64_t> seen(prefix.begin() + 1, prefix.end());
      for (int64_t token : seen) r[token] *= static_cast<float>(o.repetition_penalty);  // log p <= 0: lower
    }
    for (int64_t token : repeated_ngram_bans(prefix, o.no_repeat_ngram_size)) r[token] = kBanned;
    if (const int64_t token = word_run_ban(prefix, o.max_word_run); token >= 0) r[token] = kBanned;
    if (generated < o.min_length) r[s.eos] = kBanned;
    if (o.block_bad_endings && generated > 0 && bad.count(prefix.back())) r[s.eos] = kBanned;
  }
  return cpu.to(raw.device());
}

double length_normalised(double sum, int64_t length, double alpha) {
  return alpha == 0.0 ? sum : sum / std::pow(static_cast<double>(length), alpha);
}

std::vector<int64_t> to_vector(const at::Tensor& t) {
  auto c = t.to(torch::kCPU).to(torch::kLong).contiguous();
  return {c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel()};
}

// ---------------------------------------------------------------------------
// Beam search

struct BeamBatch {
  at::Tensor tokens;       // [B, K, t] int64
  at::Tensor raw_lp;       // [B, K, t] model log-probs (0 for SOS and for continuations after EOS)
  at::Tensor rank_lp;      // [B, K, t] log-probs used for ranking
  at::Tensor num_elem;     // [B, K] int64: length counting SOS and EOS
  std::vector<int64_t> images;  // image index of each of the B rows
};

Prefixes beam_prefixes(const at::Tensor& tokens) {
  auto flat = tokens.reshape({-1, tokens.size(-1)}).to(torch::kCPU).contiguous();
  Prefixes out(static_cast<size_t>(flat.size(0)));
  const auto* d = flat.data_ptr<int64_t>();
  for (int64_t r = 0; r < flat.size(0); ++r) out[r].assign(d + r * flat.size(1), d + (r + 1) * flat.size(1));
  return out;
}

DecodingResult finish_beams(const BeamBatch& b, int64_t row, const DecodingOptions& o, int steps) {
  const auto cumul = b.rank_lp[row].sum(-1);  // [K], float32 like the reference
  const auto lengths = b.num_elem[row];
  at::Tensor score = o.length_penalty == 1.0 ? cumul / lengths.to(cumul.scalar_type())
                     : o.length_penalty == 0.0 ? cumul
                                                : cumul / lengths.to(torch::kDouble).pow(o.length_penalty).to(cumul.scalar_type());
  const int64_t k = b.tokens.size(1);
  const auto order = to_vector(std::get<1>(score.topk(k)));
  const auto tokens = b.tokens[row].to(torch::kCPU).contiguous();
  const auto raw = b.raw_lp[row].to(torch::kCPU).to(torch::kFloat).contiguous();
  const auto len = to_vector(lengths);
  const auto scores = score.to(torch::kCPU).to(torch::kDouble).contiguous();
  DecodingResult result;
  result.steps = steps;
  for (int j = 0; j < o.num_hypotheses && j < k; ++j) {
    const int64_t beam = order[static_cast<size_t>(j)];
    const int64_t n = len[static_cast<size_t>(beam)];
    Hypothesis h;
    const auto* t = tokens[beam].data_ptr<int64_t>();
    h.tokens.assign(t, t + n);
    const auto* lp = raw[beam].data_ptr<float>();
    for (int64_t i = 1; i < n; ++i) {
      h.sum_logprob += lp[i];
      if (o.return_token_logprobs) h.token_logprobs.push_back(lp[i]);
    }
    h.score = scores[beam].item<double>();
    result.hypotheses.push_back(std::move(h));
  }
  return result;
}

void notify(const DecodingOptions& o, int64_t image, int step, const at::Tensor& best, int64_t length, bool finished) {
  if (!o.on_step) return;
  StepUpdate update;
  update.image = image;
  update.step = step;
  auto all = to_vector(best);
  all.resize(static_cast<size_t>(std::min<int64_t>(length, static_cast<int64_t>(all.size()))));
  update.best = std::move(all);
  update.finished = finished;
  o.on_step(update);
}

std::vector<DecodingResult> beam_search(StepDecoder& decoder, int64_t batch, const SpecialTokens& s,
                                        const DecodingOptions& o) {
  RECORD_USER_SCOPE("expnet::beam_search");
  const int64_t K = o.beam_size;
  std::vector<DecodingResult> results(static_cast<size_t>(batch));
  auto long_opts = torch::TensorOptions().dtype(torch::kLong);

  // Step 1: decode [SOS] once per image, take the top K words.
  auto sos = torch::full({batch}, s.sos, long_opts);
  auto raw = decoder.step(sos);
  const auto device = raw.device();
  if (K > raw.size(-1))
    throw std::invalid_argument("beam size " + std::to_string(K) + " is larger than the vocabulary (" +
                                std::to_string(raw.size(-1)) + " words): use a beam of at most " +
                                std::to_string(raw.size(-1)));
  auto ranked = ranking_logprobs(raw, Prefixes(static_cast<size_t>(batch), {s.sos}), o, s);
  auto topi = std::get<1>(ranked.topk(K, -1, true, true));  // [B, K]
  BeamBatch b;
  b.tokens = torch::cat({torch::full({batch, K, 1}, s.sos, long_opts.device(device)), topi.unsqueeze(-1)}, -1);
  auto zeros = torch::zeros({batch, K, 1}, raw.options());
  b.raw_lp = torch::cat({zeros, raw.gather(-1, topi).unsqueeze(-1)}, -1);
  b.rank_lp = torch::cat({zeros, ranked.gather(-1, topi).unsqueeze(-1)}, -1);
  b.num_elem = torch::full({batch, K}, 2, long_opts.device(device));
  for (int64_t i = 0; i < batch; ++i) b.images.push_back(i);
  decoder.select(torch::arange(batch, long_opts.device(device)).repeat_interleave(K));
  std::vector<int> steps(static_cast<size_t>(batch), 1);
  for (int64_t i = 0; i < batch; ++i) notify(o, i, 1, b.tokens[i][0], 2, false);

  for (int64_t t = 2; t < o.max_length && !b.images.empty(); ++t) {
    const int64_t B = static_cast<int64_t>(b.images.size());
    raw = decoder.step(b.tokens.select(-1, -1).reshape({-1}));  // [B*K, V]
    ranked = ranking_logprobs(raw, has_rules(o, s) ? beam_prefixes(b.tokens) : Prefixes{}, o, s);
    topi = std::get<1>(ranked.topk(K, -1, true, true));        // [B*K, K]
    auto classes = topi.view({B, K, K});
    auto word_rank = ranked.gather(-1, topi).view({B, K, K});
    auto word_raw = raw.gather(-1, topi).view({B, K, K});
    // A beam holding EOS keeps its score through one continuation (0) and
    // offers nothing else (-999), exactly as the reference does.
    auto eos_mask = b.tokens.eq(s.eos).any(-1, true);  // [B, K, 1]
    for (auto* w : {&word_rank, &word_raw}) {
      w->narrow(-1, 0, 1).masked_fill_(eos_mask, 0.0);
      w->narrow(-1, 1, K - 1).masked_fill_(eos_mask, kReferenceDiscard);
    }
    auto cumul = b.rank_lp.sum(-1, true);  // [B, K, 1]
    auto comparison = (cumul + word_rank).view({B, K * K});
    auto chosen = std::get<1>(comparison.topk(K, -1, true, true));  // [B, K]
    auto which_seq = chosen.div(K, "floor");
    auto which_word = chosen.remainder(K).unsqueeze(-1);
    auto parent = which_seq.unsqueeze(-1);
    auto gather_parent = [&](const at::Tensor& x) { return x.gather(1, parent.expand({B, K, x.size(-1)})); };
    auto pick = [&](const at::Tensor& w) { return gather_parent(w).gather(-1, which_word); };
    auto new_tokens = torch::cat({gather_parent(b.tokens), pick(classes)}, -1);
    b.raw_lp = torch::cat({gather_parent(b.raw_lp), pick(word_raw)}, -1);
    b.rank_lp = torch::cat({gather_parent(b.rank_lp), pick(word_rank)}, -1);
    b.num_elem = b.num_elem.gather(1, which_seq);
    auto had_eos = new_tokens.narrow(-1, 0, t).eq(s.eos).any(-1);  // EOS before the new token
    b.num_elem = b.num_elem + had_eos.logical_not().to(torch::kLong);
    b.tokens = new_tokens;
    auto rows = (torch::arange(B, long_opts.device(device)).unsqueeze(-1) * K + which_seq).reshape({-1});
    decoder.select(rows);

    // An image is done when no beam grew this step (the reference's stop test).
    auto done = b.num_elem.ne(t + 1).all(-1);
    const auto done_flags = to_vector(done);
    std::vector<int64_t> keep;
    for (int64_t r = 0; r < B; ++r) {
      const int64_t image = b.images[static_cast<size_t>(r)];
      ++steps[static_cast<size_t>(image)];
      const bool finished = done_flags[static_cast<size_t>(r)] != 0 || t + 1 >= o.max_length;
      notify(o, image, static_cast<int>(t), b.tokens[r][0], b.num_elem[r][0].item<int64_t>(), finished);
      if (finished)
        results[static_cast<size_t>(image)] = finish_beams(b, r, o, steps[static_cast<size_t>(image)]);
      else
        keep.push_back(r);
    }
    if (static_cast<int64_t>(keep.size()) == B) continue;
    // Finished images stop costing compute: drop their rows.
    auto keep_t = torch::tensor(keep, long_opts).to(device);
    for (auto* x : {&b.tokens, &b.raw_lp, &b.rank_lp, &b.num_elem}) *x = x->index_select(0, keep_t);
    std::vector<int64_t> images;
    for (int64_t r : keep) images.push_back(b.images[static_cast<size_t>(r)]);
    b.images = std::move(images);
    if (!keep.empty()) {
      auto keep_rows = (keep_t.unsqueeze(-1) * K + torch::arange(K, long_opts.device(device))).reshape({-1});
      decoder.select(keep_rows);
    }
  }
  for (size_t r = 0; r < b.images.size(); ++r) {  // max_length reached before the stop test
    const int64_t image = b.images[r];
    results[static_cast<size_t>(image)] = finish_beams(b, static_cast<int64_t>(r), o, steps[static_cast<size_t>(image)]);
  }
  return results;
}

// ---------------------------------------------------------------------------
// Greedy and sampling: one row per hypothesis, rows dropped at EOS.

at::Tensor sample_tokens(const at::Tensor& ranked, const DecodingOptions& o, at::Generator& generator) {
  auto logits = ranked.to(torch::kFloat) / o.sampling_temperature;
  if (o.sampling_topk > 0 && o.sampling_topk < logits.size(-1)) {
    auto kth = std::get<0>(logits.topk(o.sampling_topk, -1)).narrow(-1, o.sampling_topk - 1, 1);
    logits = logits.masked_fill(logits < kth, -std::numeric_limits<float>::infinity());
  }
  if (o.sampling_topp < 1.0) {
    auto [sorted, order] = logits.sort(-1, true);
    auto cumulative = sorted.softmax(-1).cumsum(-1);
    // Keep the smallest prefix whose mass reaches p (the first token always stays).
    auto remove = (cumulative - sorted.softmax(-1)) >= o.sampling_topp;
    sorted = sorted.masked_fill(remove, -std::numeric_limits<float>::infinity());
    logits = torch::full_like(logits, -std::numeric_limits<float>::infinity()).scatter(-1, order, sorted);
  }
  auto probs = logits.softmax(-1).to(torch::kCPU);
  return torch::multinomial(probs, 1, false, generator).squeeze(-1).to(ranked.device());
}

std::vector<DecodingResult> row_search(StepDecoder& decoder, int64_t batch, const SpecialTokens& s,
                                       const DecodingOptions& o) {
  const bool sampling = o.search == SearchKind::Sampling;
  const int64_t per_image = sampling ? o.num_hypotheses : 1;
  const int64_t rows = batch * per_image;
  auto long_opts = torch::TensorOptions().dtype(torch::kLong);
  std::vector<DecodingResult> results(static_cast<size_t>(batch));
  std::vector<Hypothesis> hyps(static_cast<size_t>(rows));
  std::vector<int64_t> active;  // hypothesis index of each decoder row
  for (int64_t r = 0; r < rows; ++r) {
    active.push_back(r);
    hyps[static_cast<size_t>(r)].tokens = {s.sos};
  }
  std::vector<int> steps(static_cast<size_t>(batch), 0);
  at::Generator generator = at::detail::createCPUGenerator(o.seed);
  if (per_image > 1) decoder.select(torch::arange(batch, long_opts).repeat_interleave(per_image));
  auto last = torch::full({rows}, s.sos, long_opts);
  std::vector<double> rank_sum(static_cast<size_t>(rows), 0.0);
  for (int64_t t = 1; t < o.max_length && !active.empty(); ++t) {
    auto raw = decoder.step(last);
    Prefixes prefixes;
    if (has_rules(o, s))
      for (int64_t h : active) prefixes.push_back(hyps[static_cast<size_t>(h)].tokens);
    auto ranked = ranking_logprobs(raw, prefixes, o, s);
    at::Tensor next = sampling ? sample_tokens(ranked, o, generator) : ranked.argmax(-1);
    const auto next_v = to_vector(next);
    auto raw_pick = raw.gather(-1, next.unsqueeze(-1)).squeeze(-1).to(torch::kCPU).to(torch::kDouble).contiguous();
    auto rank_pick = ranked.gather(-1, next.unsqueeze(-1)).squeeze(-1).to(torch::kCPU).to(torch::kDouble).contiguous();
    std::vector<int64_t> keep_rows, keep_hyps;
    std::set<int64_t> stepped_images;
    for (size_t r = 0; r < active.size(); ++r) {
      const int64_t h = active[r];
      auto& hyp = hyps[static_cast<size_t>(h)];
      hyp.tokens.push_back(next_v[r]);
      const double lp = raw_pick[static_cast<int64_t>(r)].item<double>();
      hyp.sum_logprob += lp;
      rank_sum[static_cast<size_t>(h)] += rank_pick[static_cast<int64_t>(r)].item<double>();
      if (o.return_token_logprobs) hyp.token_logprobs.push_back(static_cast<float>(lp));
      stepped_images.insert(h / per_image);
      if (next_v[r] != s.eos) {
        keep_rows.push_back(static_cast<int64_t>(r));
        keep_hyps.push_back(h);
      }
    }
    for (int64_t image : stepped_images) {
      ++steps[static_cast<size_t>(image)];
      notify(o, image, static_cast<int>(t), torch::tensor(hyps[static_cast<size_t>(image * per_image)].tokens), 1 << 30,
             false);
    }
    if (keep_rows.size() != active.size() && !keep_rows.empty())
      decoder.select(torch::tensor(keep_rows, long_opts).to(raw.device()));
    active = keep_hyps;
    std::vector<int64_t> last_tokens;
    for (int64_t h : active) last_tokens.push_back(hyps[static_cast<size_t>(h)].tokens.back());
    last = torch::tensor(last_tokens, long_opts);
  }
  for (int64_t h = 0; h < rows; ++h) {
    auto& hyp = hyps[static_cast<size_t>(h)];
    hyp.score = length_normalised(rank_sum[static_cast<size_t>(h)], static_cast<int64_t>(hyp.tokens.size()),
                                  o.length_penalty);
    results[static_cast<size_t>(h / per_image)].hypotheses.push_back(std::move(hyp));
  }
  for (int64_t i = 0; i < batch; ++i) {
    auto& r = results[static_cast<size_t>(i)];
    r.steps = steps[static_cast<size_t>(i)];
    std::stable_sort(r.hypotheses.begin(), r.hypotheses.end(),
                     [](const Hypothesis& a, const Hypothesis& b) { return a.score > b.score; });
    if (o.on_step && !r.hypotheses.empty()) {
      StepUpdate u{i, r.steps, r.hypotheses.front().tokens, true};
      o.on_step(u);
    }
  }
  return results;
}

}  // namespace

void DecodingOptions::validate() const {
  auto fail = [](const std::string& what) { throw std::invalid_argument(what); };
  const auto g = [](double v) {
    char text[32];
    std::snprintf(text, sizeof(text), "%g", v);
    return std::string(text);
  };
  if (search == SearchKind::Beam && (beam_size < 1 || beam_size > kMaxBeamSize))
    fail("beam size must be 1 to " + std::to_string(kMaxBeamSize) + ", not " + std::to_string(beam_size));
  if (num_hypotheses < 1 || num_hypotheses > kMaxBeamSize)
    fail("n-best must be 1 to " + std::to_string(kMaxBeamSize) + ", not " + std::to_string(num_hypotheses));
  if (max_length > kMaxDecodingLength)
    fail("max length must be at most " + std::to_string(kMaxDecodingLength) + ", not " + std::to_string(max_length));
  if (search == SearchKind::Beam && num_hypotheses > beam_size)
    fail("n-best (" + std::to_string(num_hypotheses) + ") cannot exceed the beam size (" + std::to_string(beam_size) + ")");
  if (max_length < 2) fail("max length must be >= 2 (it counts SOS)");
  if (min_length < 0) fail("min length must be >= 0");
  if (no_repeat_ngram_size < 0) fail("no-repeat n-gram size must be >= 0");
  if (max_word_run < 0) fail("max word run must be >= 0 (0 = off)");
  if (repetition_penalty < 1.0) fail("repetition penalty must be >= 1");
  if (!(sampling_temperature >= kMinTemperature && sampling_temperature <= kMaxTemperature))
    fail("sampling temperature must be " + g(kMinTemperature) + " to " + g(kMaxTemperature) + ", not " +
         g(sampling_temperature));
  if (sampling_topk < 0) fail("sampling top-k must be >= 0");
  if (sampling_topp <= 0 || sampling_topp > 1) fail("sampling top-p must be in (0, 1]");
}

const std::vector<std::string>& bad_ending_words() {
  static const std::vector<std::string> words = {"a",      "an",    "the", "in",   "for",  "at",   "of",   "with", "before",
                                                 "after",  "on",    "upon", "near", "to",   "is",   "are",  "am"};
  return words;
}

std::vector<DecodingResult> decode(StepDecoder& decoder, int64_t batch, const SpecialTokens& special,
                                   const DecodingOptions& options) {
  options.validate();
  if (batch <= 0) return {};
  // Inference mode, not just no-grad: no version counters or view tracking on
  // the many small per-step tensors.
  c10::InferenceMode inference;
  if (options.search == SearchKind::Beam) return beam_search(decoder, batch, special, options);
  return row_search(decoder, batch, special, options);
}

}  // namespace expnet

// libFuzzer harness of the metrics' evaluation tokenizer
// (expnet/metrics/eval_tokenizer.h) and the training caption cleaner. Contract:
// never throws; tokens are non-empty, hold no ASCII space and are valid UTF-8.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <nlohmann/json.hpp>

#include "expnet/metrics/eval_tokenizer.h"
#include "expnet/text/caption_text.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view raw(reinterpret_cast<const char*>(data), size);
  const auto tokens = expnet::tokenize_for_eval(raw);
  for (const auto& token : tokens)
    if (token.empty() || token.find(' ') != std::string::npos) std::abort();
  (void)expnet::tokenize_for_eval_text(raw);
  // Tokens end up in JSON (vocabularies, evaluation results): nlohmann refuses invalid UTF-8.
  (void)nlohmann::json(tokens).dump();
  (void)nlohmann::json(expnet::clean_caption(std::string(raw))).dump();
  return 0;
}

// libFuzzer harness of the vocabulary reader (expnet/checkpoint/vocabulary_file.h):
// our JSON or the authors' pickle. Contract: a vocabulary or std::runtime_error;
// a vocabulary read survives to_json() -> from_json() unchanged.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string_view>

#include "expnet/checkpoint/vocabulary_file.h"
#include "expnet/text/vocabulary.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  expnet::Vocabulary vocabulary;
  try {
    vocabulary = expnet::parse_vocabulary(bytes, "fuzz.vocab");
  } catch (const std::runtime_error&) {
    return 0;
  }
  const expnet::Vocabulary again = expnet::Vocabulary::from_json(vocabulary.to_json(), "round trip");
  if (again.words() != vocabulary.words() || again.sos_id() != vocabulary.sos_id() ||
      again.eos_id() != vocabulary.eos_id() || again.pad_id() != vocabulary.pad_id())
    std::abort();
  // Every id decodes, every word encodes back to its id.
  std::vector<int64_t> ids;
  for (int64_t id = 0; id < vocabulary.size() && id < 64; ++id) ids.push_back(id);
  (void)vocabulary.decode_text(ids);
  for (const auto& word : vocabulary.words())
    if (vocabulary.word(vocabulary.id(word)) != word) std::abort();
  return 0;
}

// libFuzzer harness of the restricted unpickler (expnet/checkpoint/unpickler.h).
// Contract checked: any input either parses or throws PickleError; a parsed
// document renders, and what the pickler writes from it parses again.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <string_view>

#include "expnet/checkpoint/pickle_value.h"
#include "expnet/checkpoint/pickler.h"
#include "expnet/checkpoint/unpickler.h"

namespace pickle = expnet::pickle;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  pickle::Document doc;
  try {
    doc = pickle::parse(bytes, "fuzz.pkl");
  } catch (const pickle::PickleError&) {
    return 0;
  }
  (void)pickle::describe(*doc.root, 4);
  for (const auto& storage : doc.storages) (void)pickle::dtype_size(storage->dtype);
  std::string written;
  try {
    written = pickle::write(*doc.root);
  } catch (const pickle::PickleError&) {
    return 0;  // cycles, nesting past the writer's depth, values it cannot write
  }
  try {
    (void)pickle::parse(written, "rewritten.pkl");
  } catch (const pickle::PickleError& e) {
    std::fprintf(stderr, "the pickler wrote a program the unpickler refuses: %s\n", e.what());
    std::abort();
  }
  // Legacy torch files hold pickles back to back: parse_prefix must stop inside the input.
  try {
    size_t consumed = 0;
    (void)pickle::parse_prefix(bytes, "fuzz.pkl", &consumed);
    if (consumed > size) std::abort();
  } catch (const pickle::PickleError&) {
  }
  return 0;
}

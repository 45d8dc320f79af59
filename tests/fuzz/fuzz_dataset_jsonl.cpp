// libFuzzer harness of the JSONL dataset reader: one {"image", "caption" or
// "captions"[, "split"][, "id"]} per line (read_jsonl, core/src/data/dataset_formats.h).
#include "fuzz_row_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return expnet_fuzz::read_rows(expnet::read_jsonl, "fuzz.jsonl", data, size);
}

// libFuzzer harness of the CSV dataset reader: RFC 4180 rows of image,
// caption[, split][, id] (parse_csv + read_csv, core/src/data/dataset_formats.h).
#include "fuzz_row_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return expnet_fuzz::read_rows(expnet::read_csv, "fuzz.csv", data, size);
}

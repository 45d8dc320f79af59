// libFuzzer harness of the .pth (zip) entry checker (expnet/checkpoint/zip_entries.h),
// over minizip and zlib. Contract: the entries or a ZipError; entries listed
// fit the archive's budget.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "expnet/checkpoint/zip_entries.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view archive(reinterpret_cast<const char*>(data), size);
  const expnet::ZipBudget budget;
  try {
    const auto entries = expnet::read_zip_entries(archive, "fuzz.pth", budget);
    if (entries.size() > budget.max_entries) std::abort();
    for (const auto& entry : entries)
      if (!entry.deflated && entry.compressed != entry.size) std::abort();  // a stored record is its own bytes
  } catch (const expnet::ZipError&) {
  }
  return 0;
}

// The entries of a zip archive (torch.save's .pth), read with minizip and
// checked against a budget before LibTorch's reader inflates anything: a few
// megabytes of deflated zeros must not become gigabytes in memory
// (docs/checkpoints.md, "Limits against hostile input"). No LibTorch here, so
// the EXPNET_SANITIZE build and the fuzzers use it as it is.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace expnet {

class ZipError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ZipEntry {
  std::string name;
  uint64_t size = 0;        // inflated bytes (checked: the data holds exactly this many)
  uint64_t compressed = 0;  // bytes in the archive
  bool deflated = false;    // false: stored, as torch.save writes every record
  uint32_t crc = 0;         // the CRC-32 the central directory gives for the inflated data
};

struct ZipBudget {
  uint64_t max_entries = 100'000;
  // Deflated entries: inflated / compressed at most this, for an entry larger
  // than ratio_free_bytes and for all of them together (plus ratio_free_bytes).
  uint64_t max_ratio = 200;
  uint64_t ratio_free_bytes = uint64_t{16} << 20;
};

// Lists and checks every entry of the archive in `archive` (all its bytes);
// `source` names it in errors. Deflated entries are inflated once, in constant
// memory, to prove their size and CRC. Throws ZipError naming the source, the
// entry, the reason and what to do.
std::vector<ZipEntry> read_zip_entries(std::string_view archive, const std::string& source,
                                       const ZipBudget& budget = {});
// Same for a file, read in place (stored records are never read).
std::vector<ZipEntry> read_zip_entries_file(const std::string& path, const ZipBudget& budget = {});

}  // namespace expnet

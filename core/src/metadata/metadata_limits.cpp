#include "metadata/metadata_limits.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <set>
#include <vector>

namespace expnet {

namespace {

// Blocks a file may declare before it stops looking like a photo's metadata.
constexpr size_t kMaxBlocks = 4096;

std::string megabytes(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MB", static_cast<double>(bytes) / 1e6);
  return text;
}

// `bytes` counted up to the limit only (compressed text is inflated no further): "more than".
std::string too_large(const std::string& what, uint64_t bytes, bool counted_to_limit = false) {
  return "its " + what +
         (counted_to_limit ? " inflates to more than " + megabytes(kMaxMetadataBlockBytes)
                           : " is " + megabytes(bytes)) +
         " (the limit is " + megabytes(kMaxMetadataBlockBytes) +
         ": exiv2 would need about ten times that in memory); left untouched. Find the tag that fills it "
         "(exiftool -a -G1 -s FILE), remove it, and run again";
}

// The file's bytes, mapped read-only.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    struct stat info {};
    if (::fstat(fd, &info) == 0 && S_ISREG(info.st_mode) && info.st_size > 0) {
      void* bytes = ::mmap(nullptr, static_cast<size_t>(info.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
      if (bytes != MAP_FAILED) data_ = static_cast<const uint8_t*>(bytes), size_ = static_cast<size_t>(info.st_size);
    }
    ::close(fd);
  }
  ~MappedFile() {
    if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  bool starts_with(const char* magic, size_t n) const { return size_ >= n && std::memcmp(data_, magic, n) == 0; }

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

uint32_t big_endian32(const uint8_t* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3];
}
uint32_t little_endian32(const uint8_t* p) {
  return uint32_t{p[3]} << 24 | uint32_t{p[2]} << 16 | uint32_t{p[1]} << 8 | p[0];
}

bool has_prefix(const uint8_t* p, size_t n, const char* prefix) {
  const size_t k = std::strlen(prefix) + 1;  // with its NUL
  return n >= k && std::memcmp(p, prefix, k) == 0;
}

// JPEG: one Exif block and one XMP block at most (exiv2 would rewrite several
// keeping some of them, and readers disagree which one counts).
std::string jpeg_hazard(const MappedFile& f) {
  const uint8_t* d = f.data();
  size_t at = 2, blocks = 0, exif = 0, xmp = 0;
  while (at + 4 <= f.size() && d[at] == 0xFF) {
    const uint8_t marker = d[at + 1];
    if (marker == 0xFF) {
      ++at;
      continue;
    }                                             // fill byte
    if (marker == 0xDA || marker == 0xD9) break;  // the image data starts, or ends
    if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) {
      at += 2;
      continue;
    }
    const size_t length = size_t{d[at + 2]} << 8 | d[at + 3];
    if (length < 2 || at + 2 + length > f.size()) break;  // damaged: exiv2 says so itself
    if (++blocks > kMaxBlocks)
      return "it declares more than " + std::to_string(kMaxBlocks) +
             " metadata segments before its image data; left untouched";
    if (marker == 0xE1) {
      exif += has_prefix(d + at + 4, length - 2, "Exif");
      xmp += has_prefix(d + at + 4, length - 2, "http://ns.adobe.com/xap/1.0/");
    }
    at += 2 + length;
  }
  if (exif > 1 || xmp > 1)
    return "it holds " + std::to_string(exif) + " Exif and " + std::to_string(xmp) +
           " XMP blocks (APP1 segments), where a JPEG has one of each: exiv2 would keep only some, so it is left "
           "untouched. Merge them (exiftool -all= -tagsfromfile @ -all:all FILE) and run again";
  return "";
}

// Bytes a zlib stream inflates to, counted up to `limit` + 1 (never held).
uint64_t inflated_size(const uint8_t* data, size_t size, uint64_t limit) {
  z_stream z{};
  if (inflateInit(&z) != Z_OK) return 0;
  std::vector<uint8_t> sink(1 << 16);
  z.next_in = const_cast<uint8_t*>(data);
  z.avail_in = static_cast<uInt>(size);
  uint64_t total = 0;
  int rc = Z_OK;
  while (rc == Z_OK && total <= limit) {
    z.next_out = sink.data();
    z.avail_out = static_cast<uInt>(sink.size());
    rc = inflate(&z, Z_NO_FLUSH);
    total += sink.size() - z.avail_out;
    if (rc == Z_BUF_ERROR && z.avail_in == 0) break;
  }
  inflateEnd(&z);
  return total;
}

// PNG: text chunks (where XMP and ImageMagick's raw profiles live), inflated where compressed.
std::string png_hazard(const MappedFile& f) {
  const uint8_t* d = f.data();
  size_t at = 8, blocks = 0;
  uint64_t text = 0;
  bool inflated = false;
  while (at + 8 <= f.size()) {
    const size_t length = big_endian32(d + at);
    const uint8_t* type = d + at + 4;
    if (length > f.size() - at - 8) break;
    if (++blocks > kMaxBlocks * 16)
      return "it declares more than " + std::to_string(kMaxBlocks * 16) + " chunks; left untouched";
    const uint8_t* body = d + at + 8;
    const auto keyword_end = static_cast<const uint8_t*>(std::memchr(body, 0, length));
    if (keyword_end &&
        (!std::memcmp(type, "tEXt", 4) || !std::memcmp(type, "zTXt", 4) || !std::memcmp(type, "iTXt", 4))) {
      const size_t after = static_cast<size_t>(keyword_end - body) + 1;
      if (!std::memcmp(type, "tEXt", 4)) {
        text += length - after;
      } else if (!std::memcmp(type, "zTXt", 4)) {
        if (after + 1 <= length)
          text += inflated_size(body + after + 1, length - after - 1, kMaxMetadataBlockBytes), inflated = true;
      } else if (after + 2 <= length) {
        // iTXt: compression flag and method, then language and translated keyword (NUL-ended), then the text.
        const bool compressed = body[after] != 0;
        size_t rest = after + 2;
        for (int field = 0; field < 2 && rest < length; ++field) {
          const auto end = static_cast<const uint8_t*>(std::memchr(body + rest, 0, length - rest));
          rest = end ? static_cast<size_t>(end - body) + 1 : length;
        }
        if (rest < length)
          text += compressed ? inflated_size(body + rest, length - rest, kMaxMetadataBlockBytes) : length - rest;
        inflated = inflated || compressed;
      }
      if (text > kMaxMetadataBlockBytes)
        return too_large("text metadata (XMP and other PNG text chunks)", text, inflated);
    }
    if (!std::memcmp(type, "IEND", 4)) break;
    at += 12 + length;
  }
  return "";
}

// TIFF: every IFD reached once (a loop is a damaged file), metadata tags within the limit.
std::string tiff_hazard(const MappedFile& f) {
  const uint8_t* d = f.data();
  const bool little = d[0] == 'I';
  auto u16 = [&](size_t at) -> uint32_t { return little ? d[at] | d[at + 1] << 8 : d[at] << 8 | d[at + 1]; };
  auto u32 = [&](size_t at) -> uint32_t { return little ? little_endian32(d + at) : big_endian32(d + at); };
  static const size_t kTypeBytes[] = {0, 1, 1, 2, 4, 8, 1, 1, 2, 4, 8, 4, 8, 4};
  std::vector<uint32_t> pending{u32(4)};
  std::set<uint32_t> seen;
  while (!pending.empty()) {
    const uint32_t ifd = pending.back();
    pending.pop_back();
    if (ifd == 0) continue;
    if (!seen.insert(ifd).second)
      return "its directories (IFDs) form a loop: the one at byte " + std::to_string(ifd) +
             " is reached twice. A damaged file, left untouched";
    if (seen.size() > kMaxBlocks)
      return "it has more than " + std::to_string(kMaxBlocks) + " directories (IFDs); left untouched";
    if (size_t{ifd} + 2 > f.size()) continue;  // damaged: exiv2 says so itself
    const size_t entries = u16(ifd);
    if (size_t{ifd} + 2 + 12 * entries + 4 > f.size()) continue;
    for (size_t k = 0; k < entries; ++k) {
      const size_t entry = ifd + 2 + 12 * k;
      const uint32_t tag = u16(entry), type = u16(entry + 2), count = u32(entry + 4);
      const uint64_t bytes = uint64_t{count} * (type < 14 ? kTypeBytes[type] : 1);
      // XMP, IPTC, Photoshop's resources, ICC profile.
      if ((tag == 700 || tag == 33723 || tag == 34377 || tag == 34675) && bytes > kMaxMetadataBlockBytes)
        return too_large(tag == 700 ? "XMP packet (TIFF tag 700)" : "metadata tag " + std::to_string(tag), bytes);
      // Exif, GPS and Interoperability IFDs, and SubIFDs: their offsets.
      if (tag == 34665 || tag == 34853 || tag == 40965 || tag == 330) {
        if (count == 1) pending.push_back(u32(entry + 8));
        const uint32_t offsets = u32(entry + 8);
        for (uint32_t i = 0; count > 1 && i < count && size_t{offsets} + 4 * (i + 1) <= f.size(); ++i)
          pending.push_back(u32(offsets + 4 * i));
      }
    }
    pending.push_back(u32(ifd + 2 + 12 * entries));  // the next IFD
  }
  return "";
}

// WebP: RIFF chunks; XMP in "XMP ".
std::string webp_hazard(const MappedFile& f) {
  const uint8_t* d = f.data();
  size_t at = 12, blocks = 0;
  while (at + 8 <= f.size()) {
    const uint64_t length = little_endian32(d + at + 4);
    if (++blocks > kMaxBlocks) return "it declares more than " + std::to_string(kMaxBlocks) + " chunks; left untouched";
    if ((!std::memcmp(d + at, "XMP ", 4) || !std::memcmp(d + at, "EXIF", 4)) && length > kMaxMetadataBlockBytes)
      return too_large(!std::memcmp(d + at, "XMP ", 4) ? "XMP packet" : "Exif block", length);
    at += 8 + length + (length & 1);
  }
  return "";
}

}  // namespace

std::string metadata_hazard(const std::string& path) {
  const MappedFile file(path);
  if (!file.data()) return "";  // unreadable: exiv2's own error names it
  if (file.starts_with("\xFF\xD8", 2)) return jpeg_hazard(file);
  if (file.starts_with("\x89PNG\r\n\x1a\n", 8)) return png_hazard(file);
  if ((file.starts_with("II*\0", 4) || file.starts_with("MM\0*", 4)) && file.size() >= 8) return tiff_hazard(file);
  if (file.starts_with("RIFF", 4) && file.size() >= 12 && std::memcmp(file.data() + 8, "WEBP", 4) == 0)
    return webp_hazard(file);
  return "";
}

bool holds_legacy_xmp(const std::string& path) {
  const MappedFile file(path);
  bool found = false;
  for (const char* needle : {"rdf:about='uuid:", "rdf:about=\"uuid:"})
    found = found || (file.data() && ::memmem(file.data(), file.size(), needle, std::strlen(needle)) != nullptr);
  return found;
}

}  // namespace expnet

// Signatures and header sizes of the image formats we accept (docs/images.md
// lists them). Every reader here is bounded by `size`: these functions see
// untrusted bytes before anything else does (fuzzed: tests/fuzz/fuzz_image_decode.cpp).
#include "expnet/image/image_probe.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <string_view>

namespace expnet {
namespace {

using image_bytes::be16;
using image_bytes::be32;
using image_bytes::le16;
using image_bytes::le32;

// Header sizes are clamped here so that width * height never overflows.
constexpr int64_t kMaxSide = 0xFFFFFFFFll;

bool starts_with(const uint8_t* data, size_t size, std::string_view magic, size_t offset = 0) {
  return size >= offset + magic.size() && std::memcmp(data + offset, magic.data(), magic.size()) == 0;
}

bool space_at(const uint8_t* d, size_t n, size_t at) { return at < n && std::isspace(d[at]); }

// A decimal number at d[pos], clamped to kMaxSide; false when none is there.
bool read_number(const uint8_t* d, size_t n, size_t& pos, int64_t& value) {
  if (pos >= n || !std::isdigit(d[pos])) return false;
  value = 0;
  for (; pos < n && std::isdigit(d[pos]); ++pos) value = std::min(kMaxSide, value * 10 + (d[pos] - '0'));
  return true;
}

bool is_jpeg_sof(uint8_t marker) {
  // SOF0..SOF15 except DHT (C4), JPG (C8) and DAC (CC).
  return marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC;
}

bool probe_jpeg(const uint8_t* d, size_t n, int64_t& w, int64_t& h) {
  size_t pos = 2;
  while (pos + 4 <= n) {
    if (d[pos] != 0xFF) {  // garbage between segments: libjpeg skips it too (with a warning)
      ++pos;
      continue;
    }
    const uint8_t marker = d[pos + 1];
    if (marker == 0xFF) { ++pos; continue; }  // fill byte
    if (marker == 0xD8 || marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) { pos += 2; continue; }
    const size_t length = be16(d + pos + 2);
    if (is_jpeg_sof(marker)) {
      if (pos + 9 > n) return false;
      h = be16(d + pos + 5);
      w = be16(d + pos + 7);
      return true;
    }
    if (marker == 0xDA || marker == 0xD9 || length < 2) return false;
    pos += 2 + length;
  }
  return false;
}

bool probe_webp(const uint8_t* d, size_t n, int64_t& w, int64_t& h) {
  if (starts_with(d, n, "VP8X", 12) && n >= 30) {
    w = 1 + (int64_t(d[24]) | (int64_t(d[25]) << 8) | (int64_t(d[26]) << 16));
    h = 1 + (int64_t(d[27]) | (int64_t(d[28]) << 8) | (int64_t(d[29]) << 16));
    return true;
  }
  if (starts_with(d, n, "VP8L", 12) && n >= 25) {
    const uint32_t bits = le32(d + 21);
    w = 1 + (bits & 0x3FFF);
    h = 1 + ((bits >> 14) & 0x3FFF);
    return true;
  }
  if (starts_with(d, n, "VP8 ", 12) && n >= 30) {
    w = le16(d + 26) & 0x3FFF;
    h = le16(d + 28) & 0x3FFF;
    return true;
  }
  return false;
}

bool probe_tiff(const uint8_t* d, size_t n, int64_t& w, int64_t& h) {
  if (n < 8) return false;
  const bool little = d[0] == 'I';
  auto u16 = [&](size_t at) { return little ? le16(d + at) : be16(d + at); };
  auto u32 = [&](size_t at) { return little ? le32(d + at) : be32(d + at); };
  const size_t ifd = u32(4);
  if (ifd + 2 > n) return false;
  const size_t entries = u16(ifd);
  w = h = -1;
  for (size_t i = 0; i < entries; ++i) {
    const size_t at = ifd + 2 + 12 * i;
    if (at + 12 > n) return false;
    const uint16_t tag = u16(at), type = u16(at + 2);
    if (tag != 256 && tag != 257) continue;
    const int64_t value = type == 3 ? u16(at + 8) : (type == 4 ? u32(at + 8) : -1);
    // A tag given twice: libtiff takes the first (TIFFReadDirectoryFindEntry), so does the probe.
    int64_t& side = tag == 256 ? w : h;
    if (side < 0) side = value;
  }
  return w >= 0 && h >= 0;
}

// One number the way OpenCV 4.6's PxM reader reads it (ReadNumber in
// grfmt_pxm.cpp), so that both see the same size: whitespace and '#' comments
// (to '\n' or '\r') before it, and the byte that ends it is consumed, so a '#'
// right after a digit is not a comment ("30000#30000" is two numbers).
// Anything else before a number: false (OpenCV refuses it too).
bool read_pxm_number(const uint8_t* d, size_t n, size_t& pos, int64_t& value) {
  auto next = [&](int& code) {
    if (pos >= n) return false;
    code = d[pos++];
    return true;
  };
  int code = 0;
  if (!next(code)) return false;
  while (!std::isdigit(code)) {
    if (code == '#') {
      do {
        if (!next(code)) return false;
      } while (code != '\n' && code != '\r');
      if (!next(code)) return false;
    } else if (std::isspace(code)) {
      while (std::isspace(code))
        if (!next(code)) return false;
    } else {
      return false;
    }
  }
  value = 0;
  do {
    value = std::min(kMaxSide, value * 10 + (code - '0'));
  } while (next(code) && std::isdigit(code));
  return true;
}

bool probe_pnm(const uint8_t* d, size_t n, int64_t& w, int64_t& h) {
  size_t pos = 2;
  return read_pxm_number(d, n, pos, w) && read_pxm_number(d, n, pos, h);
}

// PAM: "P7\n" then "KEY value" lines up to ENDHDR. OpenCV's reader (grfmt_pam.cpp)
// has its own rules (16-character fields, a value cut there and the rest read as
// another field); rather than mirror them, every "WIDTH"/"HEIGHT" in the bytes
// counts and the largest wins: never smaller than what OpenCV allocates for (at
// worst a refusal too many).
bool probe_pam(const uint8_t* d, size_t n, int64_t& w, int64_t& h) {
  const std::string_view text(reinterpret_cast<const char*>(d), n);
  auto largest = [&](std::string_view key, int64_t& out) {
    out = -1;
    for (size_t at = text.find(key); at != std::string_view::npos; at = text.find(key, at + 1)) {
      size_t pos = at + key.size();
      while (pos < n && std::isspace(d[pos])) ++pos;
      if (pos < n && d[pos] == '+') ++pos;  // atoi() takes a sign
      int64_t value = 0;
      if (read_number(d, n, pos, value)) out = std::max(out, value);
    }
    return out >= 0;
  };
  return largest("WIDTH", w) && largest("HEIGHT", h);
}

// Radiance, read as OpenCV's RGBE_ReadHeader (rgbe.cpp) does: fgets() into 128
// bytes, so a "line" is at most 127 bytes; the header ends at the first line
// starting with '\n' or NUL (also the tail of a long line cut by fgets); the
// next line must be "-Y H +X W" (sscanf), the only orientation OpenCV reads.
bool probe_hdr(const uint8_t* d, size_t n, int64_t& w, int64_t& h) {
  size_t pos = 0, start = 0;
  auto next_line = [&] {
    if (pos >= n) return false;
    start = pos;
    const size_t limit = std::min(n, pos + 127);
    const void* newline = std::memchr(d + pos, '\n', limit - pos);
    pos = newline ? static_cast<size_t>(static_cast<const uint8_t*>(newline) - d) + 1 : limit;
    return true;
  };
  if (!next_line()) return false;
  while (d[start] != '\n' && d[start] != 0)
    if (!next_line()) return false;
  if (!next_line()) return false;
  const size_t end = pos;
  pos = start;
  // sscanf's "-Y %d +X %d": literals, whitespace where the format has a space, %d skips its own.
  auto literal = [&](const char* text) {
    for (; *text; ++text, ++pos)
      if (pos >= end || d[pos] != static_cast<uint8_t>(*text)) return false;
    return true;
  };
  auto number = [&](int64_t& value) {
    while (pos < end && std::isspace(d[pos])) ++pos;
    if (pos < end && d[pos] == '+') ++pos;
    return read_number(d, end, pos, value);
  };
  auto space = [&] {
    while (pos < end && std::isspace(d[pos])) ++pos;
  };
  if (!literal("-Y") || !number(h)) return false;
  space();
  return literal("+X") && number(w);
}

// JP2 boxes: length (1 = 64-bit length follows, 0 = to the end), type, content.
// The size is in jp2h/ihdr: HEIGHT, WIDTH (big-endian 32-bit).
bool probe_jp2_boxes(const uint8_t* d, size_t n, size_t pos, size_t end, int depth, int64_t& w, int64_t& h) {
  while (pos + 8 <= end) {
    uint64_t length = be32(d + pos);
    size_t header = 8;
    if (length == 1) {
      if (pos + 16 > end) return false;
      length = (uint64_t(be32(d + pos + 8)) << 32) | be32(d + pos + 12);
      header = 16;
    } else if (length == 0) {
      length = end - pos;
    }
    if (length < header) return false;
    const size_t content = pos + header;
    const size_t box_end = length > end - pos ? end : pos + static_cast<size_t>(length);
    if (starts_with(d, n, "ihdr", pos + 4)) {
      if (content + 8 > n) return false;
      h = be32(d + content);
      w = be32(d + content + 4);
      return true;
    }
    if (depth == 0 && starts_with(d, n, "jp2h", pos + 4)) return probe_jp2_boxes(d, n, content, box_end, 1, w, h);
    pos = box_end;
  }
  return false;
}

bool probe_jpeg2000(const uint8_t* d, size_t n, int64_t& w, int64_t& h) {
  if (d[0] == 0xFF) {  // raw codestream: SIZ right after SOC, image area minus its offset
    if (n < 24) return false;
    const uint32_t x = be32(d + 8), y = be32(d + 12), x0 = be32(d + 16), y0 = be32(d + 20);
    w = x > x0 ? x - x0 : 0;
    h = y > y0 ? y - y0 : 0;
    return true;
  }
  return probe_jp2_boxes(d, n, 0, n, 0, w, h);
}

}  // namespace

const char* image_format_name(ImageFormat format) {
  switch (format) {
    case ImageFormat::Png: return "PNG";
    case ImageFormat::Jpeg: return "JPEG";
    case ImageFormat::Bmp: return "BMP";
    case ImageFormat::Webp: return "WebP";
    case ImageFormat::Tiff: return "TIFF";
    case ImageFormat::Pnm: return "PNM";
    case ImageFormat::Pam: return "PAM";
    case ImageFormat::Jpeg2000: return "JPEG 2000";
    case ImageFormat::SunRaster: return "Sun raster";
    case ImageFormat::Hdr: return "Radiance HDR";
    default: return "unknown";
  }
}

ImageFormat sniff_image_format(const uint8_t* d, size_t n) {
  if (starts_with(d, n, "\x89PNG\r\n\x1a\n")) return ImageFormat::Png;
  if (starts_with(d, n, "\xFF\xD8\xFF")) return ImageFormat::Jpeg;
  if (starts_with(d, n, "BM")) return ImageFormat::Bmp;
  if (starts_with(d, n, "RIFF") && starts_with(d, n, "WEBP", 8)) return ImageFormat::Webp;
  if (starts_with(d, n, std::string_view("II*\0", 4)) || starts_with(d, n, std::string_view("MM\0*", 4)))
    return ImageFormat::Tiff;
  if (n >= 2 && d[0] == 'P' && d[1] >= '1' && d[1] <= '6') return ImageFormat::Pnm;
  if (starts_with(d, n, "P7") && space_at(d, n, 2)) return ImageFormat::Pam;
  if (starts_with(d, n, std::string_view("\0\0\0\x0cjP  \r\n\x87\n", 12)) || starts_with(d, n, "\xFF\x4F\xFF\x51"))
    return ImageFormat::Jpeg2000;
  if (starts_with(d, n, "\x59\xA6\x6A\x95")) return ImageFormat::SunRaster;
  if (starts_with(d, n, "#?RADIANCE\n") || starts_with(d, n, "#?RGBE\n")) return ImageFormat::Hdr;
  return ImageFormat::Unknown;
}

const char* refused_image_format(const uint8_t* d, size_t n) {
  if (starts_with(d, n, "GIF87a") || starts_with(d, n, "GIF89a")) return "GIF";
  if (starts_with(d, n, "ftyp", 4)) return "HEIF/AVIF";  // ISO media: HEIC/AVIF photos
  if ((starts_with(d, n, "PF") || starts_with(d, n, "Pf")) && space_at(d, n, 2)) return "PFM (floating-point)";
  if (starts_with(d, n, "\x76\x2F\x31\x01")) return "OpenEXR";
  if (starts_with(d, n, "NITF") || starts_with(d, n, "NSIF")) return "NITF";
  if (starts_with(d, n, std::string_view("II+\0", 4)) || starts_with(d, n, std::string_view("MM\0+", 4)))
    return "BigTIFF";
  if (starts_with(d, n, "8BPS")) return "Photoshop (PSD)";
  if (starts_with(d, n, std::string_view("\0\0\0\x0cJXL \r\n\x87\n", 12)) || starts_with(d, n, "\xFF\x0A"))
    return "JPEG XL";
  if (starts_with(d, n, "%PDF")) return "PDF";
  if (starts_with(d, n, "DICM", 128)) return "DICOM";
  if (starts_with(d, n, "SIMPLE  =")) return "FITS";
  return nullptr;
}

bool webp_is_animated(const uint8_t* d, size_t n) {
  return sniff_image_format(d, n) == ImageFormat::Webp && starts_with(d, n, "VP8X", 12) && n > 20 && (d[20] & 0x02);
}

bool probe_image_size(const uint8_t* d, size_t n, int64_t& width, int64_t& height) {
  switch (sniff_image_format(d, n)) {
    case ImageFormat::Png:
      if (n < 24 || !starts_with(d, n, "IHDR", 12)) return false;
      width = be32(d + 16);
      height = be32(d + 20);
      return true;
    case ImageFormat::Jpeg: return probe_jpeg(d, n, width, height);
    case ImageFormat::Bmp: {
      if (n < 26) return false;
      const uint32_t header = le32(d + 14);
      if (header == 12) {
        width = le16(d + 18);
        height = le16(d + 20);
      } else {
        // Signed 32-bit; negative height = top-down bitmap. Widened before negating (INT32_MIN).
        width = static_cast<int32_t>(le32(d + 18));
        height = static_cast<int32_t>(le32(d + 22));
        if (width < 0) width = -width;
        if (height < 0) height = -height;
      }
      return true;
    }
    case ImageFormat::Webp: return probe_webp(d, n, width, height);
    case ImageFormat::Tiff: return probe_tiff(d, n, width, height);
    case ImageFormat::Pnm: return probe_pnm(d, n, width, height);
    case ImageFormat::Pam: return probe_pam(d, n, width, height);
    case ImageFormat::Jpeg2000: return probe_jpeg2000(d, n, width, height);
    case ImageFormat::SunRaster:
      if (n < 32) return false;  // the 32-byte header: magic, width, height, depth, ...
      width = be32(d + 4);
      height = be32(d + 8);
      return true;
    case ImageFormat::Hdr: return probe_hdr(d, n, width, height);
    default: return false;
  }
}

}  // namespace expnet

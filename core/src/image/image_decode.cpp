// Robust image reading: every bad file becomes an ImageError with a reason code
// and a message a user can act on; nothing crashes, nothing is captioned half-grey.
//
// OpenCV does the decoding. What it does not do, and we do here:
// - refuse decompression bombs from the header before anything is allocated;
// - refuse truncated JPEGs (OpenCV 4.6 decodes them with a libjpeg warning on
//   stderr and grey rows; Pillow raises "image file is truncated");
// - tell apart missing, unreadable, empty, non-image, unsupported and damaged files;
// - convert every layout to 8-bit RGB the way PIL's convert('RGB') does.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "expnet/image/image_decode.h"

namespace expnet {

ImageError::ImageError(std::string path, std::string reason, const std::string& message)
    : std::runtime_error("cannot use image '" + path + "' (" + reason + "): " + message),
      path_(std::move(path)),
      reason_(std::move(reason)) {}

namespace {

enum class Format { Png, Jpeg, Gif, Bmp, Webp, Tiff, Pnm, Heif, Unknown };

const char* format_name(Format format) {
  switch (format) {
    case Format::Png: return "PNG";
    case Format::Jpeg: return "JPEG";
    case Format::Gif: return "GIF";
    case Format::Bmp: return "BMP";
    case Format::Webp: return "WebP";
    case Format::Tiff: return "TIFF";
    case Format::Pnm: return "PNM";
    case Format::Heif: return "HEIF/AVIF";
    default: return "unknown";
  }
}

bool starts_with(const uint8_t* data, size_t size, const char* magic, size_t offset = 0) {
  const size_t n = std::strlen(magic);
  return size >= offset + n && std::memcmp(data + offset, magic, n) == 0;
}

Format sniff_format(const uint8_t* d, size_t n) {
  if (starts_with(d, n, "\x89PNG\r\n\x1a\n")) return Format::Png;
  if (n >= 3 && d[0] == 0xFF && d[1] == 0xD8 && d[2] == 0xFF) return Format::Jpeg;
  if (starts_with(d, n, "GIF87a") || starts_with(d, n, "GIF89a")) return Format::Gif;
  if (starts_with(d, n, "BM")) return Format::Bmp;
  if (starts_with(d, n, "RIFF") && starts_with(d, n, "WEBP", 8)) return Format::Webp;
  if (n >= 4 && (std::memcmp(d, "II*\0", 4) == 0 || std::memcmp(d, "MM\0*", 4) == 0))
    return Format::Tiff;
  if (n >= 2 && d[0] == 'P' && d[1] >= '1' && d[1] <= '6') return Format::Pnm;
  if (starts_with(d, n, "ftyp", 4)) return Format::Heif;  // ISO media: HEIC/AVIF photos
  return Format::Unknown;
}

uint32_t be32(const uint8_t* p) { return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | p[3]; }
uint16_t be16(const uint8_t* p) { return uint16_t((p[0] << 8) | p[1]); }
uint32_t le32(const uint8_t* p) { return (uint32_t(p[3]) << 24) | (uint32_t(p[2]) << 16) | (uint32_t(p[1]) << 8) | p[0]; }
uint16_t le16(const uint8_t* p) { return uint16_t((p[1] << 8) | p[0]); }

bool is_jpeg_sof(uint8_t marker) {
  // SOF0..SOF15 except DHT (C4), JPG (C8) and DAC (CC).
  return marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC;
}

bool probe_jpeg(const uint8_t* d, size_t n, int64_t& w, int64_t& h) {
  size_t pos = 2;
  while (pos + 4 <= n) {
    if (d[pos] != 0xFF) return false;
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
    (tag == 256 ? w : h) = value;
  }
  return w >= 0 && h >= 0;
}

bool probe_pnm(const uint8_t* d, size_t n, int64_t& w, int64_t& h) {
  size_t pos = 2;
  int64_t values[2];
  for (int64_t& value : values) {
    for (;;) {  // whitespace and '#' comments
      if (pos >= n) return false;
      if (d[pos] == '#') {
        while (pos < n && d[pos] != '\n') ++pos;
      } else if (std::isspace(d[pos])) {
        ++pos;
      } else {
        break;
      }
    }
    if (!std::isdigit(d[pos])) return false;
    value = 0;
    while (pos < n && std::isdigit(d[pos]) && value < (int64_t(1) << 40)) value = value * 10 + (d[pos++] - '0');
  }
  w = values[0];
  h = values[1];
  return true;
}

// Where a JPEG's structure ends: true when the end-of-image marker is reached.
// Walks the marker segments and skips entropy-coded data (where 0xFF is
// followed by 0x00 stuffing or a restart marker), so an EOI-like byte pair
// inside a thumbnail or a segment is not mistaken for the end.
bool jpeg_is_complete(const uint8_t* d, size_t n) {
  size_t pos = 2;
  while (pos < n) {
    if (d[pos] != 0xFF) {  // garbage between segments: libjpeg skips it with a warning
      ++pos;
      continue;
    }
    while (pos < n && d[pos] == 0xFF) ++pos;
    if (pos >= n) return false;
    const uint8_t marker = d[pos++];
    if (marker == 0xD9) return true;
    if (marker == 0x00 || marker == 0x01 || (marker >= 0xD0 && marker <= 0xD8)) continue;
    if (pos + 2 > n) return false;
    const size_t length = be16(d + pos);
    if (pos + length > n) return false;
    pos += length;
    if (marker != 0xDA) continue;
    // Entropy-coded data up to the next real marker.
    for (;;) {
      const void* ff = pos < n ? std::memchr(d + pos, 0xFF, n - pos) : nullptr;
      if (!ff) return false;
      pos = static_cast<size_t>(static_cast<const uint8_t*>(ff) - d);
      if (pos + 1 >= n) return false;
      const uint8_t next = d[pos + 1];
      if (next != 0x00 && next != 0xFF && !(next >= 0xD0 && next <= 0xD7)) break;
      pos += 1;
    }
  }
  return false;
}

enum class PngEnd { Complete, MissingIend, Truncated };

const uint8_t kPngIend[12] = {0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xAE, 0x42, 0x60, 0x82};

// Walks the chunks. Pillow accepts a PNG whose image data is whole but whose
// final IEND chunk is missing or cut; libpng (via OpenCV) does not. For
// MissingIend, `data_end` is where the chunks stop: the caller appends a whole
// IEND there and lets libpng judge whether the image data is complete.
PngEnd png_structure(const uint8_t* d, size_t n, size_t& data_end, std::string& detail) {
  size_t pos = 8;
  bool saw_idat = false;
  while (pos < n) {
    const size_t left = n - pos;
    if (saw_idat && left < sizeof kPngIend && std::memcmp(d + pos, kPngIend, left) == 0) break;  // cut IEND
    if (left < 8) {
      detail = "the PNG data ends inside a chunk header";
      return PngEnd::Truncated;
    }
    const uint64_t length = be32(d + pos);
    const std::string type(reinterpret_cast<const char*>(d + pos + 4), 4);
    if (12 + length > left) {
      detail = "the PNG data ends inside its " + type + " chunk";
      return PngEnd::Truncated;
    }
    if (type == "IEND") return PngEnd::Complete;
    saw_idat = saw_idat || type == "IDAT";
    pos += 12 + length;
  }
  if (!saw_idat) {
    detail = "the PNG data ends before any image data";
    return PngEnd::Truncated;
  }
  data_end = pos;
  return PngEnd::MissingIend;
}

std::string strip_newlines(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

// 16-bit samples keep their high byte, as Pillow's "RGB;16B" unpacker does.
cv::Mat high_byte(const cv::Mat& m16) {
  cv::Mat out(m16.size(), CV_MAKETYPE(CV_8U, m16.channels()));
  for (int y = 0; y < m16.rows; ++y) {
    const uint16_t* src = m16.ptr<uint16_t>(y);
    uint8_t* dst = out.ptr<uint8_t>(y);
    for (int i = 0, n = m16.cols * m16.channels(); i < n; ++i) dst[i] = uint8_t(src[i] >> 8);
  }
  return out;
}

// Decoded (BGR order, 1 to 4 channels, 8 bits) to RGB, the way PIL's
// convert('RGB') does it: grey replicated, alpha dropped (not composited).
cv::Mat bgr_to_rgb8(const cv::Mat& m) {
  cv::Mat out;
  switch (m.channels()) {
    case 1: cv::cvtColor(m, out, cv::COLOR_GRAY2RGB); break;
    case 2: {  // grey + alpha
      cv::Mat grey;
      cv::extractChannel(m, grey, 0);
      cv::cvtColor(grey, out, cv::COLOR_GRAY2RGB);
      break;
    }
    case 3: cv::cvtColor(m, out, cv::COLOR_BGR2RGB); break;
    case 4: cv::cvtColor(m, out, cv::COLOR_BGRA2RGB); break;
    default: break;
  }
  return out;
}

cv::Mat imdecode_or_empty(const std::vector<uint8_t>& bytes, int flags, std::string& error) {
  try {
    // imdecode takes a Mat header over the bytes: no copy.
    const cv::Mat buffer(1, static_cast<int>(bytes.size()), CV_8UC1, const_cast<uint8_t*>(bytes.data()));
    return cv::imdecode(buffer, flags);
  } catch (const cv::Exception& e) {
    error = strip_newlines(e.what());
    return {};
  }
}

std::string hex_prefix(const uint8_t* d, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < std::min<size_t>(n, 8); ++i) {
    if (i) out += ' ';
    out += digits[d[i] >> 4];
    out += digits[d[i] & 15];
  }
  return out;
}

constexpr const char* kSupported = "JPEG, PNG, BMP, TIFF, WebP, PNM/PPM/PGM";

}  // namespace

bool probe_image_size(const uint8_t* d, size_t n, int64_t& width, int64_t& height) {
  switch (sniff_format(d, n)) {
    case Format::Png:
      if (n < 24 || !starts_with(d, n, "IHDR", 12)) return false;
      width = be32(d + 16);
      height = be32(d + 20);
      return true;
    case Format::Jpeg: return probe_jpeg(d, n, width, height);
    case Format::Gif:
      if (n < 10) return false;
      width = le16(d + 6);
      height = le16(d + 8);
      return true;
    case Format::Bmp: {
      if (n < 26) return false;
      const uint32_t header = le32(d + 14);
      if (header == 12) {
        width = le16(d + 18);
        height = le16(d + 20);
      } else {
        width = static_cast<int32_t>(le32(d + 18));
        height = static_cast<int32_t>(le32(d + 22));
        if (width < 0) width = -width;
        if (height < 0) height = -height;  // top-down bitmap
      }
      return true;
    }
    case Format::Webp: return probe_webp(d, n, width, height);
    case Format::Tiff: return probe_tiff(d, n, width, height);
    case Format::Pnm: return probe_pnm(d, n, width, height);
    default: return false;
  }
}

cv::Mat decode_image_rgb(const std::vector<uint8_t>& bytes, const std::string& name, const ImageLoadOptions& options) {
  const uint8_t* d = bytes.data();
  const size_t n = bytes.size();
  if (n == 0)
    throw ImageError(name, "empty", "the file is empty (0 bytes); the copy or download did not finish: get the image again");
  if (n > static_cast<size_t>(std::numeric_limits<int>::max()))
    throw ImageError(name, "too_large", "the file is over 2 GiB, more than OpenCV can decode: shrink the image");

  const Format format = sniff_format(d, n);
  if (format == Format::Gif || format == Format::Heif)
    throw ImageError(name, "unsupported",
                     std::string("this is a ") + format_name(format) +
                         " image, which OpenCV 4.6 cannot decode: convert it to JPEG or PNG (supported: " + kSupported + ")");

  auto check_pixels = [&](int64_t w, int64_t h) {
    if (options.max_pixels > 0 && w * h > options.max_pixels)
      throw ImageError(name, "too_large",
                       std::to_string(w) + "x" + std::to_string(h) + " = " + std::to_string(w * h) +
                           " pixels, more than the limit of " + std::to_string(options.max_pixels) +
                           " (decompression-bomb guard): shrink the image, or raise the limit (--max-pixels) if you trust the file");
  };
  int64_t width = 0, height = 0;
  if (probe_image_size(d, n, width, height)) {
    if (width <= 0 || height <= 0)
      throw ImageError(name, "corrupt", std::string("the ") + format_name(format) + " header gives an image size of " +
                                            std::to_string(width) + "x" + std::to_string(height) +
                                            ": the file is damaged, re-export or replace it");
    check_pixels(width, height);
  }

  const std::string truncated_advice =
      ": the file was cut short (interrupted copy or download); get the complete file again";
  const std::vector<uint8_t>* to_decode = &bytes;
  std::vector<uint8_t> with_iend;
  if (format == Format::Jpeg && !jpeg_is_complete(d, n))
    throw ImageError(name, "truncated", "the JPEG data ends before its end-of-image marker" + truncated_advice);
  if (format == Format::Png) {
    std::string detail;
    size_t data_end = n;
    switch (png_structure(d, n, data_end, detail)) {
      case PngEnd::Truncated: throw ImageError(name, "truncated", detail + truncated_advice);
      case PngEnd::MissingIend: {
        with_iend.reserve(data_end + sizeof kPngIend);
        with_iend.assign(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(data_end));
        with_iend.insert(with_iend.end(), kPngIend, kPngIend + sizeof kPngIend);
        to_decode = &with_iend;
        break;
      }
      case PngEnd::Complete: break;
    }
  }

  int flags = cv::IMREAD_ANYCOLOR | cv::IMREAD_ANYDEPTH;
  if (!options.apply_exif) flags |= cv::IMREAD_IGNORE_ORIENTATION;
  std::string cv_error;
  cv::Mat decoded = imdecode_or_empty(*to_decode, flags, cv_error);
  if (!decoded.empty() && decoded.depth() != CV_8U && decoded.depth() != CV_16U)
    decoded = imdecode_or_empty(*to_decode, flags & ~cv::IMREAD_ANYDEPTH, cv_error);  // float/HDR: OpenCV's 8-bit mapping
  if (decoded.empty()) {
    if (!with_iend.empty())
      throw ImageError(name, "truncated", "the PNG data ends before the image is complete" + truncated_advice);
    if (format == Format::Unknown)
      throw ImageError(name, "not_an_image",
                       "the content is not an image OpenCV can decode (starts with " + hex_prefix(d, n) +
                           "): check that this is the file you meant; supported formats: " + kSupported);
    throw ImageError(name, "corrupt",
                     std::string("the ") + format_name(format) + " data could not be decoded" +
                         (cv_error.empty() ? "" : " (" + cv_error + ")") + ": the file is damaged, re-export or replace it");
  }
  check_pixels(decoded.cols, decoded.rows);  // formats whose header we do not read
  if (decoded.depth() == CV_16U) decoded = high_byte(decoded);
  return bgr_to_rgb8(decoded);
}

namespace {

std::vector<uint8_t> read_image_file(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    const int error = errno;
    if (error == ENOENT || error == ENOTDIR)
      throw ImageError(path, "not_found", "no such file: check the path (relative paths start from the current folder)");
    throw ImageError(path, "unreadable", std::string(std::strerror(error)) + ": check the path and its permissions");
  }
  if (S_ISDIR(info.st_mode))
    throw ImageError(path, "not_a_file", "this is a folder, not an image file: pass the image files inside it");
  if (!S_ISREG(info.st_mode))
    throw ImageError(path, "not_a_file", "this is not a regular file (device, pipe or socket): pass an image file");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    throw ImageError(path, error == ENOENT ? "not_found" : "unreadable",
                     std::string(std::strerror(error)) + ": check the file's permissions (it must be readable by you)");
  }
  std::vector<uint8_t> bytes(static_cast<size_t>(info.st_size));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t got = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      const int error = errno;
      ::close(fd);
      throw ImageError(path, "unreadable", std::string("read failed: ") + std::strerror(error) +
                                               ": the disk or network share may be failing; copy the file elsewhere and retry");
    }
    if (got == 0) break;  // the file shrank while we read it
    done += static_cast<size_t>(got);
  }
  ::close(fd);
  bytes.resize(done);
  return bytes;
}

}  // namespace

cv::Mat load_image_rgb(const std::string& path, const ImageLoadOptions& options) {
  return decode_image_rgb(read_image_file(path), path, options);
}

}  // namespace expnet

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
#include <opencv2/core/utils/logger.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
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

using image_bytes::be16;
using image_bytes::be32;

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

// OpenCV decodes HDR and Sun raster from memory only through a temporary
// file (/tmp/__opencv_temp.*), left behind when the process is killed
// mid-decode: these two go through a file of ours that has no name.
bool decoded_from_file_only(ImageFormat format) { return format == ImageFormat::Hdr || format == ImageFormat::SunRaster; }

// imread of exactly `bytes` (the ones the size guard probed, never the path
// again: a file swapped in meanwhile is not read) through a temporary file
// unlinked at once, read by its descriptor: nothing is left after a kill.
cv::Mat imread_bytes(const std::vector<uint8_t>& bytes, int flags) {
  std::string name = (std::filesystem::temp_directory_path() / "expnet-image-XXXXXX").string();
  const int fd = ::mkstemp(name.data());
  if (fd < 0) throw std::runtime_error(std::string("cannot create a temporary file to decode it (") + std::strerror(errno) + ")");
  ::unlink(name.c_str());
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {  // 0 for a non-empty write would otherwise loop for ever
      const int error = errno;
      ::close(fd);
      throw std::runtime_error(std::string("cannot write a temporary file to decode it (") + std::strerror(error) + ")");
    }
    if (n > 0) done += static_cast<size_t>(n);
  }
  cv::Mat m;
  try {
    m = cv::imread("/proc/self/fd/" + std::to_string(fd), flags);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  return m;
}

// through_file: decode `bytes` through imread_bytes, else in memory. Out of
// memory is an error of this file, not of the batch it is in.
cv::Mat decode_or_empty(const std::vector<uint8_t>& bytes, bool through_file, int flags, std::string& error) {
  // OpenCV's own warnings ("imdecode_(''): can't read header ...") would reach
  // stderr before our error, which already says what went wrong and what to do.
  static const bool quiet = [] {
    if (cv::utils::logging::getLogLevel() > cv::utils::logging::LOG_LEVEL_ERROR)
      cv::utils::logging::setLogLevel(cv::utils::logging::LOG_LEVEL_ERROR);
    return true;
  }();
  (void)quiet;
  try {
    if (through_file) return imread_bytes(bytes, flags);
    // imdecode takes a Mat header over the bytes: no copy.
    const cv::Mat buffer(1, static_cast<int>(bytes.size()), CV_8UC1, const_cast<uint8_t*>(bytes.data()));
    return cv::imdecode(buffer, flags);
  } catch (const cv::Exception& e) {
    error = strip_newlines(e.what());
  } catch (const std::bad_alloc&) {
    error = "out of memory";
  } catch (const std::runtime_error& e) {
    error = e.what();
  }
  return {};
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

constexpr const char* kSupported = "JPEG, PNG, BMP, TIFF, WebP, PNM/PBM/PGM/PPM/PAM, JPEG 2000, Sun raster, Radiance HDR";
constexpr const char* kConvert = "convert it to PNG or JPEG (supported: ";
// OpenCV's own limits (CV_IO_MAX_IMAGE_WIDTH/HEIGHT/PIXELS): beyond them it refuses anyway.
constexpr int64_t kOpenCvMaxSide = int64_t(1) << 20;
constexpr int64_t kOpenCvMaxPixels = int64_t(1) << 30;
// Enough of a file to read the header of every supported format (a JPEG's EXIF
// before its frame header is at most 64 KiB): sizes are checked before the rest is read.
constexpr size_t kHeaderBytes = size_t(1) << 20;

// The file-size cap in effect: the option, and never over OpenCV's 2 GiB.
uint64_t file_limit(const ImageLoadOptions& options) {
  const uint64_t opencv = uint64_t(std::numeric_limits<int>::max());
  return options.max_file_bytes > 0 ? std::min(uint64_t(options.max_file_bytes), opencv) : opencv;
}

void check_pixels(const std::string& name, int64_t w, int64_t h, const ImageLoadOptions& options) {
  // Probed sides are below 2^32, so the product cannot overflow.
  const uint64_t pixels = uint64_t(w) * uint64_t(h);
  const std::string size = std::to_string(w) + "x" + std::to_string(h);
  if (options.max_pixels > 0 && pixels > uint64_t(options.max_pixels))
    throw ImageError(name, "too_large",
                     size + " = " + std::to_string(pixels) + " pixels, more than the limit of " +
                         std::to_string(options.max_pixels) +
                         " (decompression-bomb guard): shrink the image, or raise the limit (--max-pixels) if you trust the file");
  if (w > kOpenCvMaxSide || h > kOpenCvMaxSide || pixels > uint64_t(kOpenCvMaxPixels))
    throw ImageError(name, "too_large",
                     size + " is beyond what OpenCV decodes (sides up to 1048576, up to 2^30 pixels): shrink the image");
}

struct Header {
  ImageFormat format = ImageFormat::Unknown;
  bool sized = false;  // the declared size was read (and is within the limits)
};

// The signature and the declared size, before anything is decoded. `whole`:
// `d` is the whole file, so a header we cannot read is an error.
Header check_header(const uint8_t* d, size_t n, const std::string& name, const ImageLoadOptions& options, bool whole) {
  if (const char* refused = refused_image_format(d, n))
    throw ImageError(name, "unsupported",
                     std::string("this is a ") + refused + " file, a format we do not read: " + kConvert + kSupported + ")");
  Header header;
  header.format = sniff_image_format(d, n);
  const char* format = image_format_name(header.format);
  if (header.format == ImageFormat::Unknown)
    throw ImageError(name, "not_an_image",
                     "the content is not an image in a supported format (starts with " + hex_prefix(d, n) +
                         "): check that this is the file you meant; supported formats: " + kSupported);
  if (webp_is_animated(d, n))
    throw ImageError(name, "unsupported",
                     "this is an animated WebP, which OpenCV cannot decode: save the frame you want as PNG or JPEG "
                     "(e.g. webpmux -get frame 1 FILE -o frame.webp, or any image editor)");
  int64_t width = 0, height = 0;
  header.sized = probe_image_size(d, n, width, height);
  if (header.sized) {
    if (width <= 0 || height <= 0)
      throw ImageError(name, "corrupt", std::string("the ") + format + " header gives an image size of " +
                                            std::to_string(width) + "x" + std::to_string(height) +
                                            ": the file is damaged, re-export or replace it");
    check_pixels(name, width, height, options);
  } else if (whole && header.format != ImageFormat::Jpeg && header.format != ImageFormat::Png) {
    // (JPEG and PNG first get the more precise "truncated" of their structure checks.)
    throw ImageError(name, "corrupt", std::string("the ") + format +
                                          " header is damaged or cut short (its image size cannot be read): "
                                          "re-export or replace the file");
  }
  return header;
}

cv::Mat decode_checked(const std::vector<uint8_t>& bytes, const std::string& name, const char* file,
                       const ImageLoadOptions& options) {
  const uint8_t* d = bytes.data();
  const size_t n = bytes.size();
  if (n == 0)
    throw ImageError(name, "empty", "the file is empty (0 bytes); the copy or download did not finish: get the image again");
  if (n > file_limit(options))
    throw ImageError(name, "too_large", std::to_string(n) + " bytes, more than the limit of " +
                                            std::to_string(file_limit(options)) +
                                            " bytes for an image file: shrink or re-compress the image");
  const Header header = check_header(d, n, name, options, true);
  const ImageFormat format = header.format;
  const char* format_name = image_format_name(format);

  const std::string truncated_advice =
      ": the file was cut short (interrupted copy or download); get the complete file again";
  const std::vector<uint8_t>* to_decode = &bytes;
  std::vector<uint8_t> with_iend;
  if (format == ImageFormat::Jpeg && !jpeg_is_complete(d, n))
    throw ImageError(name, "truncated", "the JPEG data ends before its end-of-image marker" + truncated_advice);
  if (format == ImageFormat::Png) {
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
  if (!header.sized)
    throw ImageError(name, "corrupt", std::string("the ") + format_name +
                                          " header is damaged (its image size cannot be read): re-export or replace the file");
  if (decoded_from_file_only(format) && !file)
    throw ImageError(name, "unsupported",
                     std::string("a ") + format_name + " image can only be read from a file, not from memory: " + kConvert +
                         kSupported + ")");

  int flags = cv::IMREAD_ANYCOLOR | cv::IMREAD_ANYDEPTH;
  if (format == ImageFormat::Hdr) flags &= ~cv::IMREAD_ANYDEPTH;  // straight to OpenCV's 8-bit mapping
  if (!options.apply_exif) flags |= cv::IMREAD_IGNORE_ORIENTATION;
  const bool through_file = decoded_from_file_only(format);
  std::string cv_error;
  cv::Mat decoded = decode_or_empty(*to_decode, through_file, flags, cv_error);
  if (!decoded.empty() && decoded.depth() != CV_8U && decoded.depth() != CV_16U)
    decoded = decode_or_empty(*to_decode, through_file, flags & ~cv::IMREAD_ANYDEPTH, cv_error);  // float: OpenCV's 8-bit mapping
  if (decoded.empty()) {
    if (!with_iend.empty())
      throw ImageError(name, "truncated", "the PNG data ends before the image is complete" + truncated_advice);
    if (cv_error == "out of memory")
      throw ImageError(name, "too_large", "not enough memory to decode this image: shrink it, or free memory and retry");
    throw ImageError(name, "corrupt",
                     std::string("the ") + format_name + " data could not be decoded" +
                         (cv_error.empty() ? "" : " (" + cv_error + ")") + ": the file is damaged, re-export or replace it");
  }
  check_pixels(name, decoded.cols, decoded.rows, options);  // the decoder's word, if the header lied
  if (decoded.depth() == CV_16U) decoded = high_byte(decoded);
  return bgr_to_rgb8(decoded);
}

[[noreturn]] void throw_read_error(const std::string& path, int error) {
  throw ImageError(path, "unreadable", std::string("read failed: ") + std::strerror(error) +
                                           ": the disk or network share may be failing; copy the file elsewhere and retry");
}

// Reads up to bytes.size() bytes at `done`; returns how many were read in all.
size_t read_into(int fd, std::vector<uint8_t>& bytes, size_t done, const std::string& path) {
  while (done < bytes.size()) {
    const ssize_t got = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw_read_error(path, errno);
    if (got == 0) break;  // the file shrank while we read it
    done += static_cast<size_t>(got);
  }
  return done;
}

// The file's bytes, refused by its size (stat) and by its header (the first
// MiB) before the rest is read: a sparse 64 GB file or a 3 GB one costs nothing.
std::vector<uint8_t> read_image_file(const std::string& path, const ImageLoadOptions& options) {
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
  const uint64_t size = static_cast<uint64_t>(info.st_size);
  if (size > file_limit(options))
    throw ImageError(path, "too_large",
                     "the file is " + std::to_string(size) + " bytes, more than the limit of " +
                         std::to_string(file_limit(options)) +
                         " bytes for an image file (checked before reading it): shrink or re-compress the image, or "
                         "check that this is the file you meant");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    throw ImageError(path, error == ENOENT ? "not_found" : "unreadable",
                     std::string(std::strerror(error)) + ": check the file's permissions (it must be readable by you)");
  }
  std::vector<uint8_t> bytes;
  try {
    bytes.resize(std::min<size_t>(size, kHeaderBytes));
    size_t done = read_into(fd, bytes, 0, path);
    if (done == bytes.size() && done < size) {
      check_header(bytes.data(), done, path, options, false);
      bytes.resize(size);
      done = read_into(fd, bytes, done, path);
    }
    bytes.resize(done);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  return bytes;
}

}  // namespace

cv::Mat decode_image_rgb(const std::vector<uint8_t>& bytes, const std::string& name, const ImageLoadOptions& options) {
  return decode_checked(bytes, name, nullptr, options);
}

cv::Mat load_image_rgb(const std::string& path, const ImageLoadOptions& options) {
  try {
    return decode_checked(read_image_file(path, options), path, path.c_str(), options);
  } catch (const std::bad_alloc&) {
    throw ImageError(path, "too_large", "not enough memory to read and decode this image: shrink it, or free memory and retry");
  }
}

}  // namespace expnet

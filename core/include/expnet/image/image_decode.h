// Reading images robustly into 8-bit RGB, and Pillow's BILINEAR resize bit-exactly.
// No LibTorch here: the data loader, the studio and the CLI all use this.
#pragma once

#include <opencv2/core/mat.hpp>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "expnet/image/image_probe.h"

namespace expnet {

struct ImageLoadOptions {
  // Rotate/flip by the EXIF orientation tag (what users expect). The authors'
  // PIL code ignores it: false gives their pixels.
  bool apply_exif = true;
  // Decompression-bomb guard: images with more pixels are refused before
  // decoding where the header tells the size. Default = Pillow's
  // DecompressionBombError limit (2 x Image.MAX_IMAGE_PIXELS = 2 x 89,478,485).
  // <= 0 disables the check (OpenCV's own 2^30 pixel limit still applies).
  int64_t max_pixels = 178956970;
  // Files larger than this are refused from their size alone, before any byte
  // is read (a sparse or runaway file). 1 GiB holds an uncompressed 16-bit RGB
  // image at the default pixel limit. <= 0: only OpenCV's 2 GiB limit applies.
  int64_t max_file_bytes = int64_t(1) << 30;
};

// A file that cannot be turned into an image. reason() is a short stable code:
//   not_found, not_a_file, unreadable, empty, not_an_image, unsupported,
//   truncated, too_large, corrupt
// what() is the user-facing message: the file, what is wrong, what to do.
class ImageError : public std::runtime_error {
 public:
  ImageError(std::string path, std::string reason, const std::string& message);
  const std::string& path() const { return path_; }
  const std::string& reason() const { return reason_; }

 private:
  std::string path_;
  std::string reason_;
};

// Reads and decodes a file into CV_8UC3, RGB order. Grey is replicated, alpha
// dropped (like PIL's convert('RGB')), palettes expanded, 16-bit reduced to the
// high byte (like Pillow for 16-bit RGB), CMYK JPEG converted. Throws ImageError.
cv::Mat load_image_rgb(const std::string& path, const ImageLoadOptions& options = {});

// Same from bytes in memory; `name` only labels errors. Radiance HDR and Sun
// raster are refused here (OpenCV reads them from memory only through a
// temporary file): load_image_rgb reads them from their file.
cv::Mat decode_image_rgb(const std::vector<uint8_t>& bytes, const std::string& name,
                         const ImageLoadOptions& options = {});

}  // namespace expnet

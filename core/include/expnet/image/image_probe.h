// What an image file is, from its first bytes: the format (by signature, never
// by file name) and the width and height its header declares. Used to refuse
// unsupported formats and decompression bombs before OpenCV allocates anything.
// No LibTorch, no OpenCV.
#pragma once

#include <cstddef>
#include <cstdint>

namespace expnet {

// Fixed-size integers in file headers (the caller checks the bounds).
namespace image_bytes {
inline uint32_t be32(const uint8_t* p) { return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | p[3]; }
inline uint16_t be16(const uint8_t* p) { return uint16_t((p[0] << 8) | p[1]); }
inline uint32_t le32(const uint8_t* p) { return (uint32_t(p[3]) << 24) | (uint32_t(p[2]) << 16) | (uint32_t(p[1]) << 8) | p[0]; }
inline uint16_t le16(const uint8_t* p) { return uint16_t((p[1] << 8) | p[0]); }
}  // namespace image_bytes

// The formats we hand to OpenCV. Everything else is refused by signature.
enum class ImageFormat { Png, Jpeg, Bmp, Webp, Tiff, Pnm, Pam, Jpeg2000, SunRaster, Hdr, Unknown };

const char* image_format_name(ImageFormat format);

// The supported format the bytes start with, or Unknown.
ImageFormat sniff_image_format(const uint8_t* data, size_t size);

// The name of a known image format we refuse (GIF, HEIF/AVIF, PFM, OpenEXR,
// NITF, BigTIFF, ...), or nullptr when the signature is none of them.
const char* refused_image_format(const uint8_t* data, size_t size);

// True for a WebP with the animation flag (OpenCV 4.6 decodes only still WebP).
bool webp_is_animated(const uint8_t* data, size_t size);

// Width and height from the header of every supported format, without
// decoding; each at most 2^32 - 1, so width * height fits in uint64_t.
// Returns false when the format is not supported or the header is cut short
// or unreadable. Sizes are before EXIF rotation.
bool probe_image_size(const uint8_t* data, size_t size, int64_t& width, int64_t& height);

}  // namespace expnet

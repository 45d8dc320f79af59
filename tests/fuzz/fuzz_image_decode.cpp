// libFuzzer harness of the image decoder front-end (expnet/image/image_decode.h,
// image_probe.h) over OpenCV. Contract: 8-bit RGB or an ImageError. The pixel
// budget is 4 Mpx (not the 179 Mpx default) so that an image the budget allows
// fits libFuzzer's memory limit; anything that gets past the budget is a finding,
// and so is a decoded size other than the one the header declared.
// Radiance HDR and Sun raster are decoded only from a file, so those go through one.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <opencv2/core.hpp>

#include "expnet/image/image_decode.h"
#include "expnet/image/image_probe.h"
#include "fuzz_scratch.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  int64_t width = 0, height = 0;
  const bool probed = expnet::probe_image_size(data, size, width, height);
  (void)expnet::refused_image_format(data, size);
  const expnet::ImageFormat format = expnet::sniff_image_format(data, size);
  expnet::ImageLoadOptions options;
  options.max_pixels = int64_t(1) << 22;
  options.apply_exif = size % 2 == 0;
  try {
    cv::Mat rgb;
    if (format == expnet::ImageFormat::Hdr || format == expnet::ImageFormat::SunRaster)
      rgb = expnet::load_image_rgb(expnet_fuzz::scratch_file("image", data, size), options);
    else
      rgb = expnet::decode_image_rgb(std::vector<uint8_t>(data, data + size), "fuzz.img", options);
    if (rgb.type() != CV_8UC3 || rgb.empty() || int64_t(rgb.cols) * rgb.rows > options.max_pixels) std::abort();
    // The bomb guard trusts the header: the decoder must agree with it (EXIF may swap the sides).
    const bool same = (width == rgb.cols && height == rgb.rows) || (options.apply_exif && width == rgb.rows && height == rgb.cols);
    if (probed && !same) {
      std::fprintf(stderr, "the header says %lldx%lld, OpenCV decoded %dx%d\n", static_cast<long long>(width),
                   static_cast<long long>(height), rgb.cols, rgb.rows);
      std::abort();
    }
  } catch (const expnet::ImageError&) {
  }
  return 0;
}

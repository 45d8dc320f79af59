#include "expnet/image/image_inputs.h"

#include <algorithm>
#include <filesystem>

namespace expnet {
namespace fs = std::filesystem;

const std::vector<std::string>& image_extensions() {
  static const std::vector<std::string> extensions = {".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif",
                                                      ".tiff", ".pgm", ".ppm", ".pbm", ".pnm", ".jpe"};
  return extensions;
}

namespace {

bool has_image_extension(const fs::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const auto& known = image_extensions();
  return std::find(known.begin(), known.end(), ext) != known.end();
}

void expand_folder(const std::string& given, std::vector<ImageInput>& out) {
  std::vector<std::string> inside;
  std::error_code error;
  fs::recursive_directory_iterator it(given, fs::directory_options::skip_permission_denied, error), end;
  for (; !error && it != end; it.increment(error)) {
    if (it->is_regular_file(error) && has_image_extension(it->path()))
      inside.push_back(fs::relative(it->path(), given, error).generic_string());
  }
  if (error) {
    out.push_back({given, given, "cannot read folder: " + error.message()});
    return;
  }
  if (inside.empty()) {
    out.push_back({given, given, "folder holds no images (looked for .jpg .jpeg .png .bmp .webp .tif ...)"});
    return;
  }
  std::sort(inside.begin(), inside.end());
  std::string prefix = given;
  while (prefix.size() > 1 && prefix.back() == '/') prefix.pop_back();
  for (const auto& relative : inside) {
    const std::string display = prefix + "/" + relative;
    out.push_back({display, display, ""});
  }
}

}  // namespace

std::vector<ImageInput> expand_image_inputs(const std::vector<std::string>& arguments) {
  std::vector<ImageInput> out;
  for (const auto& given : arguments) {
    std::error_code error;
    const auto status = fs::status(given, error);
    if (error && error != std::errc::no_such_file_or_directory) {
      out.push_back({given, given, "cannot use it: " + error.message()});  // a symlink loop, no permission ...
    } else if (error || !fs::exists(status)) {
      out.push_back({given, given, "no such file or folder"});
    } else if (fs::is_directory(status)) {
      expand_folder(given, out);
    } else {
      out.push_back({given, given, ""});
    }
  }
  return out;
}

}  // namespace expnet

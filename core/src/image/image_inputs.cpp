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
  std::vector<std::string> inside, failed, failures;  // failed: entries whose type could not be read
  std::error_code error;
  fs::recursive_directory_iterator it(given, fs::directory_options::skip_permission_denied, error), end;
  for (; !error && it != end; it.increment(error)) {
    if (!has_image_extension(it->path())) continue;
    // One entry that cannot be inspected (a dangling link, a vanished file) is
    // that entry's error, not the end of the folder.
    std::error_code entry_error;
    const bool regular = it->is_regular_file(entry_error);
    // Lexically: the entry's own name, never where a link in the folder points (fs::relative resolves links).
    std::string relative = it->path().lexically_relative(given).generic_string();
    if (relative.empty()) relative = it->path().filename().generic_string();
    if (entry_error) {
      failed.push_back(relative);
      failures.push_back("cannot use it: " + entry_error.message());
    } else if (regular) {
      inside.push_back(relative);
    }
  }
  if (error && inside.empty() && failed.empty()) {
    out.push_back({given, given, "cannot read folder: " + error.message()});
    return;
  }
  std::string prefix = given;
  while (prefix.size() > 1 && prefix.back() == '/') prefix.pop_back();
  for (size_t i = 0; i < failed.size(); ++i) out.push_back({prefix + "/" + failed[i], prefix + "/" + failed[i], failures[i]});
  if (error) out.push_back({given, given, "cannot read all of the folder: " + error.message()});
  if (inside.empty() && failed.empty()) {
    out.push_back({given, given, "folder holds no images (looked for .jpg .jpeg .png .bmp .webp .tif ...)"});
    return;
  }
  std::sort(inside.begin(), inside.end());
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

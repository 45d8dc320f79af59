// Turning what a user names (files, folders) into the list of images to
// caption, in a stable order. Used by `expnet caption`, `expnet explain` and the
// studio's drop handler.
#pragma once

#include <string>
#include <vector>

namespace expnet {

struct ImageInput {
  std::string display;  // as the user named it: the path given, or folder as given + "/" + path inside
  std::string path;     // what to open
  std::string error;    // non-empty when the input itself is unusable (missing path, empty folder)
};

// Extensions (lower case, with dot) taken from folders; files named directly
// are always tried, whatever their extension.
const std::vector<std::string>& image_extensions();

// Files are kept as given; folders are walked recursively, their images sorted
// by path. A missing path or a folder without images yields an entry with an error.
std::vector<ImageInput> expand_image_inputs(const std::vector<std::string>& arguments);

}  // namespace expnet

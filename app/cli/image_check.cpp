// expnet image check FILE|FOLDER...: can each file be read as an image? Prints
// one result per file (ok with its size, or the error and its reason code) and
// exits 1 when any file fails. The same reader as captioning and training;
// folders are walked like `expnet caption` walks them.
#include <nlohmann/json.hpp>

#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "command.h"
#include "expnet/text/terminal_text.h"
#include "expnet/image/image_decode.h"
#include "expnet/image/image_inputs.h"

namespace expnet::cli {
namespace {

struct CheckOptions {
  std::vector<std::string> files;
  bool json = false;
  bool no_exif = false;
  int64_t max_pixels = ImageLoadOptions{}.max_pixels;
};

void report_error(const std::string& file, const std::string& reason, const std::string& message, bool json) {
  set_exit_code(1);
  if (json)
    std::cout << nlohmann::json{{"image", json_safe(file)}, {"ok", false}, {"reason", reason}, {"error", json_safe(message)}}
                     .dump()
              << std::endl;
  else
    std::cout << "error  " << terminal_safe(message) << std::endl;
}

void check_one(const ImageInput& input, const CheckOptions& options, const ImageLoadOptions& load) {
  const std::string& file = input.display;
  // An unusable argument: a missing path gets the reader's own error; a
  // folder without images (or unreadable) is reported as such.
  std::error_code not_a_folder;  // a symlink loop must not stop the batch
  if (!input.error.empty() && std::filesystem::is_directory(input.path, not_a_folder)) {
    report_error(file, "no_images", "cannot use folder '" + file + "': " + input.error, options.json);
    return;
  }
  try {
    const cv::Mat rgb = load_image_rgb(input.path, load);
    if (options.json)
      std::cout << nlohmann::json{{"image", json_safe(file)}, {"ok", true}, {"width", rgb.cols}, {"height", rgb.rows}}
                       .dump()
                << std::endl;
    else
      std::cout << "ok     " << terminal_safe(file) << " (" << rgb.cols << "x" << rgb.rows << " RGB)" << std::endl;
  } catch (const ImageError& e) {
    report_error(file, e.reason(), e.what(), options.json);
  } catch (const std::bad_alloc&) {  // this file's failure: the others are still checked
    report_error(file, "too_large", "cannot use image '" + file + "': not enough memory to decode it: shrink it, or free memory and retry",
                 options.json);
  } catch (const std::exception& e) {
    report_error(file, "error", "cannot use image '" + file + "': " + e.what() + ": check the file and retry", options.json);
  }
}

void run(const CheckOptions& options) {
  ImageLoadOptions load;
  load.apply_exif = !options.no_exif;
  load.max_pixels = options.max_pixels;
  for (const auto& input : expand_image_inputs(options.files)) check_one(input, options, load);
}

const bool registered = register_command({"image", 60, [](CLI::App& root) {
  auto* group = command_group(root, "image", "Image files: check that they can be read");
  auto [command, options] = add_command<CheckOptions>(
      group, "check", "Decode each file as the captioner would; report ok or the error (exit 1 if any fails)", run);
  command->add_option("files", options->files, "Image files or folders (walked recursively for image extensions)")->required();
  command->add_flag("--json", options->json, "One compact JSON object per file: {image, ok, width, height} or {image, ok, reason, error}");
  command->add_flag("--no-exif", options->no_exif, "Ignore the EXIF orientation (the reference code does)");
  command->add_option("--max-pixels", options->max_pixels,
                      "Refuse images with more pixels (decompression-bomb guard; <= 0 disables)")
      ->capture_default_str();
}});

}  // namespace
}  // namespace expnet::cli

#include "expnet/model/demo_model.h"

#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace expnet {
namespace fs = std::filesystem;

std::vector<std::string> demo_model_search_dirs() {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("EXPNET_RESOURCES"); env && *env) dirs.push_back((fs::path(env) / "demo").string());
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) dirs.push_back((exe.parent_path().parent_path() / "share" / "expnet" / "demo").string());
#ifdef EXPNET_SOURCE_RESOURCES_DIR
  dirs.push_back((fs::path(EXPNET_SOURCE_RESOURCES_DIR) / "demo").string());
#endif
  return dirs;
}

std::string demo_checkpoint_path() {
  std::string looked;
  for (const auto& dir : demo_model_search_dirs()) {
    const fs::path file = fs::path(dir) / kDemoModelFile;
    std::error_code ec;
    if (fs::is_regular_file(file, ec)) return file.string();
    looked += "\n  " + file.string();
  }
  throw std::runtime_error("the built-in demo model (" + std::string(kDemoModelFile) +
                           ") was not found; looked at:" + looked +
                           "\nreinstall, or set EXPNET_RESOURCES to the folder that holds demo/" + kDemoModelFile);
}

bool demo_model_available() {
  try {
    demo_checkpoint_path();
    return true;
  } catch (const std::runtime_error&) {
    return false;
  }
}

}  // namespace expnet

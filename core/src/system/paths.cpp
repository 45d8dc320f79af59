#include "expnet/system/paths.h"

#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace expnet {
namespace {

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? std::string(value) : std::string();
}

std::string home() {
  const std::string h = env("HOME");
  return h.empty() ? std::string("/tmp") : h;
}

// XDG says: use the variable when it is an absolute path, else the default.
std::string xdg(const char* variable, const char* fallback, const char* expnet_home_sub) {
  const std::string root = env("EXPNET_HOME");
  if (!root.empty()) return root + "/" + expnet_home_sub;
  const std::string value = env(variable);
  if (!value.empty() && value.front() == '/') return value + "/expnet";
  return home() + "/" + fallback + "/expnet";
}

}  // namespace

std::string data_dir() { return xdg("XDG_DATA_HOME", ".local/share", "data"); }
std::string cache_dir() { return xdg("XDG_CACHE_HOME", ".cache", "cache"); }
std::string config_dir() { return xdg("XDG_CONFIG_HOME", ".config", "config"); }

std::string ensure_dir(const std::string& path) {
  std::error_code error;
  std::filesystem::create_directories(path, error);
  if (error) throw std::runtime_error("cannot create folder '" + path + "': " + error.message());
  return path;
}

}  // namespace expnet

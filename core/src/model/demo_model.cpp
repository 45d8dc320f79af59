#include "expnet/model/demo_model.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace expnet {
namespace fs = std::filesystem;

namespace {

// True when this executable lies in the build folder it was compiled in (but
// not in CPack's staging tree there): only then may the source tree be used, so
// an installed or extracted binary never reads the build machine's files.
bool running_from_own_build_tree([[maybe_unused]] const fs::path& exe) {
#if defined(EXPNET_SOURCE_RESOURCES_DIR) && defined(EXPNET_BINARY_DIR)
  std::error_code ec;
  const fs::path build = fs::weakly_canonical(fs::path(EXPNET_BINARY_DIR), ec);
  if (ec || build.empty()) return false;
  const fs::path rel = exe.lexically_relative(build);
  if (rel.empty() || rel.is_absolute()) return false;
  const std::string first = rel.begin()->string();
  return first != ".." && first != "." && first != "_CPack_Packages";
#else
  return false;
#endif
}

}  // namespace

std::vector<std::string> demo_model_search_dirs() {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("EXPNET_RESOURCES"); env && *env) dirs.push_back((fs::path(env) / "demo").string());
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) dirs.push_back((exe.parent_path().parent_path() / "share" / "expnet" / "demo").string());
#ifdef EXPNET_SOURCE_RESOURCES_DIR
  if (!ec && running_from_own_build_tree(exe)) dirs.push_back((fs::path(EXPNET_SOURCE_RESOURCES_DIR) / "demo").string());
#endif
  return dirs;
}

namespace {

struct BuiltinModel {
  const char* name;
  const char* file;
  const char* made_by;  // the recipe that trains it
};

const std::vector<BuiltinModel>& builtin_models() {
  static const std::vector<BuiltinModel> table = {{"demo", kDemoModelFile, "shapes-demo"},
                                                  {"pnaic-demo-k2", "pnaic_demo_k2.pth", "shapes-pnaic-k2"},
                                                  {"pnaic-demo-k5", "pnaic_demo_k5.pth", "shapes-pnaic-k5"}};
  return table;
}

const BuiltinModel* find_builtin(const std::string& name) {
  const auto& table = builtin_models();
  const auto it = std::find_if(table.begin(), table.end(), [&](const BuiltinModel& m) { return name == m.name; });
  return it == table.end() ? nullptr : &*it;
}

}  // namespace

std::vector<std::string> builtin_model_names() {
  std::vector<std::string> names;
  for (const auto& m : builtin_models()) names.emplace_back(m.name);
  return names;
}

bool is_builtin_model_name(const std::string& name) { return find_builtin(name) != nullptr; }

std::string builtin_model_path(const std::string& name) {
  const BuiltinModel* model = find_builtin(name);
  if (!model) throw std::runtime_error("'" + name + "' is not a built-in model (built-in: demo, pnaic-demo-k2, pnaic-demo-k5)");
  std::string looked;
  for (const auto& dir : demo_model_search_dirs()) {
    const fs::path file = fs::path(dir) / model->file;
    std::error_code ec;
    if (fs::is_regular_file(file, ec)) return file.string();
    looked += "\n  " + file.string();
  }
  throw std::runtime_error("the built-in model '" + name + "' (" + model->file + ") was not found; looked at:" +
                           looked + "\nreinstall, set EXPNET_RESOURCES to the folder that holds demo/" +
                           model->file + ", or train it: expnet train --preset " + model->made_by + " --out DIR");
}

std::string demo_checkpoint_path() { return builtin_model_path("demo"); }

bool demo_model_available() {
  try {
    demo_checkpoint_path();
    return true;
  } catch (const std::runtime_error&) {
    return false;
  }
}

}  // namespace expnet

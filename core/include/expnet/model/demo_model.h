// The built-in demo model: the checkpoint the shapes-demo recipe trains,
// shipped as resources/demo/demo_model.pth (its configuration and vocabulary
// are inside). `--model demo` without --checkpoint means this file; README
// gives the command, seed and SHA-256 that made it.
#pragma once

#include <string>
#include <vector>

namespace expnet {

inline constexpr const char* kDemoModelFile = "demo_model.pth";

// Where the file is looked for, in order: $EXPNET_RESOURCES/demo, then
// <executable>/../share/expnet/demo (installed), then the source tree's
// resources/demo (a build run from its build folder).
std::vector<std::string> demo_model_search_dirs();
// The first existing demo_model.pth; throws naming every place looked at.
std::string demo_checkpoint_path();
bool demo_model_available();

}  // namespace expnet

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
// <executable>/../share/expnet/demo (installed or extracted package), then the
// source tree's resources/demo only for a program inside its own build folder
// (an installed or copied binary never reads the build machine's sources).
std::vector<std::string> demo_model_search_dirs();
// The first existing demo_model.pth; throws naming every place looked at.
std::string demo_checkpoint_path();
bool demo_model_available();

// The built-in models by name, each a file in the same places: "demo" (the AIC
// demo model above) and the PNAIC models distilled from it, "pnaic-demo-k2" and
// "pnaic-demo-k5" (pnaic_demo_k2.pth, pnaic_demo_k5.pth; README says how they
// were made).
std::vector<std::string> builtin_model_names();
bool is_builtin_model_name(const std::string& name);
// The file of a built-in model; throws naming every place looked at and how to
// make the file when it is missing.
std::string builtin_model_path(const std::string& name);

}  // namespace expnet

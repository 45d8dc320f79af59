// Where ExpansionNet Studio keeps things, following the XDG base directories:
//   runs, run store, exported models: $XDG_DATA_HOME/expnet  (~/.local/share/expnet)
//   feature caches, thumbnails:       $XDG_CACHE_HOME/expnet (~/.cache/expnet)
//   settings:                         $XDG_CONFIG_HOME/expnet (~/.config/expnet)
// EXPNET_HOME, when set, replaces all three (one folder with data/, cache/, config/).
#pragma once

#include <string>

namespace expnet {

std::string data_dir();
std::string cache_dir();
std::string config_dir();
// Creates the folder (and parents) if needed; throws with the reason when it cannot.
std::string ensure_dir(const std::string& path);

}  // namespace expnet

#include "expnet/metadata/alt_text_model.h"

#include <filesystem>

#include "expnet/model/demo_model.h"
#include "expnet/system/digest.h"

namespace fs = std::filesystem;

namespace expnet {

void name_alt_text_model(AltTextOptions& options, const std::string& builtin, const std::string& checkpoint) {
  options.model_name = checkpoint.empty() ? builtin : fs::path(checkpoint).filename().string();
  options.model_sha256 = sha256_file(checkpoint.empty() ? builtin_model_path(builtin) : checkpoint);
  options.date = alt_text_date();
}

}  // namespace expnet

// Which model an alt text record names (expnet/metadata/alt_text.h): apart from
// the writing itself, so the readers of alt text (a folder of photos as a
// dataset) need neither the model files nor the digests.
#pragma once

#include <string>

#include "expnet/metadata/alt_text.h"

namespace expnet {

// The record's model and date, as `expnet caption` and the studio name them: a
// checkpoint by its file name and SHA-256, else the built-in model `builtin` by
// its name and its file's SHA-256; the date alt_text_date(). Throws
// std::runtime_error when the file cannot be read.
void name_alt_text_model(AltTextOptions& options, const std::string& builtin, const std::string& checkpoint);

}  // namespace expnet

// A folder of photos as a dataset (format "photos"): the texts people keep in
// the images' own metadata, read back through expnet/metadata/alt_text.h (the
// XMP alt text and dc:description, embedded or in a sidecar), are its
// references, so a user browses their captioned photos and evaluates a model on
// them. A caption our namespace records as the model's, unedited, is not a
// reference. Private to the data area; docs/datasets.md, "A folder of photos".
#pragma once

#include <string>

#include "expnet/data/dataset.h"

namespace expnet {

// Every image under `folder` (recursively, sorted by path), split "test", its id
// a stable 48-bit digest of its path inside the folder. Throws std::runtime_error
// for a folder without images; a file whose metadata cannot be read stays
// without references and is named, with why, in Dataset::unreadable.
Dataset read_photo_folder(const std::string& folder);

// The folder's images and sidecars as lines of path, size and modification
// time: what the cached index of the folder is keyed by (its digest), as a
// file's index is by the file's size and time.
std::string photo_folder_fingerprint(const std::string& folder);

}  // namespace expnet

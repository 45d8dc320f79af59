// Checks on an image's own bytes before exiv2 reads its metadata. exiv2 reads
// whatever a file declares, in time and memory that grow with a packet's size,
// and rewrites a JPEG holding several Exif or XMP blocks keeping some of them.
// Such a file gets a clear error and is left untouched; the batch goes on.
// Private to the metadata area; docs/metadata.md, "Files refused" (figures).
#pragma once

#include <cstddef>
#include <string>

namespace expnet {

// The largest XMP packet (or PNG text, or TIFF metadata tag) handed to exiv2:
// far above real packets, far below what would take exiv2 past 500 MB.
inline constexpr size_t kMaxMetadataBlockBytes = 16'000'000;

// "" when exiv2 may read the file; otherwise why not, as a sentence ("its XMP
// packet is 100.0 MB ..."). JPEG, PNG, TIFF and WebP are walked by their
// blocks' headers only (the file is mapped, not read in); other formats pass.
std::string metadata_hazard(const std::string& path);

// Whether the file's bytes hold XMP of the older form (rdf:about="uuid:...",
// Photoshop before 2008), which exiv2's toolkit would rewrite. exiv2 shows only
// the packet it re-encoded, so the file itself is searched (mapped, not read in).
bool holds_legacy_xmp(const std::string& path);

}  // namespace expnet

// Captions written where people keep them: the image's own XMP metadata, as
// IPTC's alt text (Iptc4xmpCore:AltTextAccessibility, x-default) and, where it
// is empty or ours, dc:description; or an XMP sidecar next to the file
// (`photo.jpg.xmp`, as digiKam and darktable name them). Which model wrote
// it goes into a namespace of our own (expnet:), so a later run tells machine
// captions from a person's. Written through exiv2; the image is rewritten into
// a temporary file in its folder, synced and renamed over it, with its
// permissions (and, asked for, its modification time) kept. docs/metadata.md.
#pragma once

#include <string>

namespace expnet {

struct AltTextOptions {
  bool sidecar = false;     // always a sidecar; the image is never touched
  bool overwrite = false;   // replace alt text a person wrote
  bool dry_run = false;     // decide and report, write nothing
  bool keep_mtime = false;  // the image keeps its modification time
  std::string model_name, model_sha256;
  std::string date;         // ISO 8601, UTC (SOURCE_DATE_EPOCH when set: alt_text_date())
};

struct AltTextOutcome {
  // written (into the image), sidecar (written there), skipped, failed;
  // with dry_run: the first two as would-be.
  std::string action;
  std::string reason;       // why skipped, failed, or a sidecar instead of the image
  std::string target;       // the file written (the image or its sidecar)
};

// The sidecar of `image`: `image` + ".xmp".
std::string alt_text_sidecar_path(const std::string& image);

// Now, or SOURCE_DATE_EPOCH when it is set, as 2026-11-29T10:30:00Z.
std::string alt_text_date();

// Writes `caption` as the image's alt text under the rules above. Never
// throws for a file's problem: it is the outcome's "failed" with the reason.
// `model_caption`: what the model wrote, when a person edited it into
// `caption` (recorded as ours, so the alt text counts as theirs from then on).
AltTextOutcome write_alt_text(const std::string& image, const std::string& caption, const AltTextOptions& options,
                              const std::string& model_caption = "");

// What a file holds now (embedded, or its sidecar when the image has none):
// the alt text (x-default), the description, and the caption our namespace
// records as ours ("" when none).
struct AltTextRecord {
  std::string alt_text, description, ours, model_name, model_sha256, date;
};
AltTextRecord read_alt_text(const std::string& image);

}  // namespace expnet

#include "expnet/metadata/alt_text.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <mutex>
#include <random>
#include <stdexcept>

#ifdef EXPNET_HAVE_EXIV2
#include <exiv2/exiv2.hpp>
#endif

#include "metadata/metadata_limits.h"

namespace fs = std::filesystem;

namespace expnet {

std::string alt_text_sidecar_path(const std::string& image) { return image + ".xmp"; }

std::string alt_text_date() {
  std::time_t seconds = std::time(nullptr);
  if (const char* epoch = std::getenv("SOURCE_DATE_EPOCH"); epoch && *epoch) {
    char* end = nullptr;
    const long long value = std::strtoll(epoch, &end, 10);
    if (end && *end == '\0' && value >= 0) seconds = static_cast<std::time_t>(value);
  }
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

#ifdef EXPNET_HAVE_EXIV2

namespace {

// Our namespace: which caption is ours, and which model wrote it when.
constexpr const char* kNamespace = "http://ns.expansionnet-studio.org/alt-text/1.0/";
constexpr const char* kAltText = "Xmp.iptc.AltTextAccessibility";
constexpr const char* kDescription = "Xmp.dc.description";

void set_up_exiv2() {
  static std::once_flag once;
  std::call_once(once, [] {
    Exiv2::XmpParser::initialize();
    Exiv2::XmpProperties::registerNs(kNamespace, "expnet");
    Exiv2::LogMsg::setLevel(Exiv2::LogMsg::mute);  // its warnings would reach stderr; errors come as exceptions
  });
}

std::string lang_alt_text(const Exiv2::XmpData& xmp, const char* key) {
  const auto it = xmp.findKey(Exiv2::XmpKey(key));
  if (it == xmp.end()) return "";
  if (it->typeId() == Exiv2::langAlt) return static_cast<const Exiv2::LangAltValue&>(it->value()).toString("x-default");
  return it->toString();
}

std::string plain_text(const Exiv2::XmpData& xmp, const std::string& key) {
  const auto it = xmp.findKey(Exiv2::XmpKey(key));
  return it == xmp.end() ? "" : it->toString();
}

void set_lang_alt(Exiv2::XmpData& xmp, const char* key, const std::string& text) {
  const auto it = xmp.findKey(Exiv2::XmpKey(key));
  if (it != xmp.end()) xmp.erase(it);
  Exiv2::LangAltValue value;
  value.read("lang=\"x-default\" " + text);  // the qualifier first, so a caption is never read as one
  xmp.add(Exiv2::XmpKey(key), &value);
}

AltTextRecord record_of(const Exiv2::XmpData& xmp) {
  AltTextRecord r;
  r.alt_text = lang_alt_text(xmp, kAltText);
  r.description = lang_alt_text(xmp, kDescription);
  r.ours = plain_text(xmp, "Xmp.expnet.altText");
  r.model_name = plain_text(xmp, "Xmp.expnet.model");
  r.model_sha256 = plain_text(xmp, "Xmp.expnet.modelSHA256");
  r.date = plain_text(xmp, "Xmp.expnet.date");
  return r;
}

// expnet:altText is the model's caption: when a person edited it, the alt text
// differs from it and later runs treat the alt text as theirs.
void apply(Exiv2::XmpData& xmp, const AltTextRecord& before, const std::string& caption,
           const std::string& model_caption, const AltTextOptions& o) {
  set_lang_alt(xmp, kAltText, caption);
  if (before.description.empty() || before.description == before.ours) set_lang_alt(xmp, kDescription, caption);
  xmp["Xmp.expnet.altText"] = model_caption;
  xmp["Xmp.expnet.model"] = o.model_name;
  xmp["Xmp.expnet.modelSHA256"] = o.model_sha256;
  xmp["Xmp.expnet.date"] = o.date;
}

void sync_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("cannot open '" + path + "' to sync it: " + std::strerror(errno));
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) throw std::runtime_error("cannot sync '" + path + "': " + std::strerror(errno));
}

void sync_folder(const fs::path& folder) {
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) ::fsync(fd), ::close(fd);
}

// A temporary name beside `target`, removed unless committed. Named as
// write_file_atomic names its own (<target>.tmp.<pid>.<random>), so what a killed
// writer left is found by remove_stale_temporaries (expnet/system/atomic_file.h).
class TempBeside {
 public:
  explicit TempBeside(const std::string& target) {
    path_ = target + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(std::random_device{}());
  }
  ~TempBeside() {
    if (!committed_) ::unlink(path_.c_str());
  }
  const std::string& path() const { return path_; }
  // Synced, then renamed over `target`, and the folder synced.
  void commit(const std::string& target) {
    sync_file(path_);
    if (::rename(path_.c_str(), target.c_str()) != 0)
      throw std::runtime_error("cannot rename into '" + target + "': " + std::strerror(errno));
    committed_ = true;
    sync_folder(fs::path(target).parent_path().empty() ? fs::path(".") : fs::path(target).parent_path());
  }

 private:
  std::string path_;
  bool committed_ = false;
};

// The image rewritten with our fields into a copy beside it, which replaces it.
void write_embedded(const std::string& image, const AltTextRecord& before, const std::string& caption,
                    const std::string& model_caption, const AltTextOptions& o) {
  struct stat original{};
  if (::stat(image.c_str(), &original) != 0) throw std::runtime_error(std::string("cannot read it: ") + std::strerror(errno));
  TempBeside temp(image);
  fs::copy_file(image, temp.path(), fs::copy_options::overwrite_existing);
  {
    auto copy = Exiv2::ImageFactory::open(temp.path());
    copy->readMetadata();
    apply(copy->xmpData(), before, caption, model_caption, o);
    copy->writeMetadata();
  }
  if (::chmod(temp.path().c_str(), original.st_mode & 07777) != 0)
    throw std::runtime_error(std::string("cannot keep its permissions: ") + std::strerror(errno));
  if (o.keep_mtime) {
    const timespec times[2] = {original.st_atim, original.st_mtim};
    ::utimensat(AT_FDCWD, temp.path().c_str(), times, 0);
  }
  temp.commit(image);
}

void write_sidecar(const std::string& image, const AltTextRecord& before, const std::string& caption,
                   const std::string& model_caption, const AltTextOptions& o) {
  const std::string sidecar = alt_text_sidecar_path(image);
  TempBeside temp(sidecar);
  std::unique_ptr<Exiv2::Image> xmp_file;
  if (fs::exists(sidecar)) {
    fs::copy_file(sidecar, temp.path(), fs::copy_options::overwrite_existing);
    xmp_file.reset(Exiv2::ImageFactory::open(temp.path()).release());
    xmp_file->readMetadata();
  } else {
    xmp_file.reset(Exiv2::ImageFactory::create(Exiv2::ImageType::xmp, temp.path()).release());
  }
  apply(xmp_file->xmpData(), before, caption, model_caption, o);
  xmp_file->writeMetadata();
  xmp_file.reset();
  temp.commit(sidecar);
}

// A file exiv2 may read (metadata_hazard), opened with its metadata read. exiv2
// drops an XMP packet it cannot parse and would write ours in its place: refused.
std::unique_ptr<Exiv2::Image> open_checked(const std::string& path) {
  if (std::string hazard = metadata_hazard(path); !hazard.empty()) throw std::runtime_error(hazard);
  auto file = Exiv2::ImageFactory::open(path);
  file->readMetadata();
  Exiv2::XmpData parsed;
  if (!file->xmpPacket().empty() && file->xmpData().empty() && Exiv2::XmpParser::decode(parsed, file->xmpPacket()) != 0)
    throw std::runtime_error(
        "its XMP packet is not well-formed XML (a damaged file, or a faulty program wrote it); left "
        "untouched. Repair it (exiftool -XMP:all= FILE drops it) or use --sidecar");
  return std::unique_ptr<Exiv2::Image>(file.release());
}

AltTextRecord read_file_record(const std::string& path) { return record_of(open_checked(path)->xmpData()); }

}  // namespace

AltTextRecord read_alt_text(const std::string& image) {
  set_up_exiv2();
  AltTextRecord embedded = read_file_record(image);
  const std::string sidecar = alt_text_sidecar_path(image);
  if (embedded.alt_text.empty() && fs::exists(sidecar)) return read_file_record(sidecar);
  return embedded;
}

AltTextOutcome write_alt_text(const std::string& image, const std::string& caption, const AltTextOptions& o,
                              const std::string& model_caption) {
  try {
    set_up_exiv2();
    if (caption.empty()) return {"skipped", "the caption is empty", ""};
    const std::string sidecar = alt_text_sidecar_path(image);
    bool to_sidecar = o.sidecar;
    std::string why_sidecar;
    AltTextRecord before;
    std::unique_ptr<Exiv2::Image> file;
    try {
      file = open_checked(image);
    } catch (const std::exception& e) {
      if (!o.sidecar) return {"failed", e.what(), ""};  // --sidecar: only the sidecar is read and written
    }
    if (file) {
      before = record_of(file->xmpData());
      if (!to_sidecar && file->checkMode(Exiv2::mdXmp) != Exiv2::amReadWrite)
        to_sidecar = true, why_sidecar = "exiv2 cannot write XMP into this format";
      // XMP of the older form (Photoshop before 2008: rdf:about="uuid:...") is rewritten
      // by exiv2's XMP toolkit, its UUID moved over xmpMM:InstanceID: a sidecar keeps every field.
      if (!to_sidecar && holds_legacy_xmp(image))
        to_sidecar = true, why_sidecar = "its XMP is of an older form that exiv2 would rewrite (rdf:about=uuid)";
      file.reset();
    }
    // Read-only: not writable by us, or no write permission for anyone (root could write it, but its owner said no).
    struct stat mode{};
    if (!to_sidecar && (::access(image.c_str(), W_OK) != 0 || (::stat(image.c_str(), &mode) == 0 && (mode.st_mode & 0222) == 0)))
      to_sidecar = true, why_sidecar = "the image is read-only";
    if (to_sidecar && fs::exists(sidecar)) {
      const AltTextRecord kept = read_file_record(sidecar);
      if (!kept.alt_text.empty() || !kept.ours.empty()) before = kept;
    }
    const bool ours = !before.ours.empty() && before.alt_text == before.ours;
    if (before.alt_text == caption) return {"skipped", ours ? "already has this caption (written by expnet)" : "already has this alt text", ""};
    if (!before.alt_text.empty() && !ours && !o.overwrite)
      return {"skipped", "has alt text a person wrote (or another program): --overwrite replaces it", ""};
    if (!to_sidecar) {
      if (o.dry_run) return {"written", "dry run: would be written into the image", image};
      try {
        write_embedded(image, before, caption, model_caption.empty() ? caption : model_caption, o);
        return {"written", "", image};
      } catch (const std::exception& e) {
        to_sidecar = true;
        why_sidecar = std::string("the image could not be written safely (") + e.what() + "); it is untouched";
      }
    }
    if (o.dry_run) return {"sidecar", "dry run: would be written into the sidecar" + (why_sidecar.empty() ? "" : ": " + why_sidecar), sidecar};
    try {
      write_sidecar(image, before, caption, model_caption.empty() ? caption : model_caption, o);
    } catch (const std::exception& e) {
      const std::string sidecar_error = std::string(why_sidecar.empty() ? "its sidecar could not be written ("
                                                                        : "its sidecar could not be written either (") +
                                        e.what() + ")";
      return {"failed", why_sidecar.empty() ? sidecar_error : why_sidecar + "; " + sidecar_error, ""};
    }
    return {"sidecar", why_sidecar, sidecar};
  } catch (const std::exception& e) {
    return {"failed", e.what(), ""};
  }
}

#else  // a build without exiv2 (a headless engine built with EXPNET_BUILD_GUI=OFF and no libexiv2-dev)

namespace {
constexpr const char* kNoExiv2 = "this expnet was built without exiv2: install libexiv2-dev and build again (docs/metadata.md)";
}

AltTextRecord read_alt_text(const std::string&) { throw std::runtime_error(kNoExiv2); }

AltTextOutcome write_alt_text(const std::string&, const std::string&, const AltTextOptions&, const std::string&) {
  return {"failed", kNoExiv2, ""};
}

#endif

}  // namespace expnet

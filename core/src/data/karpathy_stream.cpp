// simdjson On-Demand walks the file once per pass with a cursor: values are
// read where they stand and every value skipped is still checked, so a broken
// file fails as it does for load_dataset (which then words the error).
#include "data/karpathy_stream.h"

#include "data/dataset_formats.h"

#include <simdjson.h>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <unordered_set>
#include <utility>

#include "expnet/system/input_file.h"
#include "expnet/text/caption_text.h"

namespace od = simdjson::ondemand;

namespace expnet {
namespace {

// A number as nlohmann reads it: an integer past 64 bits, which get_number
// refuses, is a double there (so is neither an id nor an error).
std::optional<od::number> number_or_big(od::value value) {
  auto number = value.get_number();
  if (!number.error()) return number.value_unsafe();
  (void)value.get_double().value();  // throws for what nlohmann refuses too (1e400)
  return std::nullopt;
}

// Reads and so validates a value the index does not use.
void skip(od::value value) {
  switch (value.type().value()) {
    case od::json_type::array:
      for (auto element : value.get_array()) skip(element.value());
      break;
    case od::json_type::object:
      for (auto field : value.get_object()) {
        (void)field.unescaped_key().value();
        skip(field.value());
      }
      break;
    case od::json_type::number:
      (void)number_or_big(value);
      break;
    case od::json_type::string:
      (void)value.get_string().value();
      break;
    case od::json_type::boolean:
      (void)value.get_bool().value();
      break;
    case od::json_type::null:
      if (!value.is_null().value()) throw simdjson::simdjson_error(simdjson::N_ATOM_ERROR);
      break;
  }
}

// read_karpathy's json_string: the text of a string value, "" for any other value.
std::string string_or_empty(od::value value) {
  if (value.type().value() == od::json_type::string) return std::string(value.get_string().value());
  skip(value);
  return {};
}

// nlohmann's is_number_integer() then get<int64_t>(): integers only, not 1.0 or 1e3.
std::optional<int64_t> integer_or_none(od::value value) {
  if (value.type().value() == od::json_type::number) {
    const auto number = number_or_big(value);
    if (number && number->is_int64()) return number->get_int64();
    if (number && number->is_uint64()) return static_cast<int64_t>(number->get_uint64());
    return std::nullopt;
  }
  skip(value);
  return std::nullopt;
}

}  // namespace

struct KarpathyStream::State {
  std::string file;
  DatasetLoadOptions options;
  simdjson::padded_string json;
  od::parser parser;
  od::document doc;
  bool iterating = false;  // doc is valid (its location can be asked)
  bool coco = false;
  size_t images = 0, images_field = 0;  // the count, and which top-level field holds them (the last "images" wins, as in nlohmann)

  size_t line_of(size_t offset) const {
    offset = std::min(offset, json.size());
    return 1 + static_cast<size_t>(std::count(json.data(), json.data() + offset, '\n'));
  }
  size_t offset() {
    if (!iterating) return std::string::npos;
    const auto location = doc.current_location();
    return location.error() ? std::string::npos : static_cast<size_t>(location.value_unsafe() - json.data());
  }
  std::string where(size_t offset) const {
    return file + ":" + std::to_string(line_of(offset)) + ":";
  }

  // A simdjson error: load_dataset's JSON parser words it (with line and
  // column); if it accepts what simdjson refused, simdjson's reason is given.
  [[noreturn]] void fail(const simdjson::simdjson_error& error, size_t at) {
    try {
      load_dataset(file, options);
    } catch (const std::runtime_error&) {
      throw;
    } catch (const std::exception&) {
      // e.g. nlohmann's number overflow, which names no place: worded below
    }
    const std::string place = at == std::string::npos ? file + ":" : where(at);
    throw std::runtime_error(place + " not valid JSON (" + simdjson::error_message(error.error()) +
                             "); fix the file or re-export it");
  }

  void start() {
    iterating = false;
    // A UTF-8 byte order mark, which nlohmann (load_dataset) skips and simdjson refuses.
    const size_t bom = json.size() >= 3 && std::string_view(json.data(), 3) == "\xEF\xBB\xBF" ? 3 : 0;
    doc = parser.iterate(simdjson::padded_string_view(json.data() + bom, json.size() - bom, json.size() - bom + simdjson::SIMDJSON_PADDING));
    iterating = true;
  }

  void scan_top_level() {
    start();
    if (doc.type().value() != od::json_type::object) load_dataset(file, options);  // throws load_dataset's own error
    bool has_images = false, has_annotations = false;
    size_t index = 0;
    for (auto field : doc.get_object()) {
      const std::string_view key = field.unescaped_key().value();
      od::value value = field.value();
      if (key == "images") {
        has_images = value.type().value() == od::json_type::array;
        if (has_images) {
          od::array array = value.get_array();
          images = array.count_elements();
          images_field = index;
        }
      } else {
        has_annotations |= key == "annotations";
        skip(value);
      }
      ++index;
    }
    if (!has_images) load_dataset(file, options);  // throws: no "images" array
    coco = options.format == DatasetFormat::Auto && has_annotations;
  }

  void read_image(od::value value, size_t index, size_t at, DatasetImage& image) {
    const std::string place = "images[" + std::to_string(index) + "]";
    if (value.type().value() != od::json_type::object)
      throw std::runtime_error(where(at) + " " + place + " is not an object; each image is {\"filename\", \"split\", \"sentences\", ...}");
    std::optional<int64_t> cocoid, imgid;
    std::optional<int> width, height;
    std::string split, sentences_error;
    for (auto field : value.get_object()) {
      const std::string_view key = field.unescaped_key().value();
      od::value v = field.value();
      if (key == "filename") {
        image.filename = string_or_empty(v);
      } else if (key == "filepath") {
        image.filepath = string_or_empty(v);
      } else if (key == "cocoid") {
        cocoid = integer_or_none(v);
      } else if (key == "imgid") {
        imgid = integer_or_none(v);
      } else if (key == "split") {
        split = string_or_empty(v);
      } else if (key == "width" || key == "height") {
        const auto n = integer_or_none(v);
        (key == "width" ? width : height) = n ? std::optional<int>(static_cast<int>(*n)) : std::nullopt;
      } else if (key == "sentences") {
        // Refused only after the object ends: like nlohmann, a repeated key's last value wins.
        image.captions.clear();
        sentences_error.clear();
        if (v.type().value() != od::json_type::array) {
          sentences_error = where(at) + " " + place + ".sentences is not a list; write \"sentences\": "
                            "[{\"raw\": \"a caption\"}, ...] (or [] for an image without captions)";
          skip(v);
        } else {
          sentences_error = read_sentences(v.get_array(), place, image);
        }
      } else {
        skip(v);
      }
    }
    if (image.filename.empty()) throw std::runtime_error(where(at) + " " + place + " has no \"filename\" string; every image needs its file name");
    image.cocoid = cocoid ? *cocoid : imgid ? *imgid : static_cast<int64_t>(index);
    if (split.empty())
      throw std::runtime_error(where(at) + " " + place + " (\"" + image.filename + "\") has no \"split\"; use train, restval, val or test");
    try {
      image.split = parse_split(split);
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error(where(at) + " " + place + ": " + e.what());
    }
    if (!sentences_error.empty()) throw std::runtime_error(sentences_error);
    image.width = width.value_or(0);
    image.height = height.value_or(0);
  }

  // A sentence's caption is its "raw" text, else its "tokens" joined by spaces (read_karpathy).
  // Returns the first empty sentence's error, after reading the whole list.
  std::string read_sentences(od::array sentences, const std::string& place, DatasetImage& image) {
    std::string error;
    size_t s = 0;
    for (auto element : sentences) {
      const size_t at = offset();
      od::value sentence = element.value();
      std::string raw, joined;
      bool has_tokens = false;
      if (sentence.type().value() == od::json_type::object) {
        for (auto field : sentence.get_object()) {
          const std::string_view key = field.unescaped_key().value();
          od::value v = field.value();
          if (key == "raw") {
            raw = string_or_empty(v);
          } else if (key == "tokens" && v.type().value() == od::json_type::array) {
            has_tokens = true;
            joined.clear();
            for (auto token : v.get_array()) {
              od::value t = token.value();
              if (t.type().value() == od::json_type::string)
                joined += (joined.empty() ? "" : " ") + std::string(t.get_string().value());
              else
                skip(t);
            }
          } else {
            has_tokens &= key != "tokens";
            skip(v);
          }
        }
      } else {
        skip(sentence);
      }
      if (raw.empty() && has_tokens) raw = std::move(joined);
      if (raw.empty() && error.empty())
        error = where(at) + " " + place + ".sentences[" + std::to_string(s) +
                "] has neither \"raw\" text nor \"tokens\"; remove it or add the caption";
      if (raw.size() > kMaxCaptionBytes && error.empty())
        error = where(at) + " " + place + ".sentences[" + std::to_string(s) + "]: " + caption_too_long(raw.size());
      if (error.empty()) {
        Caption caption;
        caption.tokens = clean_caption(raw);
        caption.raw = std::move(raw);
        image.captions.push_back(std::move(caption));
      }
      ++s;
    }
    return error;
  }

  void read(const std::function<void(DatasetImage&&, size_t, size_t)>& add) {
    start();
    size_t index = 0;
    for (auto field : doc.get_object()) {
      const std::string_view key = field.unescaped_key().value();
      if (index++ != images_field) {
        if (key == "images") skip(field.value());  // an earlier "images", replaced by the last one
        continue;  // already checked by scan_top_level
      }
      size_t i = 0;
      std::unordered_set<int64_t> ids;  // as load_dataset, the index and the evaluation: one image per id
      for (auto element : field.value().get_array()) {
        const size_t at = offset();
        DatasetImage image;
        read_image(element.value(), i, at, image);
        if (!ids.insert(image.cocoid).second)
          throw std::runtime_error(where(at) + " images[" + std::to_string(i) + "]: image id " +
                                   std::to_string(image.cocoid) + " (" + image.filename +
                                   ") appears twice; every image needs its own cocoid/id");
        add(std::move(image), i, at);
        ++i;
      }
    }
    // Anything after the top-level object is an error, as for load_dataset.
    if (offset() != std::string::npos) throw simdjson::simdjson_error(simdjson::TRAILING_CONTENT);
  }
};

KarpathyStream::KarpathyStream(const std::string& file, const DatasetLoadOptions& options) : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.file = file;
  s.options = options;
  check_input_file(file, "dataset file");  // a folder, FIFO or device: refused, never waited on
  auto loaded = simdjson::padded_string::load(file);
  if (loaded.error()) throw std::runtime_error("cannot open dataset file '" + file + "': check the path and its permissions");
  s.json = std::move(loaded).value_unsafe();
  try {
    s.scan_top_level();
  } catch (const simdjson::simdjson_error& e) {
    s.fail(e, s.offset());
  }
}

KarpathyStream::~KarpathyStream() = default;

bool KarpathyStream::is_coco() const { return state_->coco; }
size_t KarpathyStream::images() const { return state_->images; }

std::string KarpathyStream::place(size_t index, size_t offset) const {
  return state_->where(offset) + " images[" + std::to_string(index) + "]";
}

void KarpathyStream::read(const std::function<void(DatasetImage&&, size_t, size_t)>& add) {
  try {
    state_->read(add);
  } catch (const simdjson::simdjson_error& e) {
    state_->fail(e, state_->offset());
  }
}

}  // namespace expnet

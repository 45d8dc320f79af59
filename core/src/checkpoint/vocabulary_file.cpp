#include "expnet/checkpoint/vocabulary_file.h"

#include <fstream>
#include <iterator>
#include <stdexcept>

#include "expnet/checkpoint/pickle_value.h"
#include "expnet/checkpoint/unpickler.h"
#include "expnet/system/input_file.h"
#include "expnet/checkpoint/pickler.h"

namespace expnet {
namespace {

using pickle::Kind;

// Strict UTF-8 (RFC 3629: no overlong forms, no surrogates), what JSON, and so
// Vocabulary::to_json, accepts: a pickle's str bytes are not checked by the unpickler.
bool valid_utf8(std::string_view s) {
  static constexpr char32_t kMin[] = {0, 0x80, 0x800, 0x10000};
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t more = 0;
    char32_t cp = c;
    if (c < 0x80) more = 0;
    else if ((c & 0xE0) == 0xC0) more = 1, cp = c & 0x1F;
    else if ((c & 0xF0) == 0xE0) more = 2, cp = c & 0x0F;
    else if ((c & 0xF8) == 0xF0) more = 3, cp = c & 0x07;
    else return false;
    if (more >= s.size() - i) return false;
    for (size_t k = 1; k <= more; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if ((b & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (b & 0x3F);
    }
    if (cp < kMin[more] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += more + 1;
  }
  return true;
}

std::string optional_str(const pickle::Value& root, const char* key, const char* fallback, const std::string& source) {
  const pickle::Value* v = root.find(key);
  if (!v) return fallback;
  if (!v->is(Kind::Str)) throw std::runtime_error(source + ": '" + key + "' must be a str");
  return v->text;
}

Vocabulary from_pickle(std::string_view bytes, const std::string& source) {
  const pickle::Document doc = pickle::parse(bytes, source);
  const pickle::Value& root = *doc.root;
  const pickle::Value* words = root.find("idx2word_list");
  if (!words || !words->is(Kind::List))
    throw std::runtime_error(source + ": not a vocabulary pickle (expected a dict with 'idx2word_list', got " +
                             pickle::describe(root, 1) + ")");
  std::vector<std::string> list;
  list.reserve(words->items.size());
  for (const pickle::Value* w : words->items) {
    if (!w->is(Kind::Str)) throw std::runtime_error(source + ": idx2word_list holds a " + pickle::kind_name(w->kind));
    if (!valid_utf8(w->text))
      throw std::runtime_error(source + ": idx2word_list[" + std::to_string(list.size()) +
                               "] is not valid UTF-8 text; re-create the vocabulary pickle from Python str words");
    list.push_back(w->text);
  }
  // word2idx_dict must agree with the list: the reference encodes with one and decodes with the other.
  if (const pickle::Value* index = root.find("word2idx_dict")) {
    if (!index->is(Kind::Dict)) throw std::runtime_error(source + ": word2idx_dict is not a dict");
    if (index->entries.size() != list.size())
      throw std::runtime_error(source + ": word2idx_dict has " + std::to_string(index->entries.size()) +
                               " words, idx2word_list " + std::to_string(list.size()));
    for (const auto& [k, v] : index->entries) {
      if (!k->is(Kind::Str) || !v->is(Kind::Int) || v->integer < 0 ||
          v->integer >= static_cast<int64_t>(list.size()) || list[static_cast<size_t>(v->integer)] != k->text)
        throw std::runtime_error(source + ": word2idx_dict and idx2word_list disagree on " + pickle::describe(*k));
    }
  }
  try {
    return Vocabulary(std::move(list), optional_str(root, "sos_str", "SOS", source),
                      optional_str(root, "eos_str", "EOS", source));
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(source + ": " + e.what());
  }
}

}  // namespace

Vocabulary parse_vocabulary(std::string_view bytes, const std::string& source) {
  size_t first = 0;
  while (first < bytes.size() && (bytes[first] == ' ' || bytes[first] == '\n' || bytes[first] == '\r' || bytes[first] == '\t'))
    ++first;
  if (first == bytes.size()) throw std::runtime_error(source + ": empty vocabulary file");
  if (bytes[first] == '{') {
    try {
      return Vocabulary::from_json(std::string(bytes), source);
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error(source + ": " + e.what());
    }
  }
  if (static_cast<unsigned char>(bytes[0]) == 0x80) {
    try {
      return from_pickle(bytes, source);
    } catch (const pickle::PickleError& e) {
      throw std::runtime_error(e.what());
    }
  }
  throw std::runtime_error(source + ": not a vocabulary (neither our JSON nor a Python pickle like demo_coco_tokens.pickle)");
}

Vocabulary load_vocabulary(const std::string& path) {
  return parse_vocabulary(read_input_file(path, "vocabulary", kMaxVocabularyBytes), path);
}

}  // namespace expnet

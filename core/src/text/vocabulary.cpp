#include "expnet/text/vocabulary.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "expnet/system/atomic_file.h"
#include "expnet/system/input_file.h"

namespace expnet {

Vocabulary::Vocabulary(std::vector<std::string> words, std::string sos, std::string eos, std::string pad,
                       std::string unk)
    : words_(std::move(words)), sos_(std::move(sos)), eos_(std::move(eos)), pad_(std::move(pad)), unk_(std::move(unk)) {
  index_.reserve(words_.size());
  for (size_t i = 0; i < words_.size(); ++i) {
    if (!index_.emplace(words_[i], static_cast<int64_t>(i)).second)
      throw std::invalid_argument("vocabulary: word '" + words_[i] + "' appears twice (ids " +
                                  std::to_string(index_[words_[i]]) + " and " + std::to_string(i) + ")");
  }
  sos_id_ = id(sos_);
  eos_id_ = id(eos_);
  pad_id_ = id(pad_);
  unk_id_ = id(unk_);
  del_id_ = id(del_);
  for (const auto& [name, value] : {std::pair{sos_, sos_id_}, {eos_, eos_id_}, {pad_, pad_id_}})
    if (value < 0) throw std::invalid_argument("vocabulary: special token '" + name + "' is missing");
}

int64_t Vocabulary::id(const std::string& word) const {
  const auto it = index_.find(word);
  return it == index_.end() ? -1 : it->second;
}

Vocabulary Vocabulary::with_del() const {
  if (del_id_ >= 0) throw std::invalid_argument("vocabulary: already has '" + del_ + "' (id " + std::to_string(del_id_) + ")");
  auto words = words_;
  words.push_back(del_);
  return Vocabulary(std::move(words), sos_, eos_, pad_, unk_);
}

const std::string& Vocabulary::word(int64_t id) const {
  if (id < 0 || id >= size())
    throw std::out_of_range("token id " + std::to_string(id) + " is outside the vocabulary (size " +
                            std::to_string(size()) + ")");
  return words_[static_cast<size_t>(id)];
}

std::vector<int64_t> Vocabulary::encode(const std::vector<std::string>& tokens) const {
  std::vector<int64_t> ids;
  ids.reserve(tokens.size());
  for (const auto& token : tokens) {
    int64_t value = id(token);
    if (value < 0) {
      if (unk_id_ < 0) throw std::invalid_argument("word '" + token + "' is not in the vocabulary, which has no UNK");
      value = unk_id_;
    }
    ids.push_back(value);
  }
  return ids;
}

std::vector<std::string> Vocabulary::decode(const std::vector<int64_t>& ids) const {
  std::vector<std::string> out;
  for (const int64_t value : ids) {
    if (value == eos_id_) break;
    if (value == sos_id_ || value == pad_id_) continue;
    out.push_back(word(value));
  }
  return out;
}

std::string Vocabulary::decode_text(const std::vector<int64_t>& ids) const {
  std::string text;
  for (const auto& w : decode(ids)) {
    if (!text.empty()) text += ' ';
    text += w;
  }
  return text;
}

std::string Vocabulary::to_json() const {
  nlohmann::json doc = {{"format", "expnet-vocabulary"}, {"version", 1}, {"words", words_},
                        {"sos", sos_},                  {"eos", eos_},  {"pad", pad_}, {"unk", unk_}};
  if (del_id_ >= 0) doc["del"] = del_;
  return doc.dump();
}

Vocabulary Vocabulary::from_json(const std::string& text, const std::string& source) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    throw std::runtime_error(source + ": not valid JSON (" + e.what() + ")");
  }
  // Checked without value(), which throws its own type error when "format" is not a string.
  if (!doc.is_object() || !doc.contains("format") || doc["format"] != "expnet-vocabulary" || !doc.contains("words") ||
      !doc["words"].is_array())
    throw std::runtime_error(source + ": not an expnet vocabulary (expected {\"format\":\"expnet-vocabulary\",\"words\":[...]})");
  if (doc.contains("del") && doc["del"] != "DEL")
    throw std::runtime_error(source + ": \"del\" must be \"DEL\" (PNAIC's delete token), got " + doc["del"].dump());
  const auto& words = doc["words"];
  for (size_t i = 0; i < words.size(); ++i)
    if (!words[i].is_string())
      throw std::runtime_error(source + ": word " + std::to_string(i) + " is " + std::string(words[i].type_name()) +
                               " " + words[i].dump().substr(0, 40) + ", not a string: every word must be a JSON string");
  for (const char* key : {"sos", "eos", "pad", "unk"})
    if (doc.contains(key) && !doc[key].is_string())
      throw std::runtime_error(source + ": \"" + key + "\" must be a string, not " + doc[key].dump().substr(0, 40));
  try {
    return Vocabulary(words.get<std::vector<std::string>>(), doc.value("sos", "SOS"), doc.value("eos", "EOS"),
                      doc.value("pad", "PAD"), doc.value("unk", "UNK"));
  } catch (const std::exception& e) {
    throw std::runtime_error(source + ": " + e.what());
  }
}

Vocabulary Vocabulary::load_json(const std::string& path) {
  return from_json(read_input_file(path, "vocabulary", kMaxVocabularyBytes), path);
}

void Vocabulary::save_json(const std::string& path) const { write_file_atomic(path, to_json()); }

}  // namespace expnet

// Word <-> id mapping of a captioning model. Special tokens are looked up by
// name in the word list (the released COCO vocabulary has EOS 77, PAD 78,
// SOS 79, UNK 80); nothing assumes fixed ids.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace expnet {

class Vocabulary {
 public:
  Vocabulary() = default;
  // Throws std::invalid_argument when a word repeats or SOS/EOS/PAD is missing.
  explicit Vocabulary(std::vector<std::string> words, std::string sos = "SOS", std::string eos = "EOS",
                      std::string pad = "PAD", std::string unk = "UNK");

  int64_t size() const { return static_cast<int64_t>(words_.size()); }
  bool empty() const { return words_.empty(); }
  const std::vector<std::string>& words() const { return words_; }
  // -1 when absent.
  int64_t id(const std::string& word) const;
  // Throws std::out_of_range naming the id.
  const std::string& word(int64_t id) const;

  int64_t sos_id() const { return sos_id_; }
  int64_t eos_id() const { return eos_id_; }
  int64_t pad_id() const { return pad_id_; }
  int64_t unk_id() const { return unk_id_; }  // -1 when the vocabulary has no UNK
  // PNAIC's "this group is invalid" token (expnet/model/pnaic.h); -1 when absent
  // (every AIC vocabulary).
  int64_t del_id() const { return del_id_; }
  // This vocabulary with DEL appended as the last id (the ids of every other
  // word unchanged). Throws std::invalid_argument when it already has one.
  Vocabulary with_del() const;
  const std::string& sos_word() const { return sos_; }
  const std::string& eos_word() const { return eos_; }

  // Tokens -> ids; words not in the vocabulary become UNK (or throw if there is none).
  std::vector<int64_t> encode(const std::vector<std::string>& tokens) const;
  // Ids -> words, skipping SOS and PAD and stopping at EOS.
  std::vector<std::string> decode(const std::vector<int64_t>& ids) const;
  // decode() joined by single spaces.
  std::string decode_text(const std::vector<int64_t>& ids) const;

  // Our JSON format: {"format":"expnet-vocabulary","version":1,"words":[...],
  // "sos":"SOS","eos":"EOS","pad":"PAD","unk":"UNK"}, plus "del":"DEL" when the
  // vocabulary has DEL.
  std::string to_json() const;
  static Vocabulary from_json(const std::string& text, const std::string& source = "vocabulary");
  static Vocabulary load_json(const std::string& path);
  void save_json(const std::string& path) const;  // atomic

 private:
  std::vector<std::string> words_;
  std::unordered_map<std::string, int64_t> index_;
  std::string sos_, eos_, pad_, unk_, del_ = "DEL";
  int64_t sos_id_ = -1, eos_id_ = -1, pad_id_ = -1, unk_id_ = -1, del_id_ = -1;
};

}  // namespace expnet

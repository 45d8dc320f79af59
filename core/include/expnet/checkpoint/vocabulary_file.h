// Reading a vocabulary file in either format, chosen by content: the
// authors' pickle (demo_coco_tokens.pickle: {'word2idx_dict', 'idx2word_list',
// 'sos_str', 'eos_str'}) or our JSON (Vocabulary::to_json).
#pragma once

#include <string>
#include <string_view>

#include "expnet/text/vocabulary.h"

namespace expnet {

// Throws std::runtime_error naming the file and the reason.
Vocabulary load_vocabulary(const std::string& path);
// Same from bytes already read; `source` names them in errors.
Vocabulary parse_vocabulary(std::string_view bytes, const std::string& source);

}  // namespace expnet

// A PNAIC run's teacher, student config and vocabulary, and their checks (see
// expnet/train/pnaic_teacher.h).
#include "expnet/train/pnaic_teacher.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "expnet/checkpoint/pth_file.h"
#include "expnet/checkpoint/pth_writer.h"
#include "expnet/data/dataset.h"
#include "expnet/model/demo_model.h"
#include "expnet/system/digest.h"
#include "expnet/train/train_config.h"

namespace expnet {
namespace {

std::string in_quotes(const std::string& path) { return "'" + path + "'"; }

// The first key whose value differs between two model configs ("" = none).
std::string first_difference(const ModelConfig& a, const ModelConfig& b) {
  const auto ja = nlohmann::json::parse(a.to_json()), jb = nlohmann::json::parse(b.to_json());
  for (const auto& item : ja.items())
    if (!jb.contains(item.key()) || jb[item.key()] != item.value())
      return item.key() + " (" + item.value().dump() + " vs " + (jb.contains(item.key()) ? jb[item.key()].dump() : "absent") + ")";
  for (const auto& item : jb.items())
    if (!ja.contains(item.key())) return item.key();
  return "";
}

StoredMetadata metadata_of(const std::string& path, const std::string& role) {
  if (!std::filesystem::exists(path))
    throw std::runtime_error(role + " " + in_quotes(path) + " does not exist; check the path");
  PthFile file(path);
  auto meta = read_metadata(file);
  if (!meta.config_json || !meta.vocabulary_json)
    throw std::runtime_error(role + " " + in_quotes(path) + " carries no model config or vocabulary (not one of our "
                             "checkpoints); export it with `expnet checkpoint export --model ... --vocab ...` first");
  return meta;
}

}  // namespace

bool is_pnaic_run(const TrainConfig& config) {
  return std::any_of(config.stages.begin(), config.stages.end(),
                     [](const StageConfig& s) { return s.objective == Objective::pnaic; });
}

PnaicRun prepare_pnaic_run(const TrainConfig& config, const std::string& device, const std::string& source) {
  PnaicRun run;
  run.teacher_path = config.teacher == "demo" ? demo_checkpoint_path() : config.teacher;
  const std::string role = "teacher " + in_quotes(run.teacher_path) + (config.teacher == "demo" ? " (demo)" : "") + " of " + source;
  const auto meta = metadata_of(run.teacher_path, "the teacher of " + source);
  const auto teacher_config = ModelConfig::from_json(*meta.config_json, run.teacher_path);
  if (teacher_config.is_pnaic())
    throw std::runtime_error(role + " is itself a PNAIC model (pnaic_groups " + std::to_string(teacher_config.pnaic_groups) +
                             "); the teacher must be an AIC checkpoint (pnaic_groups 0), e.g. demo or an xe/scst run's best.pth");
  const auto teacher_vocab = Vocabulary::from_json(*meta.vocabulary_json, run.teacher_path);
  if (teacher_vocab.del_id() >= 0)
    throw std::runtime_error(role + " has DEL in its vocabulary, which only PNAIC models have; name an AIC checkpoint");
  // K: the recipe's pnaic_groups, else its model's; both given must agree.
  int64_t k = config.pnaic_groups;
  if (!config.model_json.empty()) {
    const auto model = ModelConfig::from_json(config.model_json, source + " model");
    if (k > 0 && model.pnaic_groups > 0 && model.pnaic_groups != k)
      throw std::runtime_error(source + ": pnaic_groups " + std::to_string(k) + " and the model's pnaic_groups " +
                               std::to_string(model.pnaic_groups) + " differ; give K once");
    if (k == 0) k = model.pnaic_groups;
    ModelConfig as_teacher = model;
    as_teacher.pnaic_groups = 0;
    const auto diff = first_difference(as_teacher, teacher_config);
    if (!diff.empty())
      throw std::runtime_error(source + ": its model differs from the config of teacher " + in_quotes(run.teacher_path) +
                               " in " + diff +
                               "; a PNAIC student is the teacher's model plus pnaic_groups: drop 'model' or make it the teacher's");
  }
  if (k < 1)
    throw std::runtime_error(source + ": K < 1 (pnaic_groups " + std::to_string(k) +
                             "); set pnaic_groups >= 1 in the recipe (or in its model)");
  run.student_config = teacher_config;
  run.student_config.pnaic_groups = k;
  run.student_config.validate(source + " PNAIC model");
  run.student_vocab = teacher_vocab.with_del();
  run.teacher_sha1 = sha1_file(run.teacher_path);
  ModelSource ms;
  ms.checkpoint = run.teacher_path;
  ms.device = device;
  run.teacher = Captioner::load(ms);
  return run;
}

void check_student_checkpoint(const std::string& path, const PnaicRun& run, const std::string& role) {
  const auto meta = metadata_of(path, role);
  const auto config = ModelConfig::from_json(*meta.config_json, path);
  const auto vocab = Vocabulary::from_json(*meta.vocabulary_json, path);
  const std::string what = role + " " + in_quotes(path);
  if (!config.is_pnaic())
    throw std::runtime_error(what + " is an AIC checkpoint; a PNAIC run starts from its teacher ('teacher'), so "
                             "name a PNAIC checkpoint of K = " + std::to_string(run.student_config.pnaic_groups) +
                             " here or drop it");
  if (vocab.del_id() < 0)
    throw std::runtime_error(what + " is a PNAIC checkpoint (pnaic_groups " + std::to_string(config.pnaic_groups) +
                             ") without DEL in its vocabulary; re-export it with its training vocabulary (the teacher's "
                             "plus DEL): `expnet checkpoint export --vocab VOCAB.json`, or start without it");
  if (config.pnaic_groups != run.student_config.pnaic_groups)
    throw std::runtime_error(what + " has pnaic_groups " + std::to_string(config.pnaic_groups) + ", the run K = " +
                             std::to_string(run.student_config.pnaic_groups) + "; set pnaic_groups to match or drop it");
  if (vocab.words() != run.student_vocab.words())
    throw std::runtime_error(what + "'s vocabulary differs from the teacher " + in_quotes(run.teacher_path) +
                             "'s plus DEL (" + std::to_string(vocab.size()) + " vs " +
                             std::to_string(run.student_vocab.size()) +
                             " words); name the teacher this checkpoint was distilled from");
  const auto diff = first_difference(config, run.student_config);
  if (!diff.empty())
    throw std::runtime_error(what + "'s model differs from the teacher's plus pnaic_groups in " + diff +
                             "; name the teacher it was distilled from");
}

TeacherCaptions teacher_captions(Captioner& teacher, const Dataset& dataset, const std::vector<size_t>& images,
                                 int beam, int max_len, int batch) {
  DecodingOptions options = teacher.carried_decoding().apply_to(DecodingOptions{});
  options.search = SearchKind::Beam;
  options.beam_size = beam;
  options.num_hypotheses = 1;
  options.max_length = static_cast<int>(std::min<int64_t>(max_len + 1, teacher.config().max_seq_len));  // counts SOS
  options.return_token_logprobs = false;
  return [&teacher, &dataset, images, options, batch](size_t first, size_t count) {
    std::vector<std::string> paths;
    for (size_t i = first; i < first + count; ++i) paths.push_back(dataset.image_path(dataset.images[images.at(i)]));
    const auto captioned = teacher.caption_files(paths, options, {}, batch);
    std::vector<std::vector<std::string>> out;
    for (const auto& item : captioned) {
      if (!item.error.empty())
        throw std::runtime_error("distillation: the teacher could not caption '" + item.image + "': " + item.error);
      out.push_back(teacher.vocabulary().decode(item.captions.front().tokens));
    }
    return out;
  };
}

}  // namespace expnet

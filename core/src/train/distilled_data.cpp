// A PNAIC run's training captions from its teacher (see distilled_data.h).
#include "train/distilled_data.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "expnet/train/distillation_targets.h"
#include "expnet/train/distributed.h"
#include "expnet/train/pnaic_teacher.h"
#include "expnet/train/train_config.h"

namespace expnet {

void use_distillation_targets(TrainData& data, PnaicRun& run, const TrainConfig& config, const std::string& out_dir,
                              ProcessGroup* group, bool progress) {
  std::vector<size_t> images;
  DistillationSpec spec;
  for (size_t i = 0; i < data.dataset.images.size(); ++i)
    if (is_training_split(data.dataset.images[i].split)) {
      images.push_back(i);
      // Relative to the dataset's image root: a moved run folder keeps its targets.
      const auto& image = data.dataset.images[i];
      spec.images.push_back(image.filepath.empty() ? image.filename : image.filepath + "/" + image.filename);
    }
  spec.dir = out_dir + "/distillation";
  spec.teacher = config.teacher;
  spec.teacher_sha1 = run.teacher_sha1;
  spec.beam = config.distillation_beam;
  spec.max_len = config.validation_max_len;
  DistillationTargets targets;
  if (!group || group->rank() == 0) {
    const auto started = std::chrono::steady_clock::now();
    size_t next_report = 0;
    const auto report = [&](size_t done, size_t total) {
      if (!progress || done < next_report) return;
      next_report = done + std::max<size_t>(1, total / 10);
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      spdlog::info("distillation: {}/{} training images captioned by the teacher ({:.0f} s)", done, total, secs);
    };
    targets = make_distillation_targets(
        spec, teacher_captions(*run.teacher, data.dataset, images, spec.beam, spec.max_len), report);
    spdlog::info("distillation targets {}: {} images reused, {} captioned now", targets.path, targets.reused,
                 targets.computed);
    if (group) group->set_flag("distillation");
  } else {
    // Captioning can outlast the collective timeout: wait on the flag instead.
    group->wait_flag("distillation", std::chrono::hours(12));
    targets = read_distillation_targets(spec);
  }
  for (size_t k = 0; k < images.size(); ++k) {
    auto& image = data.dataset.images[images[k]];
    Caption caption;
    caption.tokens = targets.captions[k];
    for (const auto& word : caption.tokens) caption.raw += (caption.raw.empty() ? "" : " ") + word;
    image.captions = {caption};
  }
  data.vocab = std::make_unique<Vocabulary>(run.student_vocab);
  data.reward->set_vocabulary(data.vocab->words(), data.vocab->eos_id());
}

}  // namespace expnet

#include "expnet/train/run_csv.h"

#include <iomanip>

#include "expnet/system/atomic_file.h"

namespace expnet {

void write_run_csv(std::ostream& out, const RunStore& store, const RunInfo& run) {
  out << "kind,stage,epoch,step,loss,lr,grad_norm,images_per_s,skipped,wall_s,bleu1,bleu2,bleu3,bleu4,rouge_l,cider_d\n"
      << std::setprecision(10);
  for (const auto& s : store.steps(run.id))
    out << "step," << s.stage << "," << s.epoch << "," << s.step << "," << s.loss << "," << s.lr << "," << s.grad_norm
        << "," << s.images_per_s << "," << s.skipped << "," << s.wall_s << ",,,,,,\n";
  for (const auto& v : store.validations(run.id))
    out << "validation," << v.stage << "," << v.epoch << "," << v.step << ",,,,,,," << v.bleu1 << "," << v.bleu2 << ","
        << v.bleu3 << "," << v.bleu4 << "," << v.rouge_l << "," << v.cider_d << "\n";
}

void write_run_csv_file(const RunStore& store, const RunInfo& run, const std::string& path) {
  write_file_atomic(path, [&](std::ostream& out) { write_run_csv(out, store, run); });
}

}  // namespace expnet

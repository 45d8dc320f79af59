#include "caption/alttextsaver.h"

#include <QThread>

#include <map>
#include <utility>

#include "common/localpath.h"
#include "expnet/metadata/alt_text_model.h"

AltTextSaver::~AltTextSaver() {
  cancelled_ = true;
  if (thread_) thread_->wait();
}

void AltTextSaver::save(const QVector<AltTextJob>& jobs, const AltTextChoices& choices) {
  if (thread_) return;
  cancelled_ = false;
  thread_ = QThread::create([this, jobs, choices] {
    AltTextTotals& totals = totals_ = AltTextTotals();
    // Each model's record (its file's SHA-256) computed once per save, here rather than on the UI thread.
    std::map<std::pair<QString, QString>, expnet::AltTextOptions> records;
    for (int k = 0; k < jobs.size(); ++k) {
      if (cancelled_) {
        totals.left = int(jobs.size()) - k;
        break;
      }
      const AltTextJob& job = jobs[k];
      expnet::AltTextOutcome outcome;
      try {
        auto found = records.find({job.builtinModel, job.checkpoint});
        if (found == records.end()) {
          expnet::AltTextOptions options;
          options.sidecar = choices.sidecar;
          options.overwrite = choices.overwrite;
          options.keep_mtime = choices.keepMtime;
          expnet::name_alt_text_model(options, job.builtinModel.toStdString(), localPathBytes(job.checkpoint));
          found = records.emplace(std::make_pair(job.builtinModel, job.checkpoint), options).first;
        }
        const std::string caption = job.caption.toStdString(), model = job.modelCaption.toStdString();
        outcome =
            expnet::write_alt_text(localPathBytes(job.path), caption, found->second, caption == model ? "" : model);
      } catch (const std::exception& e) {  // the model's file could not be read
        outcome = {"failed", e.what(), ""};
      }
      totals.written += outcome.action == "written";
      totals.sidecars += outcome.action == "sidecar";
      totals.skipped += outcome.action == "skipped";
      totals.failed += outcome.action == "failed";
      emit fileSaved(job.row, QString::fromStdString(outcome.action), QString::fromStdString(outcome.reason));
    }
  });
  // Queued to this thread, after every fileSaved: a new save may start from the slot.
  connect(thread_, &QThread::finished, this, [this] {
    thread_->deleteLater();
    thread_ = nullptr;
    emit finished(totals_);
  });
  thread_->start();
}

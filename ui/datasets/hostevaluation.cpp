#include "datasets/hostevaluation.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

HostEvaluation::HostEvaluation(QObject* parent) : QObject(parent) {
  connect(&command_, &HostCommand::progress, this, [this](qint64 done, qint64 total) {
    emit progress(static_cast<int>(done), static_cast<int>(total));
  });
  connect(&command_, &HostCommand::finished, this, [this](int exitCode, const QByteArray& out) {
    if (cancelling_) {
      cancelling_ = false;
      emit cancelled();
      return;
    }
    const QJsonObject answer = QJsonDocument::fromJson(out).object();
    const QJsonObject about = answer["evaluation"].toObject();
    if (exitCode != 0 || about.isEmpty()) {
      const QString why = command_.lastError();
      emit failed(why.isEmpty() ? QStringLiteral("host '%1': expnet eval ended with status %2 and said nothing").arg(host_).arg(exitCode)
                                : why);
      return;
    }
    HostEvaluationResult result;
    result.id = about["id"].toInteger();
    result.images = static_cast<int>(answer["per_image"].toArray().size());
    result.resumed = about["resumed"].toInt();
    result.ciderD = answer["corpus"].toObject()["CIDEr"].toDouble();
    emit evaluated(result);
  });
}

QStringList HostEvaluation::arguments(const EvaluationJob& job, const QString& host, const QString& datasetThere,
                                      const QString& deviceThere) {
  // As the local evaluation: beam B (1 = greedy) over the checkpoint's own options.
  QStringList args{"eval", "--host", host, "--dataset", datasetThere, "--split", job.split,
                   "--limit", QString::number(job.limit), "--device", deviceThere,
                   "--home-dataset", job.dataset, "--home-db", job.db, "--json"};
  if (job.beam > 1)
    args << "--search" << "beam" << "--beam" << QString::number(job.beam);
  else
    args << "--search" << "greedy" << "--beam" << "1";
  if (!job.model.isEmpty()) args << "--model" << job.model;
  if (!job.checkpoint.isEmpty()) args << "--checkpoint" << job.checkpoint;
  if (!job.vocab.isEmpty()) args << "--vocab" << job.vocab;
  return args;
}

void HostEvaluation::start(const EvaluationJob& job, const QString& host, const QString& datasetThere,
                           const QString& deviceThere) {
  if (running()) return;
  host_ = host;
  cancelling_ = false;
  command_.start(arguments(job, host, datasetThere, deviceThere));
}

void HostEvaluation::cancel() {
  if (!running()) return;
  cancelling_ = true;
  command_.terminate();
}

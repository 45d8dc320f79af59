// A PNAIC stage under --nproc (c10d Gloo on loopback): 2 ranks of batch b end
// with the parameters of 1 process of batch 2b (the group divisions are drawn
// per caption, not per rank), and rank 0 alone makes the distillation targets.
#include <torch/torch.h>

#include <filesystem>

#include "dist_test_util.h"
#include "pnaic_test_util.h"

namespace {

QString write_recipe(const QString& dir, const std::string& teacher, int batch) {
  const QString path = dir + "/recipe.json";
  QFile out(path);
  out.open(QIODevice::WriteOnly);
  const auto stage = R"(, "backbone": "train", "batch": )" + std::to_string(batch) +
                     R"(, "dropout": 0.0, "drop_path": 0.0, "clip": 1.0)";
  out.write(QByteArray::fromStdString(expnet_test::pnaic_recipe(teacher, "", stage)));
  return path;
}

}  // namespace

class TestPnaicDistributed : public QObject {
  Q_OBJECT

 private slots:
  void twoRanksOfBatchBEqualOneProcessOfBatch2B() {
    const QString dir = expnet_test::makeTempDir("pnaic_dist");
    const auto teacher = expnet_test::save_model(dir, "teacher.pth", expnet_test::tiny_model(), expnet_test::teacher_vocab());
    const auto train = [&](const QString& name, int batch, const QStringList& how) {
      const QString out = dir + "/" + name;
      QDir().mkpath(out);
      const auto r = expnet_test::runProcess(expnet_test::cliPath(),
                                             QStringList{"train", "--config", write_recipe(out, teacher, batch), "--out",
                                                         out + "/run", "--no-progress", "--json"} + how);
      if (r.exitCode != 0) qWarning("%s", r.err.constData());
      return r.exitCode == 0 ? out + "/run/final.pth" : QString();
    };
    const QString two = train("two_ranks", 2, {"--nproc", "2"});
    const QString one = train("one_double_batch", 4, {"--threads", "1"});
    const QString single = train("one_single_batch", 2, {"--threads", "1"});  // control
    QVERIFY(!two.isEmpty() && !one.isEmpty() && !single.isEmpty());
    const double same = max_abs_difference(two, one);
    const double control = max_abs_difference(two, single);
    qInfo("max |2 ranks x b - 1 x 2b| = %g, max |2 ranks x b - 1 x b| = %g", same, control);
    QVERIFY2(same <= 1e-5, qPrintable(QString::number(same)));
    QVERIFY2(control > 1e-5, qPrintable(QString::number(control)));  // 100x what the 2 ranks differ by
    // One targets file, the same as the single process's.
    const auto targets_of = [&](const QString& name) {
      std::vector<std::string> files;
      for (const auto& e : std::filesystem::directory_iterator((dir + "/" + name + "/run/distillation").toStdString()))
        files.push_back(e.path().filename().string());
      return files;
    };
    QCOMPARE(targets_of("two_ranks").size(), size_t(1));
    QCOMPARE(targets_of("two_ranks"), targets_of("one_double_batch"));
  }
};

QTEST_GUILESS_MAIN(TestPnaicDistributed)
#include "test_pnaic_distributed.moc"

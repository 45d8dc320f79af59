// `expnet model-info --model official` against the released model's state_dict
// layout (official_state_dict.json): names, shapes, dtypes, kinds and the total.
// Builds the 234M-parameter model once (935 MB), hence its own (slow) test.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include "support/fixtures.h"

namespace {
QJsonObject run_json(const QStringList& args) {
  const auto r = expnet_test::runProcess(expnet_test::cliPath(), args);
  if (r.exitCode != 0) qWarning("%s", r.err.constData());
  return QJsonDocument::fromJson(r.out).object();
}
}  // namespace

class TestModelOfficial : public QObject {
  Q_OBJECT
 private slots:
  void officialModelInfoEqualsTheReleasedStateDict() {
    // Builds the 234M-parameter official model once (in the CLI process).
    EXPNET_FIXTURE(path, "reference/official_state_dict.json");
    QFile file(path);
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QJsonObject reference = QJsonDocument::fromJson(file.readAll()).object();
    const QJsonObject ours = run_json({"model-info", "--model", "official", "--vocab-size", "10000", "--json",
                                       "--threads", "2"});
    QVERIFY2(!ours.isEmpty(), "model-info printed no JSON");
    QCOMPARE(ours.value("total_parameters").toInteger(), reference.value("total_parameters").toInteger());
    QCOMPARE(ours.value("total_parameters").toInteger(), qint64{233803076});
    const auto key = [](const QJsonValue& v) {
      const QJsonObject e = v.toObject();
      return e.value("name").toString() + QLatin1Char(' ') +
             QString::fromUtf8(QJsonDocument(e.value("shape").toArray()).toJson(QJsonDocument::Compact)) +
             QLatin1Char(' ') + e.value("dtype").toString() + QLatin1Char(' ') + e.value("kind").toString();
    };
    QStringList a, b;
    for (const auto& v : ours.value("entries").toArray()) a << key(v);
    for (const auto& v : reference.value("entries").toArray()) b << key(v);
    QCOMPARE(a.size(), 520);
    a.sort();
    b.sort();
    for (qsizetype i = 0; i < std::min(a.size(), b.size()); ++i) QCOMPARE(a[i], b[i]);
    QCOMPARE(a.size(), b.size());
  }

};

QTEST_GUILESS_MAIN(TestModelOfficial)
#include "test_model_official.moc"

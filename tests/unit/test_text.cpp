#include <QtTest>

#include "expnet/text/caption_text.h"
#include "expnet/text/vocabulary.h"
#include "support/fixtures.h"

using expnet::clean_caption_text;

class TestText : public QObject {
  Q_OBJECT
 private slots:
  void captionCleaning() {
    QCOMPARE(QString::fromStdString(clean_caption_text("A man, riding a HORSE.")), QStringLiteral("a man riding a horse"));
    QCOMPARE(QString::fromStdString(clean_caption_text("don't stop -- now...")), QStringLiteral("don t stop now"));
    // Other symbols stay as tokens: they are the first ids of the released vocabulary.
    QCOMPARE(QString::fromStdString(clean_caption_text("a \"sign\" (red)/blue #1 & $5")),
             QStringLiteral("a \" sign \" ( red ) / blue # 1 & $ 5"));
    QCOMPARE(QString::fromStdString(clean_caption_text("  ")), QString());
    QCOMPARE(QString::fromStdString(clean_caption_text("Café ÜBER straße")), QStringLiteral("café über straße"));
    QCOMPARE(QString::fromStdString(clean_caption_text("a_b")), QStringLiteral("a _ b"));
  }
  void vocabularyRoundTrip() {
    expnet::Vocabulary vocab({"PAD", "SOS", "EOS", "UNK", "a", "dog"});
    QCOMPARE(vocab.sos_id(), 1);
    QCOMPARE(vocab.eos_id(), 2);
    const auto ids = vocab.encode({"a", "cat", "dog"});
    QCOMPARE(ids, (std::vector<int64_t>{4, 3, 5}));
    QCOMPARE(QString::fromStdString(vocab.decode_text({1, 4, 5, 2, 4})), QStringLiteral("a dog"));
    const auto again = expnet::Vocabulary::from_json(vocab.to_json());
    QCOMPARE(again.words(), vocab.words());
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, expnet::Vocabulary({"a", "a", "SOS", "EOS", "PAD"}));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, expnet::Vocabulary({"a", "EOS", "PAD"}));
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, expnet::Vocabulary::from_json("{bad"));
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, vocab.word(99));
  }
};

QTEST_GUILESS_MAIN(TestText)
#include "test_text.moc"

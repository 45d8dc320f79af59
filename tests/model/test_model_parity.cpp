// Parity with the authors' PyTorch ExpansionNet v2 on the tiny fixture: the
// reference weights in our modules must give the reference's backbone
// features, encoder output and decoder log-probs (within 1e-4).
#include <torch/torch.h>

#include <QtTest>

#include "expnet/model/layers.h"
#include "expnet/model/expansion_net.h"
#include "reference_tiny.h"
#include "support/fixtures.h"

using expnet_test::compareTensors;

namespace {
constexpr double kTolerance = 1e-4;

#define EXPECT_CLOSE(label, ours, expected)                                                             \
  do {                                                                                                  \
    const auto diff = compareTensors((ours), (expected));                                               \
    QVERIFY2(diff.shape_error.isEmpty(), qPrintable(QStringLiteral(label ": ") + diff.shape_error));    \
    qInfo("%s: max |diff| = %.3g at %s", label, diff.max_abs, qPrintable(diff.where));                  \
    QVERIFY2(diff.max_abs <= kTolerance,                                                                \
             qPrintable(QStringLiteral(label ": max |diff| %1 > %2 at %3").arg(diff.max_abs).arg(kTolerance).arg(diff.where))); \
  } while (0)
}  // namespace

class TestModelParity : public QObject {
  Q_OBJECT
  expnet::ExpansionNet model_{nullptr};
  expnet_test::TinyReference reference_;
  QString error_;

 private slots:
  void initTestCase() {
    EXPNET_FIXTURE(checkpoint, "reference/tiny/checkpoint.pth");
    EXPNET_FIXTURE(expected, "reference/tiny/expected.bin");
    error_ = expnet_test::loadTinyReference(QFileInfo(checkpoint).absolutePath(), model_, reference_);
    QVERIFY2(error_.isEmpty(), qPrintable(error_));
    torch::set_num_threads(1);
  }

  void configIsTheTinyPreset() { QVERIFY(reference_.config == expnet::tiny_model_config()); }

  void backboneMatchesReference() {
    torch::NoGradGuard no_grad;
    const auto features = model_->backbone(reference_.expected.at("images"));
    EXPECT_CLOSE("swin_features", features, reference_.expected.at("swin_features"));
  }

  void encoderMatchesReference() {
    torch::NoGradGuard no_grad;
    // From our own backbone output (the whole chain) and from the reference
    // features (the encoder alone).
    const auto chained = model_->encode(model_->backbone(reference_.expected.at("images")));
    EXPECT_CLOSE("encoder_output", chained, reference_.expected.at("encoder_output"));
    const auto alone = model_->encode(reference_.expected.at("swin_features"));
    EXPECT_CLOSE("encoder_output (from reference features)", alone, reference_.expected.at("encoder_output"));
  }

  void decoderMatchesReference() {
    torch::NoGradGuard no_grad;
    const auto& tokens = reference_.expected.at("decoder_input");
    const auto enc = model_->encode(model_->backbone(reference_.expected.at("images")));
    const auto mask = expnet::causal_self_mask(tokens, reference_.pad_id);
    const auto cross = expnet::cross_attention_mask(tokens, reference_.pad_id, enc.size(1));
    const auto log_probs = model_->decode(enc, tokens, mask, cross);
    EXPECT_CLOSE("decoder_logprobs", log_probs, reference_.expected.at("decoder_logprobs"));
    const auto from_reference_enc = model_->decode(reference_.expected.at("encoder_output"), tokens, mask);
    EXPECT_CLOSE("decoder_logprobs (from reference encoder output)", from_reference_enc,
                 reference_.expected.at("decoder_logprobs"));
  }

  void batchOfTwoGivesTheSameRows() {
    // Batching must not mix images: the same image twice gives the same rows.
    torch::NoGradGuard no_grad;
    const auto images = reference_.expected.at("images").repeat({2, 1, 1, 1});
    const auto tokens = reference_.expected.at("decoder_input").repeat({2, 1});
    const auto enc = model_->encode(model_->backbone(images));
    const auto log_probs = model_->decode(enc, tokens, expnet::causal_self_mask(tokens, reference_.pad_id));
    EXPECT_CLOSE("decoder_logprobs row 1 of 2", log_probs[1].unsqueeze(0), reference_.expected.at("decoder_logprobs"));
  }

  void dropoutIsInactiveInEval() {
    torch::NoGradGuard no_grad;
    expnet::DropoutRates rates;
    rates.enc = rates.dec = rates.enc_input = rates.dec_input = rates.other = 0.3;
    rates.swin_drop = rates.swin_attn_drop = rates.swin_drop_path = 0.1;
    model_->set_dropout(rates);
    model_->eval();
    const auto enc = model_->encode(model_->backbone(reference_.expected.at("images")));
    model_->set_dropout({});
    EXPECT_CLOSE("encoder_output with dropout rates set, eval()", enc, reference_.expected.at("encoder_output"));
    // And in train() mode the same rates do change the output.
    model_->set_dropout(rates);
    model_->train();
    torch::manual_seed(1);
    const auto noisy = model_->encode(model_->backbone(reference_.expected.at("images")));
    model_->eval();
    model_->set_dropout({});
    QVERIFY(compareTensors(noisy, reference_.expected.at("encoder_output")).max_abs > 1e-3);
  }

  void paddedTokensDoNotChangeRealPositions() {
    // Right padding (reference semantics): the real positions' log-probs are
    // those of the unpadded sequence.
    torch::NoGradGuard no_grad;
    const auto& tokens = reference_.expected.at("decoder_input");
    const int64_t T = tokens.size(1);
    const auto short_tokens = tokens.narrow(1, 0, T - 3);
    const auto padded = torch::cat({short_tokens, torch::full({1, 3}, reference_.pad_id, torch::kLong)}, 1);
    const auto enc = reference_.expected.at("encoder_output");
    const auto full = model_->decode(enc, padded, expnet::causal_self_mask(padded, reference_.pad_id),
                                     expnet::cross_attention_mask(padded, reference_.pad_id, enc.size(1)));
    EXPECT_CLOSE("padded decode, real positions", full.narrow(1, 0, T - 3),
                 reference_.expected.at("decoder_logprobs").narrow(1, 0, T - 3));
  }
};

QTEST_GUILESS_MAIN(TestModelParity)
#include "test_model_parity.moc"

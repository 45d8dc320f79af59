// The tiny reference model in the shared fixtures (its config, checkpoint,
// vocabulary and an image): the model the studio's page tests load.
#pragma once

#include "support/fixtures.h"

// Sets the four QStrings to the fixtures' paths, or skips (fails under
// EXPNET_REQUIRE_FIXTURES=1) the current test function when one is missing.
#define EXPNET_TINY_REFERENCE(model, checkpoint, vocab, image)                \
  do {                                                                        \
    EXPNET_FIXTURE(tinyModel_, "reference/tiny/model_config.json");           \
    EXPNET_FIXTURE(tinyCheckpoint_, "reference/tiny/checkpoint.pth");         \
    EXPNET_FIXTURE(tinyVocab_, "reference/tiny/vocab.pickle");                \
    EXPNET_FIXTURE(tinyImage_, "reference/tiny/image0.png");                  \
    model = tinyModel_;                                                       \
    checkpoint = tinyCheckpoint_;                                             \
    vocab = tinyVocab_;                                                       \
    image = tinyImage_;                                                       \
  } while (0)

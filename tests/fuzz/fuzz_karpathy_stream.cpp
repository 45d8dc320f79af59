// libFuzzer harness of the streaming Karpathy reader of the dataset index
// (core/src/data/karpathy_stream.h), checked against load_dataset: the stream
// promises read_karpathy's images, ids, splits and captions. Contract: the
// images or std::runtime_error; the stream reads a file exactly when
// load_dataset does (but for simdjson's nesting limit), with the same images.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "data/karpathy_stream.h"
#include "expnet/data/dataset.h"
#include "fuzz_scratch.h"

namespace {

bool same_image(const expnet::DatasetImage& a, const expnet::DatasetImage& b) {
  if (a.cocoid != b.cocoid || a.filepath != b.filepath || a.filename != b.filename || a.split != b.split ||
      a.width != b.width || a.height != b.height || a.captions.size() != b.captions.size())
    return false;
  for (size_t i = 0; i < a.captions.size(); ++i)
    if (a.captions[i].raw != b.captions[i].raw || a.captions[i].tokens != b.captions[i].tokens) return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = expnet_fuzz::scratch_file("dataset_coco.json", data, size);
  expnet::DatasetLoadOptions options;
  options.format = expnet::DatasetFormat::Karpathy;
  std::vector<expnet::DatasetImage> streamed;
  try {
    expnet::KarpathyStream stream(path, options);
    stream.read([&](expnet::DatasetImage&& image, size_t index, size_t offset) {
      if (index != streamed.size()) std::abort();
      (void)stream.place(index, offset);
      streamed.push_back(std::move(image));
    });
    if (streamed.size() != stream.images()) std::abort();
  } catch (const std::runtime_error& refused) {
    // simdjson's nesting limit (1024) is the one refusal load_dataset does not share.
    if (std::strstr(refused.what(), "too deep")) return 0;
    try {
      (void)expnet::load_dataset(path, options);
    } catch (const std::runtime_error&) {
      return 0;
    }
    std::fprintf(stderr, "load_dataset reads a file the stream refused: %s\n", refused.what());
    std::abort();
  }
  expnet::Dataset loaded;
  try {
    loaded = expnet::load_dataset(path, options);
  } catch (const std::runtime_error& e) {
    std::fprintf(stderr, "the stream read %zu images, load_dataset refused the file: %s\n", streamed.size(), e.what());
    std::abort();
  }
  if (loaded.images.size() != streamed.size()) {
    std::fprintf(stderr, "the stream read %zu images, load_dataset %zu\n", streamed.size(), loaded.images.size());
    std::abort();
  }
  for (size_t i = 0; i < streamed.size(); ++i) {
    if (!same_image(streamed[i], loaded.images[i])) {
      std::fprintf(stderr, "images[%zu] differs between the stream and load_dataset\n", i);
      std::abort();
    }
  }
  return 0;
}

// libFuzzer harness of load_dataset on a .json file (expnet/data/dataset.h):
// Karpathy's dataset_coco.json or a COCO captions file, told apart by content.
// Contract: a Dataset or std::runtime_error naming the file; a dataset read
// gives statistics and a vocabulary that saves as JSON.
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "expnet/data/dataset.h"
#include "fuzz_scratch.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // "captions_val2014.json": the COCO reader takes its split from the name.
  const std::string path = expnet_fuzz::scratch_file("captions_val2014.json", data, size);
  expnet::Dataset dataset;
  try {
    dataset = expnet::load_dataset(path);
  } catch (const std::runtime_error&) {
    return 0;
  }
  (void)expnet::compute_stats(dataset, 1, 5);
  (void)expnet::build_vocabulary(dataset, 1).vocabulary.to_json();  // saved as JSON by the trainer
  if (!dataset.images.empty()) (void)dataset.image_path(dataset.images.front());
  return 0;
}

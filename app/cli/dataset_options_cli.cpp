#include "dataset_options_cli.h"

#include <spdlog/spdlog.h>

namespace expnet::cli {

void add_dataset_options(CLI::App* command, DatasetArgs& args) {
  command->add_option("--dataset", args.path, "Dataset file, or a folder holding dataset_coco.json")->required();
  command->add_option("--format", args.format, "auto, karpathy, coco, csv or jsonl")->capture_default_str();
  command->add_option("--image-root", args.image_root, "Folder the image paths are relative to (default: the dataset file's folder)");
}

Dataset read_dataset(const DatasetArgs& args) {
  DatasetLoadOptions options;
  options.format = parse_format(args.format);
  options.image_root = args.image_root;
  spdlog::info("reading {}", args.path);
  Dataset dataset = load_dataset(args.path, options);
  spdlog::info("{} ({}): {} images, {} captions", dataset.source, format_name(dataset.format), dataset.images.size(),
               dataset.caption_count());
  return dataset;
}

}  // namespace expnet::cli

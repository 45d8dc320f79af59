#include "dataset_options_cli.h"

#include <spdlog/spdlog.h>

namespace expnet::cli {

void add_dataset_options(CLI::App* command, DatasetArgs& args) {
  command->add_option("--dataset", args.path, "Dataset file, a folder holding dataset_coco.json, or a folder of photos")
      ->required();
  command
      ->add_option("--format", args.format,
                   "auto, karpathy, coco, csv, jsonl or photos (a folder of photos: their alt text)")
      ->capture_default_str();
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
  for (const std::string& file : dataset.unreadable) spdlog::warn("without references, its metadata unread: {}", file);
  return dataset;
}

}  // namespace expnet::cli

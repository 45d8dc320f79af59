// The options that name a captioning dataset (--dataset, --format, --image-root),
// shared by the `expnet dataset` subcommands that read one: one definition of each flag.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "expnet/data/dataset.h"

namespace expnet::cli {

struct DatasetArgs {
  std::string path;
  std::string format = "auto";
  std::string image_root;
};

void add_dataset_options(CLI::App* command, DatasetArgs& args);
// Reads the dataset, logging what it holds.
Dataset read_dataset(const DatasetArgs& args);

}  // namespace expnet::cli

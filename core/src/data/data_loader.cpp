// Training data loader (see data_loader.h).
#include "expnet/data/data_loader.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "data/seeded_random.h"

namespace expnet {
namespace {

struct Item {
  uint32_t image = 0;
  int32_t caption = -1;  // -1: image-wise
};
using Plan = std::vector<std::vector<Item>>;  // batches of one epoch

constexpr int64_t kLengthPoolBatches = 50;  // length grouping sorts pools of 50 batches

}  // namespace

std::string LoaderState::to_json() const {
  return nlohmann::json({{"format", "expnet-loader-state"}, {"version", 1}, {"seed", seed}, {"epoch", epoch}, {"position", position}}).dump();
}

LoaderState LoaderState::from_json(const std::string& text) {
  try {
    const auto doc = nlohmann::json::parse(text);
    if (doc.value("format", "") != "expnet-loader-state")
      throw std::runtime_error("not an expnet loader state (format is not expnet-loader-state)");
    LoaderState state;
    state.seed = doc.at("seed").get<uint64_t>();
    state.epoch = doc.at("epoch").get<int64_t>();
    state.position = doc.at("position").get<int64_t>();
    if (state.epoch < 0 || state.position < 0) throw std::runtime_error("negative epoch or position");
    return state;
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string("loader state: ") + e.what());
  }
}

struct DataLoader::Impl {
  const Dataset& dataset;
  Vocabulary vocabulary;
  LoaderOptions options;
  ImageSource source;
  std::vector<Item> items;
  int64_t batches = 0;

  LoaderState delivered;  // the next batch next() returns
  LoaderState submitted;  // the next batch to hand to the workers
  std::map<int64_t, std::shared_ptr<const Plan>> plans;
  std::deque<std::future<Batch>> pending;

  std::mutex mutex;
  std::condition_variable wake;
  std::deque<std::function<void()>> tasks;
  bool stop = false;
  std::vector<std::thread> threads;

  Impl(const Dataset& d, Vocabulary v, LoaderOptions o, ImageSource s)
      : dataset(d), vocabulary(std::move(v)), options(std::move(o)), source(std::move(s)) {
    if (options.batch_size < 1) throw std::invalid_argument("batch size must be at least 1");
    if (options.max_words < 1) throw std::invalid_argument("max words must be at least 1");
    if (options.shard_count < 1 || options.shard_rank < 0 || options.shard_rank >= options.shard_count)
      throw std::invalid_argument("loader shard rank must lie in 0..shard_count-1");
    for (size_t i = 0; i < dataset.images.size(); ++i) {
      const auto& image = dataset.images[i];
      const bool wanted = options.training_splits ? is_training_split(image.split)
                                                  : std::find(options.splits.begin(), options.splits.end(), image.split) != options.splits.end();
      if (!wanted || image.captions.empty()) continue;
      if (options.mode == SamplingMode::ImageWise) {
        items.push_back({static_cast<uint32_t>(i), -1});
      } else {
        for (size_t c = 0; c < image.captions.size(); ++c) items.push_back({static_cast<uint32_t>(i), static_cast<int32_t>(c)});
      }
    }
    if (items.empty()) throw std::runtime_error(dataset.source + ": no captioned images in the selected splits, so there is nothing to train on");
    batches = (static_cast<int64_t>(items.size()) + options.batch_size - 1) / options.batch_size;
    delivered.seed = submitted.seed = options.seed;
    for (int t = 0; t < std::max(1, options.workers); ++t) threads.emplace_back([this] { work(); });
  }

  ~Impl() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stop = true;
      tasks.clear();
    }
    wake.notify_all();
    for (auto& t : threads) t.join();
  }

  void work() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(mutex);
        wake.wait(lock, [this] { return stop || !tasks.empty(); });
        if (stop) return;
        task = std::move(tasks.front());
        tasks.pop_front();
      }
      task();
    }
  }

  size_t caption_length(const Item& item) const {
    if (item.caption < 0) return 0;
    const auto& tokens = dataset.images[item.image].captions[static_cast<size_t>(item.caption)].tokens;
    return std::min<size_t>(tokens.size(), static_cast<size_t>(options.max_words));
  }

  // The batches of `epoch`: a pure function of (seed, epoch).
  std::shared_ptr<const Plan> plan(uint64_t seed, int64_t epoch) {
    const auto found = plans.find(epoch);
    if (found != plans.end()) return found->second;
    data::Rng rng(data::mix_seed(seed, static_cast<uint64_t>(epoch), 7));
    std::vector<Item> order = items;
    rng.shuffle(order);
    const size_t bs = static_cast<size_t>(options.batch_size);
    if (options.group_by_length && options.mode == SamplingMode::CaptionWise) {
      // Sort within pools of shuffled items, then shuffle the batch order: batches
      // hold similar lengths but the epoch is not ordered by length.
      const size_t pool = bs * kLengthPoolBatches;
      for (size_t start = 0; start < order.size(); start += pool) {
        const auto end = order.begin() + static_cast<std::ptrdiff_t>(std::min(order.size(), start + pool));
        std::stable_sort(order.begin() + static_cast<std::ptrdiff_t>(start), end,
                         [this](const Item& a, const Item& b) { return caption_length(a) < caption_length(b); });
      }
    }
    auto result = std::make_shared<Plan>();
    for (size_t start = 0; start < order.size(); start += bs)
      result->emplace_back(order.begin() + static_cast<std::ptrdiff_t>(start),
                           order.begin() + static_cast<std::ptrdiff_t>(std::min(order.size(), start + bs)));
    if (options.group_by_length && options.mode == SamplingMode::CaptionWise) rng.shuffle(*result);
    while (plans.size() > 2) plans.erase(plans.begin());
    plans[epoch] = result;
    return result;
  }

  Batch build(const std::shared_ptr<const Plan>& plan, int64_t epoch, int64_t position) const {
    Batch batch;
    batch.epoch = epoch;
    batch.position = position;
    const auto& global_batch = (*plan)[static_cast<size_t>(position)];
    const size_t shards = static_cast<size_t>(options.shard_count), rank = static_cast<size_t>(options.shard_rank);
    const std::vector<Item> items_of_batch(global_batch.begin() + static_cast<std::ptrdiff_t>(global_batch.size() * rank / shards),
                                           global_batch.begin() + static_cast<std::ptrdiff_t>(global_batch.size() * (rank + 1) / shards));
    std::vector<Item> captions;  // the rows of batch.tokens
    for (const Item& item : items_of_batch) {
      const auto& image = dataset.images[item.image];
      batch.image_indices.push_back(item.image);
      batch.cocoids.push_back(image.cocoid);
      if (source) batch.images.push_back(source(dataset.image_path(image)));
      if (item.caption >= 0) {
        batch.caption_lengths.push_back(static_cast<int64_t>(caption_length(item)) + 2);
        batch.caption_items.push_back(static_cast<int64_t>(batch.image_indices.size() - 1));
      } else {
        std::vector<std::string> references;
        for (const auto& caption : image.captions) {
          std::string text;
          for (const auto& token : caption.tokens) text += (text.empty() ? "" : " ") + token;
          references.push_back(std::move(text));
        }
        batch.references.push_back(std::move(references));
        // Every caption of the image too, for XE with whole images per item.
        for (size_t c = 0; c < image.captions.size(); ++c) {
          captions.push_back({item.image, static_cast<int32_t>(c)});
          batch.caption_lengths.push_back(static_cast<int64_t>(caption_length(captions.back())) + 2);
          batch.caption_items.push_back(static_cast<int64_t>(batch.image_indices.size() - 1));
        }
        continue;
      }
      captions.push_back(item);
    }
    if (!batch.caption_lengths.empty()) {
      batch.length = *std::max_element(batch.caption_lengths.begin(), batch.caption_lengths.end());
      batch.tokens.assign(static_cast<size_t>(batch.length) * captions.size(), vocabulary.pad_id());
      for (size_t row = 0; row < captions.size(); ++row) {
        const auto& tokens = dataset.images[captions[row].image].captions[static_cast<size_t>(captions[row].caption)].tokens;
        const std::vector<std::string> kept(tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(caption_length(captions[row])));
        int64_t* out = batch.tokens.data() + row * static_cast<size_t>(batch.length);
        *out++ = vocabulary.sos_id();
        for (const int64_t id : vocabulary.encode(kept)) *out++ = id;
        *out = vocabulary.eos_id();
      }
    }
    return batch;
  }

  void fill() {
    const size_t ahead = static_cast<size_t>(std::max(1, options.prefetch));
    while (pending.size() < ahead) {
      auto batch_plan = plan(submitted.seed, submitted.epoch);
      auto task = std::make_shared<std::packaged_task<Batch()>>(
          [this, batch_plan, epoch = submitted.epoch, position = submitted.position] { return build(batch_plan, epoch, position); });
      pending.push_back(task->get_future());
      {
        std::lock_guard<std::mutex> lock(mutex);
        tasks.emplace_back([task] { (*task)(); });
      }
      wake.notify_one();
      advance(submitted);
    }
  }

  void advance(LoaderState& state) const {
    if (++state.position >= batches) {
      state.position = 0;
      ++state.epoch;
    }
  }

  void drain() {
    for (auto& f : pending)
      if (f.valid()) f.wait();
    pending.clear();
  }
};

DataLoader::DataLoader(const Dataset& dataset, Vocabulary vocabulary, LoaderOptions options, ImageSource source)
    : impl_(std::make_unique<Impl>(dataset, std::move(vocabulary), std::move(options), std::move(source))) {}

DataLoader::~DataLoader() {
  if (impl_) impl_->drain();
}

Batch DataLoader::next() {
  impl_->fill();
  std::future<Batch> front = std::move(impl_->pending.front());
  impl_->pending.pop_front();
  impl_->advance(impl_->delivered);
  impl_->fill();
  return front.get();
}

LoaderState DataLoader::state() const { return impl_->delivered; }

void DataLoader::restore(const LoaderState& state) {
  if (state.position < 0 || state.position >= impl_->batches || state.epoch < 0)
    throw std::invalid_argument("loader state epoch " + std::to_string(state.epoch) + " position " + std::to_string(state.position) +
                                " does not fit this dataset (" + std::to_string(impl_->batches) + " batches per epoch)");
  impl_->drain();
  if (state.seed != impl_->delivered.seed) impl_->plans.clear();
  impl_->delivered = impl_->submitted = state;
}

int64_t DataLoader::batches_per_epoch() const { return impl_->batches; }
int64_t DataLoader::items_per_epoch() const { return static_cast<int64_t>(impl_->items.size()); }

}  // namespace expnet

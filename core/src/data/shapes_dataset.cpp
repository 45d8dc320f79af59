// Writing the built-in demo set to disk (see shapes_dataset.h).
#include "expnet/data/shapes_dataset.h"

#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include "expnet/system/atomic_file.h"
#include "expnet/system/system.h"
#include "expnet/text/caption_text.h"

namespace fs = std::filesystem;

namespace expnet {
namespace {

constexpr int S = kShapesImageSize;

std::string image_name(int64_t index) {
  char name[32];
  std::snprintf(name, sizeof name, "shapes_%06lld.png", static_cast<long long>(index));
  return name;
}

nlohmann::json scene_json(const ShapesScene& scene) {
  const bool varied = scene.style == ShapesStyle::varied;
  nlohmann::json shapes = nlohmann::json::array();
  for (const auto& s : scene.shapes) {
    nlohmann::json item = {{"shape", s.shape}, {"color", s.color}, {"size", s.size}, {"x", s.x}, {"y", s.y}, {"radius", s.radius}};
    if (varied) item.update({{"angle", s.angle}, {"rgb", s.rgb}});
    shapes.push_back(std::move(item));
  }
  nlohmann::json out = {{"background", scene.background}, {"shapes", std::move(shapes)}};
  if (varied)
    out["backdrop"] = {{"kind", scene.backdrop.kind}, {"rgb", scene.backdrop.rgb}, {"rgb2", scene.backdrop.rgb2},
                       {"direction", scene.backdrop.direction}};
  return out;
}

}  // namespace

ShapesReport make_shapes_dataset(const ShapesOptions& options, const std::function<void(int64_t, int64_t)>& progress) {
  if (options.images < 1) throw std::invalid_argument("--images must be at least 1");
  if (options.val_fraction < 0 || options.test_fraction < 0 || options.val_fraction + options.test_fraction >= 1)
    throw std::invalid_argument("split fractions must be >= 0 and leave some training images");
  const auto start = std::chrono::steady_clock::now();
  const int64_t n = options.images;
  int64_t val = std::llround(static_cast<double>(n) * options.val_fraction);
  int64_t test = std::llround(static_cast<double>(n) * options.test_fraction);
  if (n >= 10) {
    val = std::max<int64_t>(val, 1);
    test = std::max<int64_t>(test, 1);
  }
  const int64_t train = n - val - test;
  const fs::path out(options.out_dir);
  const fs::path image_dir = out / "images";
  std::error_code ec;
  fs::create_directories(image_dir, ec);
  if (ec) throw std::runtime_error("cannot create folder '" + image_dir.string() + "': " + ec.message());

  std::vector<ShapesScene> scenes(static_cast<size_t>(n));
  std::atomic<int64_t> next{0}, done{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto worker = [&] {
    const std::vector<int> png_params = {cv::IMWRITE_PNG_COMPRESSION, 1};
    std::vector<uchar> bytes;
    cv::Mat bgr;
    for (int64_t i = next++; i < n && !failed; i = next++) {
      try {
        ShapesScene scene = make_shapes_scene(options.seed, i, options.style);
        cv::cvtColor(render_shapes_scene(scene, options.seed, i), bgr, cv::COLOR_RGB2BGR);
        cv::imencode(".png", bgr, bytes, png_params);
        const fs::path file = image_dir / image_name(i);
        std::ofstream stream(file, std::ios::binary | std::ios::trunc);
        stream.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
        stream.close();
        if (!stream) throw std::runtime_error("cannot write '" + file.string() + "': " + std::strerror(errno) + " (disk full or no permission?)");
        scenes[static_cast<size_t>(i)] = std::move(scene);
        const int64_t finished = ++done;
        if (progress) progress(finished, n);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        failed = true;
      }
    }
  };
  const int threads = static_cast<int>(std::clamp<int64_t>(options.threads > 0 ? options.threads : hardware_threads(), 1, n));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(worker);
  for (auto& thread : pool) thread.join();
  if (error) std::rethrow_exception(error);

  ShapesReport report;
  std::set<int> used;
  nlohmann::json images = nlohmann::json::array();
  for (int64_t i = 0; i < n; ++i) {
    const auto& scene = scenes[static_cast<size_t>(i)];
    nlohmann::json sentences = nlohmann::json::array();
    for (size_t c = 0; c < scene.captions.size(); ++c) {
      sentences.push_back({{"raw", scene.captions[c]}, {"tokens", clean_caption(scene.captions[c])}, {"structure", scene.structures[c]}});
      used.insert(scene.structures[c]);
    }
    const char* split = i < train ? "train" : i < train + val ? "val" : "test";
    images.push_back({{"cocoid", i}, {"filepath", "images"}, {"filename", image_name(i)}, {"split", split},
                      {"width", S}, {"height", S}, {"sentences", std::move(sentences)},
                      {"scene", scene_json(scene)}});
  }
  report.json_path = (out / "dataset_coco.json").string();
  write_file_atomic(report.json_path, nlohmann::json({{"dataset", "expnet-shapes"}, {"seed", options.seed}, {"style", shapes_style_name(options.style)}, {"images", std::move(images)}}).dump());
  report.images = n;
  report.train = train;
  report.val = val;
  report.test = test;
  report.structures_used = static_cast<int>(used.size());
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace expnet

// The built-in shapes set: determinism, caption variety and truth, splits,
// and that the rendered pixels are what the captions say.
#include <QDir>
#include <QFile>
#include <QtTest>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>
#include <set>

#include "expnet/text/caption_text.h"
#include "expnet/data/dataset.h"
#include "expnet/data/shapes_dataset.h"
#include "support/fixtures.h"

using namespace expnet;

namespace {

QByteArray read_all(const QString& path) {
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly)) return {};
  return file.readAll();
}

// The named colour, judged from the pixel alone (independent of the renderer's table).
bool pixel_is(const std::string& colour, int r, int g, int b) {
  if (colour == "red") return r > 170 && g < 100 && b < 100;
  if (colour == "green") return g > 130 && r < 100 && b < 110;
  if (colour == "blue") return b > 170 && r < 100 && g < 130;
  if (colour == "yellow") return r > 190 && g > 170 && b < 100;
  if (colour == "orange") return r > 190 && g > 100 && g < 170 && b < 90;
  if (colour == "purple") return r > 100 && r < 180 && g < 110 && b > 130;
  return false;
}

std::vector<std::string> words_of(const std::string& caption) { return clean_caption(caption); }

// Hue (degrees), saturation and value of the mean of a 3x3 patch of an RGB image.
void patch_hsv(const cv::Mat& rgb, int x, int y, double& h, double& s, double& v) {
  double sum[3] = {0, 0, 0};
  for (int dy = -1; dy <= 1; ++dy)
    for (int dx = -1; dx <= 1; ++dx)
      for (int c = 0; c < 3; ++c) sum[c] += rgb.at<cv::Vec3b>(y + dy, x + dx)[c] / 9.0 / 255.0;
  const double r = sum[0], g = sum[1], b = sum[2], mx = std::max({r, g, b}), mn = std::min({r, g, b}), d = mx - mn;
  v = mx;
  s = mx > 0 ? d / mx : 0;
  h = d == 0 ? 0 : mx == r ? 60 * std::fmod((g - b) / d + 6, 6) : mx == g ? 60 * ((b - r) / d + 2) : 60 * ((r - g) / d + 4);
}

// The hue band a person calls by that name, a little wider than the generator's
// own bands (noise, blur and JPEG move a pixel's hue); independent of its table.
bool hue_is(const std::string& colour, double h) {
  if (colour == "red") return h >= 335 || h <= 15;
  if (colour == "orange") return h >= 15 && h <= 42;
  if (colour == "yellow") return h >= 42 && h <= 70;
  if (colour == "green") return h >= 85 && h <= 160;
  if (colour == "blue") return h >= 195 && h <= 250;
  if (colour == "purple") return h >= 255 && h <= 300;
  return false;
}

// A point well inside the shape: its centre, or for a triangle the centroid of
// its corners (a flat triangle's centre can sit on its long edge).
cv::Point inside(const ShapeItem& s) {
  if (s.shape != "triangle") return {s.x, s.y};
  const double corners[3] = {-90, 30 + s.form_a, 150 - s.form_b};
  double x = 0, y = 0;
  for (const double c : corners) {
    const double a = (c + s.angle) * M_PI / 180.0;
    x += (s.x + 1.2 * s.radius * std::cos(a)) / 3;
    y += (s.y + 1.2 * s.radius * std::sin(a)) / 3;
  }
  return {static_cast<int>(std::lround(x)), static_cast<int>(std::lround(y))};
}

}  // namespace

class TestShapesDataset : public QObject {
  Q_OBJECT
 private slots:
  void sameSeedSameBytesWhateverTheThreads() {
    const QString a = expnet_test::makeTempDir("shapes_a"), b = expnet_test::makeTempDir("shapes_b"),
                  c = expnet_test::makeTempDir("shapes_c");
    ShapesOptions options;
    options.images = 24;
    options.seed = 5;
    options.out_dir = a.toStdString();
    options.threads = 2;
    const ShapesReport report = make_shapes_dataset(options);
    QCOMPARE(report.images, int64_t(24));
    options.out_dir = b.toStdString();
    options.threads = 1;
    make_shapes_dataset(options);
    options.out_dir = c.toStdString();
    options.seed = 6;
    make_shapes_dataset(options);
    QVERIFY(!read_all(a + "/dataset_coco.json").isEmpty());
    QCOMPARE(read_all(a + "/dataset_coco.json"), read_all(b + "/dataset_coco.json"));
    QVERIFY(read_all(a + "/dataset_coco.json") != read_all(c + "/dataset_coco.json"));
    const QStringList images = QDir(a + "/images").entryList(QDir::Files);
    QCOMPARE(images.size(), 24);
    for (const auto& name : images) QCOMPARE(read_all(a + "/images/" + name), read_all(b + "/images/" + name));
    QVERIFY(read_all(a + "/images/" + images[0]) != read_all(c + "/images/" + images[0]));
  }

  void readsBackAsKarpathyWithSplitsAndPixelsMatchingTheScene() {
    const QString dir = expnet_test::makeTempDir("shapes_read");
    ShapesOptions options;
    options.images = 10;
    options.seed = 11;
    options.style = ShapesStyle::classic;  // pixel_is knows the classic shades; the varied ones: variedPixelsMatchTheScene
    options.out_dir = dir.toStdString();
    make_shapes_dataset(options);
    const Dataset d = load_dataset(dir.toStdString());
    QCOMPARE(d.images.size(), size_t(10));
    QCOMPARE(d.image_count(Split::Train), size_t(8));
    QCOMPARE(d.image_count(Split::Val), size_t(1));
    QCOMPARE(d.image_count(Split::Test), size_t(1));
    for (const auto& image : d.images) {
      QCOMPARE(image.captions.size(), size_t(kShapesCaptionsPerImage));
      const ShapesScene scene = make_shapes_scene(options.seed, image.cocoid, ShapesStyle::classic);
      QCOMPARE(image.captions[0].raw, scene.captions[0]);
      const cv::Mat bgr = cv::imread(d.image_path(image), cv::IMREAD_COLOR);
      QCOMPARE(bgr.cols, kShapesImageSize);
      QCOMPARE(bgr.rows, kShapesImageSize);
      for (const auto& s : scene.shapes) {
        const auto p = bgr.at<cv::Vec3b>(s.y, s.x);
        QVERIFY2(pixel_is(s.color, p[2], p[1], p[0]),
                 qPrintable(QStringLiteral("%1 %2 at (%3,%4) is %5,%6,%7").arg(QString::fromStdString(s.color), QString::fromStdString(s.shape))
                                .arg(s.x).arg(s.y).arg(p[2]).arg(p[1]).arg(p[0])));
      }
    }
    options.images = 1000;
    options.out_dir = expnet_test::makeTempDir("shapes_1000").toStdString();
    const ShapesReport report = make_shapes_dataset(options);
    QCOMPARE(report.val, int64_t(100));
    QCOMPARE(report.test, int64_t(100));
    QCOMPARE(report.train, int64_t(800));
  }

  void captionsAreVariedDifferentAndTrue() {
    const std::set<std::string> colours(shapes_colour_words().begin(), shapes_colour_words().end());
    std::set<std::string> shape_words;
    for (const auto& s : shapes_shape_words()) {
      shape_words.insert(s);
      shape_words.insert(s + "s");
    }
    std::set<int> structures;
    int checked_relations = 0, medium_only_captions = 0;
    const std::set<std::string> size_words = {"small", "little", "large", "big", "smaller", "larger", "bigger"};
    std::map<std::string, std::pair<int, int>> radii;  // size -> smallest, largest radius seen
    for (int64_t i = 0; i < 600; ++i) {
      const ShapesScene scene = make_shapes_scene(3, i);
      for (const auto& s : scene.shapes) {
        const auto it = radii.try_emplace(s.size, s.radius, s.radius).first;
        it->second = {std::min(it->second.first, s.radius), std::max(it->second.second, s.radius)};
      }
      QCOMPARE(scene.captions.size(), size_t(kShapesCaptionsPerImage));
      QVERIFY(!scene.shapes.empty() && scene.shapes.size() <= 3);
      std::set<std::string> cleaned;
      std::set<std::string> scene_colours = {scene.background}, scene_shapes;
      for (const auto& s : scene.shapes) {
        scene_colours.insert(s.color);
        scene_shapes.insert(s.shape);
        scene_shapes.insert(s.shape + "s");
      }
      for (size_t c = 0; c < scene.captions.size(); ++c) {
        const std::string& caption = scene.captions[c];
        structures.insert(scene.structures[c]);
        QVERIFY2(cleaned.insert(clean_caption_text(caption)).second, caption.c_str());  // pairwise different
        bool names_a_shape = false;
        for (const auto& word : words_of(caption)) {
          if (colours.count(word)) QVERIFY2(scene_colours.count(word), (caption + ": colour " + word).c_str());
          if (shape_words.count(word)) {
            names_a_shape = true;
            QVERIFY2(scene_shapes.count(word), (caption + ": shape " + word).c_str());
          }
        }
        QVERIFY2(names_a_shape || caption.find("shape") != std::string::npos, caption.c_str());
        // With a single shape every place word is about it.
        if (scene.shapes.size() == 1) {
          const auto& s = scene.shapes.front();
          const auto words = words_of(caption);
          auto has = [&](const char* w) { return std::find(words.begin(), words.end(), w) != words.end(); };
          if (has("top") || has("upper")) QVERIFY2(s.y < kShapesImageSize * 36 / 100, caption.c_str());
          if (has("bottom") || has("lower")) QVERIFY2(s.y > kShapesImageSize * 64 / 100, caption.c_str());
          if (has("left")) QVERIFY2(s.x < kShapesImageSize * 36 / 100, caption.c_str());
          if (has("right")) QVERIFY2(s.x > kShapesImageSize * 64 / 100, caption.c_str());
          if (has("small") || has("little")) QCOMPARE(s.size, std::string("small"));
          if (has("large") || has("big")) QCOMPARE(s.size, std::string("large"));
        }
        // A medium shape's size is never named: scenes of medium shapes only have no size word.
        if (std::all_of(scene.shapes.begin(), scene.shapes.end(), [](const ShapeItem& s) { return s.size == "medium"; })) {
          ++medium_only_captions;
          for (const auto& word : words_of(caption))
            QVERIFY2(!size_words.count(word), (caption + ": size word for medium shapes").c_str());
        }
        // "X <relation> Y" between two shapes the words identify: the geometry agrees.
        static const std::string np = "(?:a|an|the) (?:(?:small|little|large|big) )?(red|green|blue|yellow|orange|purple) (circle|square|triangle|star|diamond)";
        static const std::regex relation(np + " (?:is )?(above and to the left of|above and to the right of|below and to the left of|"
                                              "below and to the right of|to the left of|left of|on the left of|to the right of|right of|"
                                              "on the right of|above|over|below|under|beneath) " + np, std::regex::icase);
        for (auto it = std::sregex_iterator(caption.begin(), caption.end(), relation); it != std::sregex_iterator(); ++it) {
          const std::smatch& r = *it;
          // The shape the words name, or null when they fit none or several.
          auto find = [&](const std::string& colour, const std::string& shape) -> const ShapeItem* {
            const ShapeItem* found = nullptr;
            int same = 0;
            for (const auto& s : scene.shapes)
              if (s.color == colour && s.shape == shape) {
                found = &s;
                ++same;
              }
            return same == 1 ? found : nullptr;
          };
          const ShapeItem* a = find(r[1].str(), r[2].str());
          const ShapeItem* b = find(r[4].str(), r[5].str());
          if (!a || !b) continue;
          const std::string rel = r[3].str();
          ++checked_relations;
          if (rel.find("left") != std::string::npos) QVERIFY2(a->x < b->x, caption.c_str());
          if (rel.find("right") != std::string::npos) QVERIFY2(a->x > b->x, caption.c_str());
          if (rel.rfind("above", 0) == 0 || rel == "over") QVERIFY2(a->y < b->y, caption.c_str());
          if (rel.rfind("below", 0) == 0 || rel == "under" || rel == "beneath") QVERIFY2(a->y > b->y, caption.c_str());
        }
        // "X on the left and Y on the right": X really is left of Y.
        static const std::regex opposite("(?:a|an) (?:\\w+ )?(\\w+) (\\w+) on the left and (?:a|an) (?:\\w+ )?(\\w+) (\\w+) on the right",
                                         std::regex::icase);
        std::smatch m;
        const bool distinct = scene.shapes.size() == 2 && (scene.shapes[0].color != scene.shapes[1].color || scene.shapes[0].shape != scene.shapes[1].shape);
        if (distinct && std::regex_search(caption, m, opposite)) {
          const auto& a = scene.shapes[0].color == m[1].str() && scene.shapes[0].shape == m[2].str() ? scene.shapes[0] : scene.shapes[1];
          const auto& b = &a == &scene.shapes[0] ? scene.shapes[1] : scene.shapes[0];
          QVERIFY2(a.x < b.x, caption.c_str());
        }
      }
    }
    QVERIFY2(checked_relations > 300, qPrintable(QString::number(checked_relations)));
    QVERIFY2(medium_only_captions > 20, qPrintable(QString::number(medium_only_captions)));
    // Radii in three groups that leave no gap: small 9-12, medium 13-16, large 17-24.
    const std::map<std::string, std::pair<int, int>> expected = {{"small", {9, 12}}, {"medium", {13, 16}}, {"large", {17, 24}}};
    QVERIFY(radii == expected);
    QVERIFY2(structures.size() >= 20, qPrintable(QString::number(structures.size())));
    QCOMPARE(static_cast<int>(structures.size()), shapes_structure_count());
  }

  // The varied look: every shape's pixels still have its colour's hue; the
  // backgrounds span kinds, hues and brightness; classic and varied share scenes' layout.
  void variedPixelsMatchTheSceneAndLooksVary() {
    std::set<std::string> kinds, words;
    std::set<int> hue_sectors;
    int dark = 0, light = 0, checked = 0;
    for (int64_t i = 0; i < 300; ++i) {
      const ShapesScene scene = make_shapes_scene(21, i);
      QCOMPARE(scene.style, ShapesStyle::varied);
      const ShapesScene classic = make_shapes_scene(21, i, ShapesStyle::classic);
      QCOMPARE(classic.shapes.size(), scene.shapes.size());
      for (size_t k = 0; k < scene.shapes.size(); ++k) {
        QCOMPARE(classic.shapes[k].x, scene.shapes[k].x);
        QCOMPARE(classic.shapes[k].color, scene.shapes[k].color);
      }
      const cv::Mat rgb = render_shapes_scene(scene, 21, i);
      QCOMPARE(rgb.cols, kShapesImageSize);
      kinds.insert(scene.backdrop.kind);
      words.insert(scene.background);
      double h, s, v;
      patch_hsv(rgb, 2, 2, h, s, v);  // a corner: shapes never reach it
      dark += v < 0.2;
      light += v > 0.8;
      if (s > 0.3) hue_sectors.insert(static_cast<int>(h / 30));
      for (const auto& shape : scene.shapes) {
        const cv::Point p = inside(shape);
        patch_hsv(rgb, p.x, p.y, h, s, v);
        ++checked;
        QVERIFY2(hue_is(shape.color, h) && s > 0.3,
                 qPrintable(QStringLiteral("image %1: %2 %3 at (%4,%5) has hue %6, saturation %7")
                                .arg(i).arg(QString::fromStdString(shape.color), QString::fromStdString(shape.shape))
                                .arg(p.x).arg(p.y).arg(h).arg(s)));
      }
    }
    QVERIFY(checked > 500);
    QCOMPARE(kinds, (std::set<std::string>{"gradient", "plain", "texture"}));
    QVERIFY2(hue_sectors.size() >= 10, qPrintable(QString::number(hue_sectors.size())));
    QVERIFY2(dark > 30 && light > 30, qPrintable(QStringLiteral("%1 dark, %2 light").arg(dark).arg(light)));
    // Background sentences only with a true word; some scenes have none.
    QVERIFY(words.count("") && words.count("dark") && words.count("light") && words.count("white") && words.count("black"));
  }

  void cliMakeShapes() {
    const QString dir = expnet_test::makeTempDir("shapes_cli");
    const auto r = expnet_test::runProcess(expnet_test::cliPath(), {"dataset", "make-shapes", "--out", dir, "--images", "12", "--seed", "2", "--json"});
    QVERIFY2(r.exitCode == 0, r.err.constData());
    QVERIFY2(r.out.contains("\"images\":12"), r.out.constData());
    QVERIFY(QFile::exists(dir + "/dataset_coco.json"));
    QCOMPARE(QDir(dir + "/images").entryList(QDir::Files).size(), 12);
    QVERIFY(read_all(dir + "/dataset_coco.json").contains("\"style\":\"varied\""));
    // The old look stays available, the same bytes as the library's classic style.
    const QString classic = expnet_test::makeTempDir("shapes_cli_classic");
    const auto c = expnet_test::runProcess(expnet_test::cliPath(), {"dataset", "make-shapes", "--out", classic, "--images", "3", "--seed", "2", "--style", "classic"});
    QVERIFY2(c.exitCode == 0, c.err.constData());
    cv::Mat bgr;
    cv::cvtColor(render_shapes_scene(make_shapes_scene(2, 1, ShapesStyle::classic), 2, 1), bgr, cv::COLOR_RGB2BGR);
    const cv::Mat written = cv::imread((classic + "/images/shapes_000001.png").toStdString(), cv::IMREAD_COLOR);
    QCOMPARE(cv::norm(written, bgr, cv::NORM_INF), 0.0);
    const auto bad = expnet_test::runProcess(expnet_test::cliPath(), {"dataset", "make-shapes", "--out", classic, "--images", "3", "--style", "cartoon"});
    QVERIFY(bad.exitCode != 0);
    QVERIFY2(bad.err.contains("cartoon") || bad.out.contains("cartoon"), bad.err.constData());
  }
};

QTEST_GUILESS_MAIN(TestShapesDataset)
#include "test_shapes_dataset.moc"

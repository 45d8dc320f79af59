// Held-out scenes for the demo model drawn with Qt's QPainter (issue 24): one
// or two red, green, blue or yellow circles, squares (rotated under 20 degrees,
// corners sometimes rounded) or triangles (equilateral, right-angled or tall,
// any rotation), in HSV-drawn shades and Qt's own colours, on 144, 192 or
// 240 px images with flat, linear- or radial-gradient backgrounds of random
// hue, antialiased or not, sometimes outlined, with mild noise. Training never
// sees these scenes. Only Qt Gui: no LibTorch, no project code.
//
// usage: qpainter_scenes OUT [--count N] [--seed S]
// Writes OUT/qpainter_NNN.png and OUT/truth.json ({file: [{"color", "shape",
// "x", "y", "r"}, ...]}): x/y the shape's centre (a triangle's centroid), r the
// radius around it that holds the whole shape. The same seed writes the same files.
#include <QColor>
#include <QDir>
#include <QFile>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLinearGradient>
#include <QPainter>
#include <QPainterPath>
#include <QRadialGradient>
#include <QTransform>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

constexpr double kPi = 3.14159265358979323846;
const char* const kColours[] = {"red", "green", "blue", "yellow"};
const char* const kShapes[] = {"circle", "square", "triangle"};
const int kSizes[] = {144, 192, 240};
// Fill vs every background pixel under the shape, RGB Euclidean: what the
// truth says must be what a person sees.
constexpr double kMinColourDistance = 120.0;

// splitmix64 from `state`: the same numbers on every platform (std
// distributions are not).
struct Rng {
  uint64_t state;

  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double unit() { return static_cast<double>(next() >> 11) / 9007199254740992.0; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * unit(); }
  int range(int lo, int hi) { return lo + static_cast<int>(next() % static_cast<uint64_t>(hi - lo + 1)); }
  bool chance(double p) { return unit() < p; }
};

struct Object {
  int colour = 0, shape = 0;
  double x = 0, y = 0, r = 0;
  QPainterPath path;  // around the centre at 0,0
  QColor fill, line;
  double width = 0;  // outline width, 0 for none
};

QColor shade(Rng& rng, int colour) {
  if (rng.chance(0.25)) {  // Qt's global colours
    const Qt::GlobalColor named[4][2] = {{Qt::red, Qt::red}, {Qt::green, Qt::darkGreen}, {Qt::blue, Qt::blue},
                                         {Qt::yellow, Qt::yellow}};
    return QColor(named[colour][rng.range(0, 1)]);
  }
  // Hue ranges a person names by the colour's word; yellow kept bright (a dim
  // yellow reads as olive).
  const double hue[4][2] = {{-8, 4}, {100, 135}, {212, 238}, {50, 58}};
  const double h = std::fmod(rng.uniform(hue[colour][0], hue[colour][1]) + 360.0, 360.0);
  const double v = colour == 3 ? rng.uniform(0.85, 1.0) : rng.uniform(0.68, 1.0);
  return QColor::fromHsvF(static_cast<float>(h / 360.0), static_cast<float>(rng.uniform(0.75, 1.0)), static_cast<float>(v));
}

QPainterPath triangle(Rng& rng, double size) {
  std::vector<QPointF> p;
  const int kind = rng.range(0, 2);
  if (kind == 0) {  // equilateral
    const double R = size * rng.uniform(1.15, 1.3);
    for (int k = 0; k < 3; ++k) p.emplace_back(R * std::cos(kPi / 2 + k * 2 * kPi / 3), R * std::sin(kPi / 2 + k * 2 * kPi / 3));
  } else if (kind == 1) {  // right-angled
    const double a = size * rng.uniform(1.7, 2.0), b = a * rng.uniform(0.75, 1.0);
    p = {{0, 0}, {a, 0}, {0, -b}};
  } else {  // tall isosceles
    const double half = size * rng.uniform(0.75, 1.0), h = size * rng.uniform(2.0, 2.4);
    p = {{0, -h / 2}, {-half, h / 2}, {half, h / 2}};
  }
  const double cx = (p[0].x() + p[1].x() + p[2].x()) / 3, cy = (p[0].y() + p[1].y() + p[2].y()) / 3;
  QTransform t;
  t.rotate(rng.uniform(0, 360));
  t.translate(-cx, -cy);
  QPolygonF poly;
  for (const auto& q : p) poly << t.map(q);
  poly << poly.first();
  QPainterPath path;
  path.addPolygon(poly);
  return path;
}

Object make_object(Rng& rng, int image_size) {
  Object o;
  o.colour = rng.range(0, 3);
  o.shape = rng.range(0, 2);
  const double size = rng.uniform(14, 26) * image_size / 128.0;
  if (o.shape == 0) {
    o.path.addEllipse(QPointF(0, 0), size, size);
  } else if (o.shape == 1) {
    const double half = size * rng.uniform(0.8, 0.95);
    QPainterPath square;
    if (rng.chance(0.2)) {  // corners rounded by at most 12% of the side: still a square
      const double corner = half * rng.uniform(0.1, 0.24);
      square.addRoundedRect(QRectF(-half, -half, 2 * half, 2 * half), corner, corner);
    } else {
      square.addRect(QRectF(-half, -half, 2 * half, 2 * half));
    }
    QTransform t;
    t.rotate(rng.uniform(-19, 19));
    o.path = t.map(square);
  } else {
    o.path = triangle(rng, size);
  }
  o.fill = shade(rng, o.colour);
  if (rng.chance(0.3)) {
    o.width = std::max(1.0, std::round(rng.uniform(1.0, 3.0) * image_size / 160.0));
    o.line = rng.chance(0.5) ? o.fill.darker(170) : QColor(15, 15, 15);
  }
  // The radius that holds the path (its polygon's vertices or the circle), outline included.
  for (const QPolygonF& poly : o.path.toSubpathPolygons())
    for (const QPointF& q : poly) o.r = std::max(o.r, std::hypot(q.x(), q.y()));
  o.r += o.width / 2;
  return o;
}

bool place(Rng& rng, std::vector<Object>& objects, int size) {
  const double margin = 3.0 * size / 128, gap = 6.0 * size / 128;
  for (size_t i = 0; i < objects.size(); ++i) {
    auto& o = objects[i];
    const int lo = static_cast<int>(std::ceil(o.r + margin)), hi = static_cast<int>(std::floor(size - o.r - margin));
    bool placed = false;
    for (int attempt = 0; attempt < 400 && !placed && lo <= hi; ++attempt) {
      o.x = rng.range(lo, hi);
      o.y = rng.range(lo, hi);
      placed = true;
      for (size_t j = 0; j < i; ++j)
        placed = placed && std::hypot(o.x - objects[j].x, o.y - objects[j].y) >= o.r + objects[j].r + gap;
    }
    if (!placed) return false;
  }
  return true;
}

QColor background_colour(Rng& rng, int kind) {
  const double h = rng.unit();
  double s, v;
  if (kind == 0) s = rng.uniform(0.0, 0.7), v = rng.uniform(0.04, 0.28);        // dark, any saturation
  else if (kind == 1) s = rng.uniform(0.0, 0.3), v = rng.uniform(0.4, 0.6);     // mid, muted
  else s = rng.uniform(0.0, 0.22), v = rng.uniform(0.82, 0.97);                  // light, muted
  return QColor::fromHsvF(static_cast<float>(h), static_cast<float>(s), static_cast<float>(v));
}

QImage background(Rng& rng, int size) {
  QImage image(size, size, QImage::Format_RGB32);
  const double k = rng.unit();
  const int kind = k < 0.3 ? 0 : k < 0.7 ? 1 : 2;
  const QColor c0 = background_colour(rng, kind), c1 = background_colour(rng, kind);
  QPainter p(&image);
  const int style = rng.range(0, 2);
  if (style == 0) {
    p.fillRect(image.rect(), c0);
  } else if (style == 1) {
    const double a = rng.uniform(0, 2 * kPi);
    const QPointF mid(size / 2.0, size / 2.0), d(std::cos(a) * size / 2.0, std::sin(a) * size / 2.0);
    QLinearGradient g(mid - d, mid + d);
    g.setColorAt(0, c0);
    g.setColorAt(1, c1);
    p.fillRect(image.rect(), g);
  } else {
    // One draw per statement: argument order is unspecified, the scenes must not be.
    const double cx = rng.uniform(0.2, 0.8) * size, cy = rng.uniform(0.2, 0.8) * size;
    QRadialGradient g(QPointF(cx, cy), size * rng.uniform(0.5, 0.9));
    g.setColorAt(0, c0);
    g.setColorAt(1, c1);
    p.fillRect(image.rect(), g);
  }
  return image;
}

bool distinct(const QImage& bg, const std::vector<Object>& objects) {
  for (const auto& o : objects) {
    const int x0 = std::max(0, static_cast<int>(o.x - o.r)), x1 = std::min(bg.width() - 1, static_cast<int>(o.x + o.r));
    const int y0 = std::max(0, static_cast<int>(o.y - o.r)), y1 = std::min(bg.height() - 1, static_cast<int>(o.y + o.r));
    for (int y = y0; y <= y1; ++y)
      for (int x = x0; x <= x1; ++x) {
        const QRgb c = bg.pixel(x, y);
        const double dr = qRed(c) - o.fill.red(), dg = qGreen(c) - o.fill.green(), db = qBlue(c) - o.fill.blue();
        if (std::sqrt(dr * dr + dg * dg + db * db) < kMinColourDistance) return false;
      }
  }
  return true;
}

void add_noise(Rng& rng, QImage& image) {
  const double amplitude = rng.uniform(2.0, 6.0);
  const bool grey = rng.chance(0.5);  // luminance-only noise, or per channel
  auto draw = [&] { return (rng.unit() + rng.unit() - 1.0) * amplitude; };  // triangular
  for (int y = 0; y < image.height(); ++y) {
    auto* row = reinterpret_cast<QRgb*>(image.scanLine(y));
    for (int x = 0; x < image.width(); ++x) {
      const double n0 = draw(), n1 = grey ? n0 : draw(), n2 = grey ? n0 : draw();
      auto clamp = [](double v) { return static_cast<int>(std::lround(std::clamp(v, 0.0, 255.0))); };
      row[x] = qRgb(clamp(qRed(row[x]) + n0), clamp(qGreen(row[x]) + n1), clamp(qBlue(row[x]) + n2));
    }
  }
}

QImage render(uint64_t seed, int index, QJsonArray& truth) {
  Rng rng{seed * 1000003ull + static_cast<uint64_t>(index) * 7919ull + 17ull};
  const int size = kSizes[rng.range(0, 2)];
  const int count = 1 + index % 2;  // half one-object, half two-object scenes
  for (;;) {
    std::vector<Object> objects;
    for (int i = 0; i < count; ++i) objects.push_back(make_object(rng, size));
    if (!place(rng, objects, size)) continue;
    for (int attempt = 0; attempt < 30; ++attempt) {
      QImage image = background(rng, size);
      if (!distinct(image, objects)) continue;
      QPainter p(&image);
      p.setRenderHint(QPainter::Antialiasing, rng.chance(0.6));
      for (const auto& o : objects) {
        p.save();
        p.translate(o.x, o.y);
        p.setBrush(o.fill);
        p.setPen(o.width > 0 ? QPen(o.line, o.width) : QPen(Qt::NoPen));
        p.drawPath(o.path);
        p.restore();
        truth.append(QJsonObject{{"color", kColours[o.colour]}, {"shape", kShapes[o.shape]}, {"x", o.x}, {"y", o.y},
                                 {"r", std::round(o.r * 100) / 100}});
      }
      p.end();
      add_noise(rng, image);
      return image;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') {
    std::fprintf(stderr, "usage: %s OUT [--count N] [--seed S]\n", argv[0]);
    return 2;
  }
  const QString out = QString::fromLocal8Bit(argv[1]);
  int count = 200;
  uint64_t seed = 2403;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--count") == 0) count = std::atoi(argv[i + 1]);
    else if (std::strcmp(argv[i], "--seed") == 0) seed = std::strtoull(argv[i + 1], nullptr, 10);
    else return std::fprintf(stderr, "unknown option %s\n", argv[i]), 2;
  }
  if (!QDir().mkpath(out)) return std::fprintf(stderr, "cannot create %s\n", argv[1]), 1;
  QJsonObject truth;
  for (int i = 0; i < count; ++i) {
    QJsonArray objects;
    const QImage image = render(seed, i, objects);
    const QString name = QStringLiteral("qpainter_%1.png").arg(i, 3, 10, QLatin1Char('0'));
    if (!image.save(out + QLatin1Char('/') + name, "PNG"))
      return std::fprintf(stderr, "cannot write %s\n", qPrintable(out + QLatin1Char('/') + name)), 1;
    truth.insert(name, objects);
  }
  QFile file(out + QStringLiteral("/truth.json"));
  if (!file.open(QIODevice::WriteOnly) || file.write(QJsonDocument(truth).toJson()) < 0)
    return std::fprintf(stderr, "cannot write truth.json\n"), 1;
  return 0;
}

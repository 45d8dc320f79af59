// The scenes and captions of the built-in demo set (see shapes_scene.h and
// docs/datasets.md).
#include "expnet/data/shapes_scene.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <set>
#include <stdexcept>

#include "expnet/text/caption_text.h"
#include "data/seeded_random.h"
#include "data/shapes_palette.h"

namespace expnet {
namespace {

constexpr int S = kShapesImageSize;

using data::mix_seed;
using data::Rng;
using data::classic_backgrounds;
using data::classic_shape_colours;

const std::vector<std::string> kShapeNames = {"circle", "square", "triangle", "star", "diamond"};

// Spatial facts used by the captions. Image y grows downwards. A relation is
// only stated when it is clear: 22 px apart along its axis and dominant enough.
constexpr int kClear = 22;
bool left_of(const ShapeItem& a, const ShapeItem& b) {
  const int dx = b.x - a.x, dy = std::abs(b.y - a.y);
  return dx >= kClear && 2 * dx >= dy;
}
bool above(const ShapeItem& a, const ShapeItem& b) {
  const int dy = b.y - a.y, dx = std::abs(b.x - a.x);
  return dy >= kClear && 2 * dy >= dx;
}
bool near(const ShapeItem& a, const ShapeItem& b) {
  const double d = std::hypot(a.x - b.x, a.y - b.y);
  return d <= a.radius + b.radius + 24;
}
int row_of(const ShapeItem& s) { return s.y < S * 36 / 100 ? 0 : s.y > S * 64 / 100 ? 2 : 1; }
int col_of(const ShapeItem& s) { return s.x < S * 36 / 100 ? 0 : s.x > S * 64 / 100 ? 2 : 1; }

std::string plural(const std::string& shape) { return shape + "s"; }

class CaptionWriter {
 public:
  CaptionWriter(const ShapesScene& scene, Rng& rng) : scene_(scene), rng_(rng) {}

  std::string size_word(const ShapeItem& s) {
    return s.size == "small" ? rng_.pick({"small", "little"}) : rng_.pick({"large", "big"});
  }
  static std::string with_article(const std::string& phrase) {
    const char c = phrase.empty() ? 'x' : phrase[0];
    return (std::strchr("aeiou", c) ? "an " : "a ") + phrase;
  }
  // "small red circle" (size word sometimes, colour always; never for a
  // medium shape, whose size no word states). The chance is rolled for every
  // size, so a scene's random sequence does not depend on its sizes.
  std::string bare(const ShapeItem& s, int size_percent = 45) {
    std::string phrase = s.color + " " + s.shape;
    if (rng_.chance(size_percent) && s.size != "medium") phrase = size_word(s) + " " + phrase;
    return phrase;
  }
  // Shapes of the same kind are told apart by their size where it differs.
  std::string np(const ShapeItem& s, int size_percent = 45) {
    return with_article(bare(s, unique(s) ? size_percent : 100));
  }

  std::string loc(const ShapeItem& s) {
    static const std::vector<std::vector<std::vector<const char*>>> phrases = {
        {{"in the top left corner", "at the top left", "in the upper left"},
         {"near the top", "at the top", "at the top of the image"},
         {"in the top right corner", "at the top right", "in the upper right"}},
        {{"on the left", "on the left side", "at the left"},
         {"in the middle", "in the center", "in the middle of the image"},
         {"on the right", "on the right side", "at the right"}},
        {{"in the bottom left corner", "at the bottom left", "in the lower left"},
         {"near the bottom", "at the bottom", "at the bottom of the image"},
         {"in the bottom right corner", "at the bottom right", "in the lower right"}}};
    return rng_.pick(phrases[static_cast<size_t>(row_of(s))][static_cast<size_t>(col_of(s))]);
  }

  // Where a is relative to b; "" when nothing is clear.
  std::string rel(const ShapeItem& a, const ShapeItem& b) {
    const bool l = left_of(a, b), r = left_of(b, a), u = above(a, b), d = above(b, a);
    std::vector<std::string> options;
    if (l) options.insert(options.end(), {"to the left of", "left of", "on the left of"});
    if (r) options.insert(options.end(), {"to the right of", "right of", "on the right of"});
    if (u) options.insert(options.end(), {"above", "over"});
    if (d) options.insert(options.end(), {"below", "under", "beneath"});
    if ((l || r) && (u || d)) options.push_back(std::string(u ? "above" : "below") + " and to the " + (l ? "left" : "right") + " of");
    return options.empty() ? std::string() : rng_.pick(options);
  }

  // "a gray" / "a dark": the background's word with its article; no_background() when no word is true of it.
  bool no_background() const { return scene_.background.empty(); }
  std::string background() const { return with_article(scene_.background); }

  bool unique(const ShapeItem& s) const {
    int same = 0;
    for (const auto& other : scene_.shapes) same += other.shape == s.shape && other.color == s.color;
    return same == 1;
  }
  bool same_kind(const ShapeItem& a, const ShapeItem& b) const { return a.shape == b.shape && a.color == b.color; }

  const ShapesScene& scene_;
  Rng& rng_;
};

using Structure = std::function<std::string(CaptionWriter& w)>;

// Two distinct random shapes of a scene with >= 2 shapes.
std::pair<const ShapeItem*, const ShapeItem*> pick_pair(CaptionWriter& w) {
  const auto& shapes = w.scene_.shapes;
  const int i = static_cast<int>(w.rng_.below(shapes.size()));
  int j = static_cast<int>(w.rng_.below(shapes.size() - 1));
  if (j >= i) ++j;
  return {&shapes[static_cast<size_t>(i)], &shapes[static_cast<size_t>(j)]};
}

size_t count(const CaptionWriter& w) { return w.scene_.shapes.size(); }
const ShapeItem& only(const CaptionWriter& w) { return w.scene_.shapes.front(); }

// A structure about two distinct shapes, picked at random, of a scene with two or more.
Structure about_a_pair(std::string (*say)(CaptionWriter& w, const ShapeItem& a, const ShapeItem& b)) {
  return [say](CaptionWriter& w) -> std::string {
    if (count(w) < 2) return "";
    auto [a, b] = pick_pair(w);
    return say(w, *a, *b);
  };
}

// A structure about a scene of exactly three shapes.
Structure about_three(std::string (*say)(CaptionWriter& w, const std::vector<ShapeItem>& s)) {
  return [say](CaptionWriter& w) -> std::string { return count(w) != 3 ? "" : say(w, w.scene_.shapes); };
}

// A structure about a scene of three shapes that tries each shape in turn as
// `a` (b and c the two others, in scene order from a) until one gives a sentence.
Structure about_each_of_three(
    std::string (*say)(CaptionWriter& w, const ShapeItem& a, const ShapeItem& b, const ShapeItem& c)) {
  return [say](CaptionWriter& w) -> std::string {
    if (count(w) != 3) return "";
    const auto& s = w.scene_.shapes;
    for (size_t m = 0; m < 3; ++m) {
      std::string sentence = say(w, s[m], s[(m + 1) % 3], s[(m + 2) % 3]);
      if (!sentence.empty()) return sentence;
    }
    return "";
  };
}

// Each entry is one sentence structure; it returns "" where it does not apply.
// Ids are the index in this table and are written with each caption.
const std::vector<Structure>& structures() {
  static const std::vector<Structure> table = {
      // --- one shape ---
      [](CaptionWriter& w) -> std::string { return count(w) != 1 ? "" : w.np(only(w)) + " " + w.loc(only(w)); },
      [](CaptionWriter& w) -> std::string { return count(w) != 1 ? "" : "there is " + w.np(only(w)) + " " + w.loc(only(w)); },
      [](CaptionWriter& w) -> std::string { return count(w) != 1 || w.no_background() ? "" : w.np(only(w), 70) + " on " + w.background() + " background"; },
      [](CaptionWriter& w) -> std::string { return count(w) != 1 ? "" : w.loc(only(w)) + " there is " + w.np(only(w)); },
      [](CaptionWriter& w) -> std::string {
        return count(w) != 1 ? "" : std::string(w.rng_.pick({"a picture of ", "an image of ", "a drawing of "})) + w.np(only(w)) + " " + w.loc(only(w));
      },
      [](CaptionWriter& w) -> std::string { return count(w) != 1 ? "" : "a single " + w.bare(only(w), 0) + " " + w.loc(only(w)); },
      [](CaptionWriter& w) -> std::string {
        return count(w) != 1 ? "" : w.np(only(w)) + " " + w.rng_.pick({"that is ", "which is "}) + w.loc(only(w));
      },
      [](CaptionWriter& w) -> std::string {
        return count(w) != 1 || w.no_background() ? "" : w.background() + " background with " + w.np(only(w)) + " " + w.loc(only(w));
      },
      [](CaptionWriter& w) -> std::string {
        return count(w) != 1 ? "" : w.np(only(w)) + " " + w.rng_.pick({"sitting ", "placed ", "drawn "}) + w.loc(only(w));
      },
      [](CaptionWriter& w) -> std::string { return count(w) != 1 ? "" : "just one shape, " + w.np(only(w)) + " " + w.loc(only(w)); },
      [](CaptionWriter& w) -> std::string {
        return count(w) != 1 ? "" : "the " + only(w).shape + " " + w.loc(only(w)) + " is " + only(w).color;
      },
      [](CaptionWriter& w) -> std::string {
        return count(w) != 1 || w.no_background() ? "" : "a lone " + w.bare(only(w), 0) + " " + w.loc(only(w)) + " on " + w.background() + " background";
      },
      // --- two shapes or more: a pair ---
      about_a_pair([](CaptionWriter& w, const ShapeItem& a, const ShapeItem& b) -> std::string {
        return w.np(a) + " " + w.rel(a, b) + " " + w.np(b);
      }),
      about_a_pair([](CaptionWriter& w, const ShapeItem& a, const ShapeItem& b) -> std::string {
        return "there is " + w.np(a) + " " + w.rel(a, b) + " " + w.np(b);
      }),
      about_a_pair([](CaptionWriter& w, const ShapeItem& a, const ShapeItem& b) -> std::string {
        return w.np(a) + " is " + w.rel(a, b) + " " + w.np(b);
      }),
      about_a_pair([](CaptionWriter& w, const ShapeItem& a, const ShapeItem& b) -> std::string {
        return w.np(b) + " with " + w.np(a) + " " + w.rel(a, b) + " it";
      }),
      about_a_pair([](CaptionWriter& w, const ShapeItem& a, const ShapeItem& b) -> std::string {
        return w.rel(a, b) + " " + w.np(b) + " there is " + w.np(a);
      }),
      about_a_pair([](CaptionWriter& w, const ShapeItem& a, const ShapeItem& b) -> std::string {
        if (row_of(a) == row_of(b) && col_of(a) == col_of(b)) return "";
        return w.np(a) + " " + w.loc(a) + " and " + w.np(b) + " " + w.loc(b);
      }),
      about_a_pair([](CaptionWriter& w, const ShapeItem& a, const ShapeItem& b) -> std::string {
        if (!near(a, b)) return "";
        const bool side = left_of(a, b) || left_of(b, a);
        return w.np(a) + " " + (side ? w.rng_.pick({"next to ", "near ", "beside "}) : w.rng_.pick({"next to ", "near ", "close to "})) + w.np(b);
      }),
      [](CaptionWriter& w) -> std::string {
        if (count(w) != 2) return "";
        auto [a, b] = pick_pair(w);
        return "two shapes, " + w.np(*a) + " " + w.rel(*a, *b) + " " + w.np(*b);
      },
      [](CaptionWriter& w) -> std::string {  // a pair of the same kind
        for (size_t i = 0; i < count(w); ++i)
          for (size_t j = i + 1; j < count(w); ++j) {
            const auto& a = w.scene_.shapes[i];
            const auto& b = w.scene_.shapes[j];
            if (!w.same_kind(a, b)) continue;
            if (count(w) == 3 && w.same_kind(a, w.scene_.shapes[3 - i - j])) continue;
            std::vector<std::string> where;
            if (left_of(a, b) || left_of(b, a)) where.push_back("side by side");
            if (above(a, b) || above(b, a)) where.push_back("one above the other");
            if (row_of(a) == 0 && row_of(b) == 0) where.push_back("near the top");
            if (row_of(a) == 2 && row_of(b) == 2) where.push_back("near the bottom");
            if (col_of(a) == 0 && col_of(b) == 0) where.push_back("on the left");
            if (col_of(a) == 2 && col_of(b) == 2) where.push_back("on the right");
            if (where.empty()) continue;
            return "two " + a.color + " " + plural(a.shape) + " " + w.rng_.pick(where);
          }
        return "";
      },
      about_a_pair([](CaptionWriter& w, const ShapeItem& a, const ShapeItem& b) -> std::string {  // same shape, different colours
        if (a.shape != b.shape || a.color == b.color) return "";
        for (const auto& other : w.scene_.shapes)
          if (&other != &a && &other != &b && other.shape == a.shape) return "";
        return "two " + plural(a.shape) + ", " + CaptionWriter::with_article(a.color) + " one " + w.rel(a, b) + " " +
               CaptionWriter::with_article(b.color) + " one";
      }),
      about_a_pair([](CaptionWriter& w, const ShapeItem& a, const ShapeItem& b) -> std::string {  // size contrast
        if (a.size != "large" || b.size != "small") return "";
        return CaptionWriter::with_article(w.size_word(a) + " " + a.color + " " + a.shape) + " and a smaller " +
               b.color + " " + b.shape + " " + w.rel(b, a) + " it";
      }),
      [](CaptionWriter& w) -> std::string {  // two shapes, opposite sides
        if (count(w) != 2) return "";
        auto [a, b] = pick_pair(w);
        if (left_of(*a, *b)) return w.np(*a) + " on the left and " + w.np(*b) + " on the right";
        if (above(*a, *b)) return w.np(*a) + " at the top and " + w.np(*b) + " at the bottom";
        return "";
      },
      about_a_pair([](CaptionWriter& w, const ShapeItem& a, const ShapeItem& b) -> std::string {  // definite descriptions
        if (!w.unique(a) || !w.unique(b)) return "";
        return "the " + a.color + " " + a.shape + " is " + w.rel(a, b) + " the " + b.color + " " + b.shape;
      }),
      about_a_pair([](CaptionWriter& w, const ShapeItem& a, const ShapeItem& b) -> std::string {
        if (w.no_background()) return "";
        return w.background() + " background with " + w.np(a) + " " + w.rel(a, b) + " " + w.np(b);
      }),
      [](CaptionWriter& w) -> std::string {  // extremes
        if (count(w) < 2) return "";
        const auto& shapes = w.scene_.shapes;
        const int which = static_cast<int>(w.rng_.below(4));
        const char* names[] = {"leftmost", "rightmost", "highest", "lowest"};
        for (const auto& s : shapes) {
          bool extreme = true;
          for (const auto& o : shapes) {
            if (&o == &s) continue;
            const int gap = which == 0 ? o.x - s.x : which == 1 ? s.x - o.x : which == 2 ? o.y - s.y : s.y - o.y;
            extreme = extreme && gap >= kClear;
          }
          if (extreme) return std::string("the ") + names[which] + " shape is " + w.np(s);
        }
        return "";
      },
      // --- three shapes ---
      [](CaptionWriter& w) -> std::string {
        if (count(w) != 3) return "";
        std::vector<const ShapeItem*> order = {&w.scene_.shapes[0], &w.scene_.shapes[1], &w.scene_.shapes[2]};
        const bool horizontal = w.rng_.chance(50);
        auto key = [horizontal](const ShapeItem* s) { return horizontal ? s->x : s->y; };
        std::sort(order.begin(), order.end(), [&](auto* p, auto* q) { return key(p) < key(q); });
        if (key(order[1]) - key(order[0]) < 16 || key(order[2]) - key(order[1]) < 16) return "";
        return std::string(horizontal ? "from left to right, " : "from top to bottom, ") + w.np(*order[0]) + ", " +
               w.np(*order[1]) + " and " + w.np(*order[2]);
      },
      about_three([](CaptionWriter& w, const std::vector<ShapeItem>& s) -> std::string {
        return "three shapes, " + w.np(s[0]) + " " + w.loc(s[0]) + ", " + w.np(s[1]) + " and " + w.np(s[2]);
      }),
      about_each_of_three([](CaptionWriter& w, const ShapeItem& a, const ShapeItem& b, const ShapeItem& c) -> std::string {  // between
        const bool h = (left_of(b, a) && left_of(a, c)) || (left_of(c, a) && left_of(a, b));
        const bool v = (above(b, a) && above(a, c)) || (above(c, a) && above(a, b));
        if (h || v) return w.np(a) + " between " + w.np(b) + " and " + w.np(c);
        return "";
      }),
      about_three([](CaptionWriter& w, const std::vector<ShapeItem>& s) -> std::string {
        return w.np(s[0]) + " " + w.rel(s[0], s[1]) + " " + w.np(s[1]) + " and " + w.np(s[2]) + " " + w.loc(s[2]);
      }),
      about_three([](CaptionWriter& w, const std::vector<ShapeItem>& s) -> std::string {  // three of a kind
        if (s[0].shape != s[1].shape || s[0].shape != s[2].shape) return "";
        if (w.same_kind(s[0], s[1]) && w.same_kind(s[0], s[2])) return "three " + s[0].color + " " + plural(s[0].shape);
        return "three " + plural(s[0].shape) + ", " + s[0].color + ", " + s[1].color + " and " + s[2].color;
      }),
      about_each_of_three([](CaptionWriter& w, const ShapeItem& single, const ShapeItem& a, const ShapeItem& b) -> std::string {  // a pair and one more
        if (w.same_kind(a, b) && !w.same_kind(a, single))
          return "two " + a.color + " " + plural(a.shape) + " and " + w.np(single) + " " + w.loc(single);
        return "";
      }),
      about_three([](CaptionWriter& w, const std::vector<ShapeItem>& s) -> std::string {
        std::set<int> regions;
        for (const auto& x : s) regions.insert(row_of(x) * 3 + col_of(x));
        if (regions.size() != 3) return "";
        return w.np(s[0]) + " " + w.loc(s[0]) + ", " + w.np(s[1]) + " " + w.loc(s[1]) + " and " + w.np(s[2]) + " " + w.loc(s[2]);
      }),
      about_each_of_three([](CaptionWriter& w, const ShapeItem& a, const ShapeItem& b, const ShapeItem& c) -> std::string {  // one shape related to both others
        const char* relation = left_of(a, b) && left_of(a, c)   ? "to the left of"
                               : left_of(b, a) && left_of(c, a) ? "to the right of"
                               : above(a, b) && above(a, c)     ? "above"
                               : above(b, a) && above(c, a)     ? "below"
                                                                : nullptr;
        if (relation) return w.np(a) + " " + relation + " both " + w.np(b) + " and " + w.np(c);
        return "";
      }),
  };
  return table;
}

// Human-like surface: sometimes a capital letter, sometimes a full stop.
std::string finish(std::string text, Rng& rng) {
  if (rng.chance(40) && !text.empty()) text[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(text[0])));
  if (rng.chance(25)) text += ".";
  return text;
}

void write_captions(ShapesScene& scene, Rng& rng) {
  const auto& table = structures();
  std::set<std::string> seen;  // cleaned text: captions differ as a model sees them
  for (int attempt = 0; attempt < 8 && scene.captions.size() < kShapesCaptionsPerImage; ++attempt) {
    std::vector<int> order(table.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
    rng.shuffle(order);
    for (const int id : order) {
      if (scene.captions.size() >= kShapesCaptionsPerImage) break;
      CaptionWriter writer(scene, rng);
      const std::string text = table[static_cast<size_t>(id)](writer);
      if (text.empty() || !seen.insert(clean_caption_text(text)).second) continue;
      scene.captions.push_back(finish(text, rng));
      scene.structures.push_back(id);
    }
  }
  if (scene.captions.size() < kShapesCaptionsPerImage) throw std::logic_error("shapes: fewer than five distinct captions");
}

bool fits(const ShapeItem& s, const std::vector<ShapeItem>& placed) {
  for (const auto& o : placed) {
    // Stars and triangles reach 1.2 radii from their centre: keep their tips apart too.
    const int dx = s.x - o.x, dy = s.y - o.y, gap = (s.radius + o.radius) * 6 / 5 + 4;
    if (dx * dx + dy * dy < gap * gap || std::max(std::abs(dx), std::abs(dy)) < kClear + 2) return false;
  }
  return true;
}

// The varied style's look, drawn after the classic scene so both share its layout
// code: a shade per shape, its rotation and proportions, and a backdrop that
// contrasts with every shape (its word, if one is true, goes into the captions).
void vary(ShapesScene& scene, Rng& rng) {
  for (auto& s : scene.shapes) {
    s.rgb = data::varied_shade(s.color, rng);
    if (s.shape == "square") {
      s.angle = data::uniform(rng, -18, 18);  // further would read as a diamond
    } else if (s.shape == "diamond") {
      s.angle = data::uniform(rng, -10, 10);
      s.form_a = data::uniform(rng, 1.3, 1.7);  // height / width: never a turned square
    } else if (s.shape == "triangle") {
      s.angle = data::uniform(rng, 0, 360);
      s.form_a = data::uniform(rng, -28, 22);  // corner offsets: flat, equilateral, tall, lopsided
      s.form_b = data::uniform(rng, -28, 22);
    } else if (s.shape == "star") {
      s.angle = data::uniform(rng, 0, 360);
      s.form_a = data::uniform(rng, 0.36, 0.52);  // inner / outer radius
    }
  }
  scene.backdrop = data::pick_backdrop(scene.shapes, rng);
  scene.background = data::backdrop_word(scene.backdrop);
}

}  // namespace

int shapes_structure_count() { return static_cast<int>(structures().size()); }

const std::vector<std::string>& shapes_colour_words() {
  static const std::vector<std::string> words = [] {
    std::vector<std::string> out;
    for (const auto& c : classic_shape_colours()) out.emplace_back(c.name);
    for (const auto& c : classic_backgrounds()) out.emplace_back(c.name);
    return out;
  }();
  return words;
}

const std::vector<std::string>& shapes_shape_words() { return kShapeNames; }

ShapesStyle parse_shapes_style(const std::string& name) {
  if (name == "varied") return ShapesStyle::varied;
  if (name == "classic") return ShapesStyle::classic;
  throw std::invalid_argument("unknown shapes style '" + name + "' (use varied or classic)");
}

const char* shapes_style_name(ShapesStyle style) { return style == ShapesStyle::classic ? "classic" : "varied"; }

ShapesScene make_shapes_scene(uint64_t seed, int64_t index, ShapesStyle style) {
  Rng rng(mix_seed(seed, static_cast<uint64_t>(index), 1));
  ShapesScene scene;
  scene.style = style;
  scene.background = rng.pick(classic_backgrounds()).name;
  const int roll = static_cast<int>(rng.below(100));
  const int wanted = roll < 30 ? 1 : roll < 75 ? 2 : 3;
  for (int k = 0; k < wanted; ++k) {
    ShapeItem s;
    if (k > 0 && rng.chance(30)) {  // repeated kinds make "two green triangles" scenes
      const auto& model = scene.shapes[static_cast<size_t>(rng.below(scene.shapes.size()))];
      s.shape = model.shape;
      s.color = model.color;
    } else {
      s.shape = rng.pick(kShapeNames);
      s.color = rng.pick(classic_shape_colours()).name;
    }
    // Radii 9-24 px without a gap, in three groups: the captions name small
    // (9-12) and large (17-24) shapes as such and never the size of a medium
    // one (13-16), so the size words stay clear while shapes of every size in
    // between are seen (with only 9-12 and 17-22, the demo model called
    // circles of the sizes in between "diamond"; docs/training.md).
    const int size_roll = static_cast<int>(rng.below(100));
    s.size = size_roll < 40 ? "small" : size_roll < 60 ? "medium" : "large";
    s.radius = s.size == "small" ? rng.range(9, 12) : s.size == "medium" ? rng.range(13, 16) : rng.range(17, 24);
    bool placed = false;
    for (int attempt = 0; attempt < 200 && !placed; ++attempt) {
      const int margin = s.radius * 6 / 5 + 3;
      s.x = rng.range(margin, S - 1 - margin);
      s.y = rng.range(margin, S - 1 - margin);
      placed = fits(s, scene.shapes);
    }
    if (placed) scene.shapes.push_back(s);
  }
  if (style == ShapesStyle::varied) vary(scene, rng);
  write_captions(scene, rng);
  return scene;
}

}  // namespace expnet

"""Plumbing shared by the Python held-out renderers (pillow_scenes.py,
opencv_scenes.py): command line and output files, per-scene random streams,
the scene's objects and their placement, background colours and gradients, the
colour-distance test that keeps the truth visually true, pixel noise and
truth.json. The look of the scenes (colour shades, shape geometry, outlines,
antialiasing, image sizes) is each renderer's own; none of this is shared with
the shapes set's generator.

Truth per object: colour and shape names, x/y (the shape's centre: the centroid
for triangles) and r, the radius of the disc around x/y that holds the whole
shape, outline included."""
import argparse
import colorsys
import json
import math
import os
import random

import numpy as np

COLOURS = ["red", "green", "blue", "yellow"]
SHAPES = ["circle", "square", "triangle"]
# Nominal size (a circle's radius) on a 128 px image, scaled to the image size.
SIZE_MIN, SIZE_MAX = 14, 26
# Fill vs any background pixel under the shape: at least this far apart (RGB,
# Euclidean), so that what the truth says is what a person sees.
MIN_COLOUR_DISTANCE = 120


def parse_args(doc, default_seed, prefix):
    parser = argparse.ArgumentParser(
        description=doc,
        epilog='Writes OUT/%s_NNN.png and OUT/truth.json ({file: [{"color", "shape", "x", "y", "r"}, ...]}); '
        "the same seed writes the same files." % prefix)
    parser.add_argument("out")
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--seed", type=int, default=default_seed)
    return parser.parse_args()


def scene_rng(seed, index):
    # One stream per scene: scene i is the same whatever --count is.
    return random.Random(seed * 1_000_003 + index * 7919 + 17)


def object_count(index):
    return 1 + index % 2  # half one-object, half two-object scenes


def nominal_size(rng, image_size):
    return rng.uniform(SIZE_MIN, SIZE_MAX) * image_size / 128.0


def place(rng, radii, image_size, margin, gap):
    """Centres (integers) for discs of the given radii: inside the image with
    `margin` px to spare, and `gap` px between any two discs. None if no room."""
    centres = []
    for r in radii:
        lo, hi = math.ceil(r + margin), math.floor(image_size - r - margin)
        for _attempt in range(400):
            x, y = rng.randint(lo, hi), rng.randint(lo, hi)
            if all(math.hypot(x - cx, y - cy) >= r + cr + gap for (cx, cy), cr in zip(centres, radii)):
                centres.append((x, y))
                break
        else:
            return None
    return centres


def centred_polygon(points):
    """("polygon", the vertices moved so that their centroid is at 0,0), and the
    radius around the centroid that holds them."""
    cx = sum(p[0] for p in points) / len(points)
    cy = sum(p[1] for p in points) / len(points)
    centred = [(x - cx, y - cy) for x, y in points]
    return ("polygon", centred), max(math.hypot(x, y) for x, y in centred)


def hsv(h, s, v):
    return np.array(colorsys.hsv_to_rgb(h % 1.0, s, v)) * 255.0


def background_colour(rng, kind):
    """A background of random hue: dark (any saturation), mid or light (muted,
    so that no background reads as one of the objects' colour words)."""
    h = rng.random()
    if kind == "dark":
        return hsv(h, rng.uniform(0.0, 0.7), rng.uniform(0.03, 0.3))
    if kind == "mid":
        return hsv(h, rng.uniform(0.0, 0.3), rng.uniform(0.38, 0.62))
    return hsv(h, rng.uniform(0.0, 0.25), rng.uniform(0.8, 0.98))


def gradient(size, c0, c1, angle):
    """Linear gradient from c0 to c1 across the image along `angle` (radians)."""
    ys, xs = np.mgrid[0:size, 0:size].astype(np.float64) / max(size - 1, 1)
    t = (xs - 0.5) * math.cos(angle) + (ys - 0.5) * math.sin(angle)
    t = (t - t.min()) / max(t.max() - t.min(), 1e-9)
    return c0[None, None, :] * (1 - t[..., None]) + c1[None, None, :] * t[..., None]


def radial(size, inner, outer, cx, cy):
    ys, xs = np.mgrid[0:size, 0:size].astype(np.float64)
    t = np.clip(np.hypot(xs - cx, ys - cy) / (0.75 * size), 0, 1)
    return inner[None, None, :] * (1 - t[..., None]) + outer[None, None, :] * t[..., None]


def distinct(background, objects, fills):
    """Every fill is at least MIN_COLOUR_DISTANCE from each background pixel
    in the square around its object."""
    size = background.shape[0]
    for o, fill in zip(objects, fills):
        x0, x1 = max(int(o["x"] - o["r"]), 0), min(int(o["x"] + o["r"]) + 1, size)
        y0, y1 = max(int(o["y"] - o["r"]), 0), min(int(o["y"] + o["r"]) + 1, size)
        patch = background[y0:y1, x0:x1].reshape(-1, 3)
        if np.min(np.linalg.norm(patch - np.asarray(fill, dtype=np.float64), axis=1)) < MIN_COLOUR_DISTANCE:
            return False
    return True


def add_noise(image, seed, index, sigma):
    """Mild Gaussian pixel noise on a uint8 HxWx3 array."""
    noise = np.random.default_rng([seed, index]).normal(0.0, sigma, image.shape)
    return np.clip(image.astype(np.float64) + noise, 0, 255).round().astype(np.uint8)


def make_scene(rng, count, size, margin, gap, geometry, shade, outline, background):
    """One scene on a `size` px image: its background (float RGB), the objects'
    specs (colour, shape, geometry, bound, fill, outline), centres and truth.
    `count` objects of random colour and shape, `margin` px from the edges and
    `gap` px apart (on a 128 px image, scaled), on a background that every fill
    stands out from. The look is the renderer's: geometry(rng, shape, size) ->
    (geometry, bound), shade(rng, colour) -> fill, outline(rng, fill, size) ->
    (colour, width) or None, background(rng, size) -> HxWx3 float RGB."""
    while True:
        specs = []
        for _ in range(count):
            colour, shape = rng.choice(COLOURS), rng.choice(SHAPES)
            geo, bound = geometry(rng, shape, nominal_size(rng, size))
            fill = shade(rng, colour)
            line = outline(rng, fill, size)
            if line:
                bound += line[1] / 2
            specs.append((colour, shape, geo, bound, fill, line))
        centres = place(rng, [s[3] for s in specs], size, margin=margin * size / 128, gap=gap * size / 128)
        if centres is None:
            continue
        objects = [truth_object(s[0], s[1], c, s[3]) for s, c in zip(specs, centres)]
        for _try in range(30):
            bg = background(rng, size)
            if distinct(bg, objects, [s[4] for s in specs]):
                return bg, specs, centres, objects


def truth_object(colour, shape, centre, r):
    return {"color": colour, "shape": shape, "x": round(float(centre[0]), 2), "y": round(float(centre[1]), 2),
            "r": round(float(r), 2)}


def write_scenes(doc, default_seed, prefix, render, save):
    """The renderers' main: OUT/<prefix>_NNN.png for N below --count, each
    render(seed, index) -> (image, truth objects) written by save(image, path),
    and OUT/truth.json."""
    args = parse_args(doc, default_seed, prefix)
    os.makedirs(args.out, exist_ok=True)
    truth = {}
    for i in range(args.count):
        image, objects = render(args.seed, i)
        name = "%s_%03d.png" % (prefix, i)
        save(image, os.path.join(args.out, name))
        truth[name] = objects
    with open(os.path.join(args.out, "truth.json"), "w") as f:
        json.dump(truth, f, indent=1, sort_keys=True)

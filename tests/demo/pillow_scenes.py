#!/usr/bin/python3
"""Held-out scenes for the demo model drawn with Pillow (issue 24): one or two
red, green, blue or yellow circles, squares or triangles, in Pillow's named
shades, on 160 or 200 px images with dark, mid or light backgrounds of random
hue (flat or a gradient), aliased or 4x supersampled, sometimes outlined, with
mild noise. Training never sees these scenes."""
import math
import os
import sys

import numpy as np
from PIL import Image, ImageColor, ImageDraw

sys.dont_write_bytecode = True  # keep the source tree free of __pycache__
import heldout_common as hc

DEFAULT_SEED = 2401
SIZES = [160, 200]
# Pillow's own colour names; each shade is one a person calls by its word.
SHADES = {
    "red": ["red", "crimson", "firebrick", "#e8202a"],
    "green": ["green", "forestgreen", "limegreen", "seagreen", "lime"],
    "blue": ["blue", "royalblue", "mediumblue", "dodgerblue"],
    "yellow": ["yellow", "gold", "#ffe135"],
}
SUPERSAMPLE = 4


def shade(rng, colour):
    base = np.array(ImageColor.getrgb(rng.choice(SHADES[colour])), dtype=np.float64)
    return tuple(int(v) for v in np.clip(base + [rng.randint(-12, 12) for _ in range(3)], 0, 255))


def geometry(rng, shape, size):
    """("circle", r) or ("square", half_side, degrees) or ("polygon", points
    around the centroid at 0,0); and the radius of the disc that holds it."""
    if shape == "circle":
        return ("circle", size), size
    if shape == "square":
        half = size * rng.uniform(0.82, 0.95)
        return ("square", half, rng.uniform(-18.0, 18.0)), half * math.sqrt(2)
    # Isosceles triangles of several proportions, mostly pointing up, tilted.
    b, h = size * rng.uniform(1.0, 1.3), size * rng.uniform(1.7, 2.3)
    turn = math.radians(rng.uniform(-30.0, 30.0) + (180.0 if rng.random() < 0.25 else 0.0))
    points = [(0.0, -h / 2), (-b, h / 2), (b, h / 2)]
    points = [(x * math.cos(turn) - y * math.sin(turn), x * math.sin(turn) + y * math.cos(turn)) for x, y in points]
    return hc.centred_polygon(points)


def background(rng, size):
    kind = rng.choices(["dark", "mid", "light"], weights=[4, 3, 3])[0]
    c0 = hc.background_colour(rng, kind)
    if rng.random() < 0.5:
        return np.broadcast_to(c0, (size, size, 3)).astype(np.float64)
    c1 = np.clip(c0 + [rng.uniform(-40, 40) for _ in range(3)], 0, 255)
    return hc.gradient(size, c0, c1, rng.choice([math.pi / 2, math.pi / 4, 3 * math.pi / 4]))


def outline(rng, fill, size):
    """For 30% of the objects, a darker line of the fill or a near-black one: (colour, width)."""
    if rng.random() >= 0.3:
        return None
    width = max(1, round(rng.choice([1, 2, 3]) * size / 160))
    return (tuple(int(v * 0.55) for v in fill) if rng.random() < 0.6 else (20, 20, 20)), width


def square_corners(half, degrees):
    t = math.radians(degrees)
    return [(half * (sx * math.cos(t) - sy * math.sin(t)), half * (sx * math.sin(t) + sy * math.cos(t)))
            for sx, sy in ((-1, -1), (1, -1), (1, 1), (-1, 1))]


def draw(image, specs, centres, scale):
    d = ImageDraw.Draw(image)
    for (_colour, _shape, geo, _bound, fill, outline), (x, y) in zip(specs, centres):
        x, y = x * scale, y * scale
        line, width = (outline[0], outline[1] * scale) if outline else (None, 0)
        if geo[0] == "circle":
            r = geo[1] * scale
            d.ellipse([x - r, y - r, x + r, y + r], fill=fill, outline=line, width=width)
        else:
            corners = square_corners(geo[1], geo[2]) if geo[0] == "square" else geo[1]
            d.polygon([(x + px * scale, y + py * scale) for px, py in corners], fill=fill, outline=line, width=width)


def render(seed, index):
    rng = hc.scene_rng(seed, index)
    size = rng.choice(SIZES)
    bg, specs, centres, objects = hc.make_scene(rng, hc.object_count(index), size, margin=3, gap=6, geometry=geometry,
                                                shade=shade, outline=outline, background=background)
    image = Image.fromarray(bg.round().astype(np.uint8))
    if rng.random() < 0.5:  # antialiased: drawn at 4x, averaged down
        big = image.resize((size * SUPERSAMPLE, size * SUPERSAMPLE), Image.BILINEAR)
        draw(big, specs, centres, SUPERSAMPLE)
        image = big.resize((size, size), Image.BOX)
    else:
        draw(image, specs, centres, 1)
    pixels = hc.add_noise(np.asarray(image), seed, index, rng.uniform(1.5, 5.0))
    return Image.fromarray(pixels), objects


if __name__ == "__main__":
    hc.write_scenes(__doc__, DEFAULT_SEED, "pillow", render, lambda image, path: image.save(path))

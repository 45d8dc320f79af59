#!/usr/bin/python3
"""Held-out scenes for the demo model drawn with OpenCV's drawing functions
(issue 24): one or two red, green, blue or yellow circles, squares (a rotated
box, under 20 degrees) or triangles (three vertices at uneven angles, any
rotation), in CSS/chart-like shades, on 128 or 256 px images with flat,
diagonal-gradient or vignette backgrounds of random hue, 8-connected or
antialiased edges, sometimes outlined, sometimes softly blurred, with mild
noise. Training never sees these scenes."""
import math
import os
import sys

import cv2
import numpy as np

sys.dont_write_bytecode = True  # keep the source tree free of __pycache__
import heldout_common as hc

DEFAULT_SEED = 2402
SIZES = [128, 256]
SHIFT = 4  # OpenCV's fixed-point bits: vertices and radii to 1/16 px
# RGB, chart and web palettes rather than Pillow's or Qt's names.
SHADES = {
    "red": [(214, 39, 40), (222, 35, 45), (204, 0, 0), (239, 68, 68)],
    "green": [(44, 160, 44), (60, 180, 75), (0, 158, 96), (34, 197, 94)],
    "blue": [(31, 90, 200), (67, 99, 216), (0, 82, 204), (59, 130, 246)],
    "yellow": [(255, 225, 25), (250, 204, 21), (255, 215, 0), (253, 224, 71)],
}


def shade(rng, colour):
    base = np.array(rng.choice(SHADES[colour]), dtype=np.float64)
    return tuple(int(v) for v in np.clip(base + [rng.randint(-10, 10) for _ in range(3)], 0, 255))


def geometry(rng, shape, size):
    """("circle", r) or ("polygon", points around the centre at 0,0); and the
    radius of the disc that holds it."""
    if shape == "circle":
        return ("circle", size), size
    if shape == "square":
        side = 2 * size * rng.uniform(0.8, 0.92)
        box = cv2.boxPoints(((0.0, 0.0), (side, side), rng.uniform(-19.0, 19.0)))
        return ("polygon", [tuple(p) for p in box]), side / math.sqrt(2)
    # Vertices on a circle at uneven spacing: triangles of several proportions.
    start = rng.uniform(0, 2 * math.pi)
    angles = [start, start + math.radians(120 + rng.uniform(-28, 28)), start + math.radians(240 + rng.uniform(-28, 28))]
    radius = size * rng.uniform(1.15, 1.3)
    points = [(radius * math.cos(a), radius * math.sin(a)) for a in angles]
    return hc.centred_polygon(points)


def background(rng, size):
    kind = rng.choices(["dark", "mid", "light"], weights=[3, 3, 4])[0]
    c0 = hc.background_colour(rng, kind)
    style = rng.choice(["flat", "diagonal", "vignette"])
    if style == "flat":
        return np.broadcast_to(c0, (size, size, 3)).astype(np.float64)
    c1 = hc.background_colour(rng, kind)  # same lightness, another hue
    if style == "diagonal":
        return hc.gradient(size, c0, c1, rng.uniform(0, 2 * math.pi))
    return hc.radial(size, c0, c1, rng.uniform(0.3, 0.7) * size, rng.uniform(0.3, 0.7) * size)


def outline(rng, fill, size):
    """For a quarter of the objects, a darker line of the fill's hue: (colour, width)."""
    if rng.random() >= 0.25:
        return None
    width = max(1, round(rng.uniform(1.0, 2.5) * size / 128))
    return tuple(int(v * 0.6) for v in fill), width


def fixed(x, y):
    return int(round(x * (1 << SHIFT))), int(round(y * (1 << SHIFT)))


def draw(canvas, specs, centres, line_type):
    # The canvas is BGR, as OpenCV writes it.
    for (_colour, _shape, geo, _bound, fill, outline), (x, y) in zip(specs, centres):
        bgr = fill[::-1]
        if geo[0] == "circle":
            radius = int(round(geo[1] * (1 << SHIFT)))
            cv2.circle(canvas, fixed(x, y), radius, bgr, -1, line_type, SHIFT)
            if outline:
                cv2.circle(canvas, fixed(x, y), radius - int(outline[1] * (1 << SHIFT) / 2), outline[0][::-1],
                           outline[1], line_type, SHIFT)
            continue
        points = np.array([fixed(x + px, y + py) for px, py in geo[1]], dtype=np.int32)
        cv2.fillPoly(canvas, [points], bgr, line_type, SHIFT)
        if outline:
            cv2.polylines(canvas, [points], True, outline[0][::-1], outline[1], line_type, SHIFT)


def render(seed, index):
    rng = hc.scene_rng(seed, index)
    size = rng.choice(SIZES)
    bg, specs, centres, objects = hc.make_scene(rng, hc.object_count(index), size, margin=2, gap=5, geometry=geometry,
                                                shade=shade, outline=outline, background=background)
    canvas = np.ascontiguousarray(bg[..., ::-1].round().astype(np.uint8))
    draw(canvas, specs, centres, cv2.LINE_AA if rng.random() < 0.6 else cv2.LINE_8)
    if rng.random() < 0.3:  # a soft camera-like blur
        canvas = cv2.GaussianBlur(canvas, (3, 3), rng.uniform(0.5, 0.9))
    return hc.add_noise(canvas, seed, index, rng.uniform(1.0, 4.5)), objects


def save(canvas, path):
    if not cv2.imwrite(path, canvas):
        raise SystemExit("cannot write " + path)


if __name__ == "__main__":
    hc.write_scenes(__doc__, DEFAULT_SEED, "opencv", render, save)

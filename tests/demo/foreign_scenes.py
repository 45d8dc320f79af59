#!/usr/bin/python3
"""Plain scenes drawn with Pillow rather than by our own renderer, which
packaging/screenshots.sh opens (the demo model's held-out check draws its
scenes with pillow_scenes.py, opencv_scenes.py and qpainter_scenes instead):
one or two red, green, blue or yellow circles, squares or triangles on a dark
background, Pillow's own colour names, other sizes and
image size than the shapes set. Writes OUT/foreign_NNN.png and OUT/truth.json
({file: [{"color", "shape"}, ...]}).

usage: foreign_scenes.py OUT [--count N] [--seed S]"""
import argparse
import json
import os
import random

from PIL import Image, ImageDraw

COLOURS = ["red", "green", "blue", "yellow"]
SHAPES = ["circle", "square", "triangle"]
BACKGROUNDS = [(0, 0, 0), (20, 20, 28), (36, 36, 36), (16, 24, 48), (28, 16, 24)]
SIZE = 160


def draw_shape(draw, shape, colour, cx, cy, r):
    if shape == "circle":
        draw.ellipse([cx - r, cy - r, cx + r, cy + r], fill=colour)
    elif shape == "square":
        draw.rectangle([cx - r, cy - r, cx + r, cy + r], fill=colour)
    else:
        draw.polygon([(cx, cy - r), (cx - r, cy + r), (cx + r, cy + r)], fill=colour)


def scene(rng):
    objects = []
    count = rng.choice([1, 2])
    for _ in range(count):
        for _attempt in range(200):
            r = rng.randint(16, 30)
            cx, cy = rng.randint(r + 4, SIZE - r - 5), rng.randint(r + 4, SIZE - r - 5)
            if all(abs(cx - o["x"]) > r + o["r"] + 12 or abs(cy - o["y"]) > r + o["r"] + 12 for o in objects):
                objects.append({"color": rng.choice(COLOURS), "shape": rng.choice(SHAPES), "x": cx, "y": cy, "r": r})
                break
    return objects


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--count", type=int, default=40)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rng = random.Random(args.seed)
    truth = {}
    for i in range(args.count):
        image = Image.new("RGB", (SIZE, SIZE), rng.choice(BACKGROUNDS))
        draw = ImageDraw.Draw(image)
        objects = scene(rng)
        for o in objects:
            draw_shape(draw, o["shape"], o["color"], o["x"], o["y"], o["r"])
        name = "foreign_%03d.png" % i
        image.save(os.path.join(args.out, name))
        truth[name] = [{"color": o["color"], "shape": o["shape"]} for o in objects]
    with open(os.path.join(args.out, "truth.json"), "w") as f:
        json.dump(truth, f, indent=1)


if __name__ == "__main__":
    main()

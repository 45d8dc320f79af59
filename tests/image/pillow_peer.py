# Writes inputs and Pillow's outputs for test_image_pillow into OUT_DIR and a
# manifest.json listing the comparisons. Exit code 3: Pillow is not installed.
import json
import sys

try:
    import numpy as np
    from PIL import Image, ImageOps
except ImportError as e:
    print(f"EXPNET_PIL_MISSING: {e} (apt-get install python3-pil)")
    sys.exit(3)

out, image0 = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(20240601)
cases = []


def save(name, im, **kw):
    im.save(f"{out}/{name}", **kw)
    return name


def rgb_png(name, im):
    return save(name, im.convert("RGB"))


# 1. Resize sweep: random sizes, down and up, noise and smooth content.
for i in range(48):
    w, h = int(rng.integers(1, 700)), int(rng.integers(1, 700))
    W, H = int(rng.integers(1, 500)), int(rng.integers(1, 500))
    if i % 6 == 0:
        W = w  # one axis unchanged: Pillow skips that pass
    if i % 6 == 1:
        H = h
    if i % 2:
        a = (rng.random((h, w, 3)) * 255).astype(np.uint8)
    else:
        yy, xx = np.mgrid[0:h, 0:w]
        a = np.stack([(xx * 7) % 256, (yy * 3) % 256, ((xx + yy) * 5) % 256], -1).astype(np.uint8)
    src = Image.fromarray(a)
    cases.append({"kind": "resize", "input": save(f"rs{i}_in.png", src), "width": W, "height": H,
                  "expected": save(f"rs{i}_out.png", src.resize((W, H), Image.BILINEAR))})
ref = Image.open(image0).convert("RGB")
cases.append({"kind": "resize", "input": image0, "width": 128, "height": 128,
              "expected": save("image0_128.png", ref.resize((128, 128), Image.BILINEAR))})
cases.append({"kind": "resize", "input": image0, "width": 384, "height": 384,
              "expected": save("image0_384.png", ref.resize((384, 384), Image.BILINEAR))})

# 2. Decoding: our RGB must equal Pillow's convert('RGB') (CMYK: within 1 level).
yy, xx = np.mgrid[0:48, 0:64]
smooth = Image.fromarray(np.stack([xx * 4, yy * 5, (xx + yy) * 2], -1).astype(np.uint8))
rgba = Image.fromarray(np.concatenate([np.array(smooth), (xx * 3).astype(np.uint8)[..., None]], -1), "RGBA")
decode = {
    "rgb.jpg": (smooth, {"quality": 90}),
    "grey.jpg": (smooth.convert("L"), {"quality": 90}),
    "cmyk.jpg": (smooth.convert("CMYK"), {"quality": 95}),
    "palette.png": (smooth.convert("P", palette=Image.ADAPTIVE, colors=16), {}),
    "palette_trns.png": (smooth.convert("P", palette=Image.ADAPTIVE, colors=16), {"transparency": 3}),
    "rgba.png": (rgba, {}),
    "la.png": (rgba.convert("LA"), {}),
    "bilevel.png": (smooth.convert("1"), {}),
    "grey.png": (smooth.convert("L"), {}),
    "x.bmp": (smooth, {}),
    "x.tiff": (smooth, {}),
    "x.webp": (smooth, {"lossless": True}),
    "x.ppm": (smooth, {}),
}
for name, (im, kw) in decode.items():
    save(name, im, **kw)
    cases.append({"kind": "decode", "input": name, "expected": rgb_png(name + ".rgb.png", Image.open(f"{out}/{name}")),
                  "tolerance": 1 if name == "cmyk.jpg" else 0})

# 3. EXIF orientation: applied = ImageOps.exif_transpose, ignored = raw pixels.
for orientation in range(1, 9):
    exif = Image.Exif()
    exif[0x0112] = orientation
    name = save(f"exif{orientation}.jpg", smooth, quality=95, exif=exif.tobytes())
    im = Image.open(f"{out}/{name}")
    cases.append({"kind": "decode", "input": name, "tolerance": 0,
                  "expected": rgb_png(name + ".applied.png", ImageOps.exif_transpose(im))})
    cases.append({"kind": "decode_noexif", "input": name, "tolerance": 0, "expected": rgb_png(name + ".raw.png", im)})

# 4. Truncation: every file Pillow refuses must be refused (and the reverse).
for src in ["rgb.jpg", "palette.png", "rgba.png"]:
    data = open(f"{out}/{src}", "rb").read()
    for cut in [1, 2, 12, 13, 50, len(data) // 2]:
        name = f"cut{cut}_{src}"
        open(f"{out}/{name}", "wb").write(data[:len(data) - cut])
        try:
            Image.open(f"{out}/{name}").load()
            ok = True
        except Exception:
            ok = False
        # Where we are stricter than Pillow, by design (docs/images.md):
        # - a PNG whose last IDAT lost its CRC (Pillow skips that CRC; libpng
        #   refuses it);
        # - a JPEG that lost only its end marker: Pillow reads it when the
        #   decoder happened not to look ahead past the last scan; we refuse
        #   every JPEG without its end marker, a rule that does not depend on
        #   the data.
        stricter = ok and ((src.endswith(".png") and cut > 12) or (src.endswith(".jpg") and cut <= 2))
        cases.append({"kind": "loads", "input": name, "pillow_ok": ok, "ours_may_refuse": stricter})

json.dump({"cases": cases}, open(f"{out}/manifest.json", "w"), indent=1)
print(f"{len(cases)} cases")

#!/usr/bin/env bash
# Regenerates the README screenshots (docs/screenshots/*.png and their FILE.json)
# with expnet-studio --screenshot, offscreen. Run from the repository root after a
# Release build (ninja -C build/release expnet expnet-studio). The Caption and
# Attention pages show the built-in demo model (resources/demo) on shapes scenes of
# a seed it was not trained on and on scenes drawn by Pillow (tests/demo).
set -euo pipefail
STUDIO=${STUDIO:-build/release/app/expnet-studio}
EXPNET=${EXPNET:-build/release/app/expnet}
OUT=docs/screenshots
[[ -x $STUDIO && -x $EXPNET ]] || { echo "error: $STUDIO or $EXPNET not found: build first (ninja -C build/release)" >&2; exit 1; }
mkdir -p "$OUT"
export QT_QPA_PLATFORM=offscreen
# A fresh settings store: the screenshots must not depend on what a user chose last.
SETTINGS=$(mktemp -d)
trap 'rm -rf "$SETTINGS"' EXIT
export XDG_CONFIG_HOME=$SETTINGS
export XDG_CACHE_HOME=$SETTINGS/cache  # the Datasets page's index and evaluation store
# The varied look: the one the demo model was trained on (README, "The demo model"), of a seed it never saw.
"$EXPNET" dataset make-shapes --out "$SETTINGS/shapes" --images 4 --seed 90210 --val-fraction 0 --test-fraction 0 >/dev/null
/usr/bin/python3 tests/demo/foreign_scenes.py "$SETTINGS/foreign" --count 2
SHAPES=$SETTINGS/shapes/images

# Caption page: four shapes scenes and two Pillow scenes captioned (with the decoding
# options the demo model carries: beam 3, n-best 3), the notice on captioning photos beside them,
# and one file that is not an image, which fails on its own row; the first row is
# selected, so its n-best list, timings and settings show.
printf 'this is not an image\n' > "$SETTINGS/not-an-image.jpg"
"$STUDIO" --screenshot "$OUT/caption.png" --page caption --model demo \
  --open "$SHAPES/shapes_000000.png" --open "$SHAPES/shapes_000001.png" --open "$SHAPES/shapes_000002.png" \
  --open "$SETTINGS/foreign/foreign_000.png" --open "$SETTINGS/not-an-image.jpg" \
  --open "$SHAPES/shapes_000003.png" --open "$SETTINGS/foreign/foreign_001.png"
echo "wrote $OUT/caption.png"

# Attention page: the cross-attention of word 3 of a scene's greedy caption (with the
# current demo model, the shape word of its first "red circle").
"$STUDIO" --screenshot "$OUT/attention.png" --page attention --model demo \
  --open "$SHAPES/shapes_000001.png" --beam 1 --word 3
echo "wrote $OUT/attention.png"

# Compare page: the demo model (AIC greedy, beam 3) beside its PNAIC students (K = 2, 5)
# on four scenes of the varied look (seed 77, never trained on), PNAIC groups coloured;
# then the same models evaluated on 200 such scenes (CIDEr-D against decode ms, steps).
"$EXPNET" dataset make-shapes --out "$SETTINGS/held" --images 200 --seed 77 >/dev/null
HELD=$SETTINGS/held/images
"$STUDIO" --screenshot "$OUT/compare.png" --page compare \
  --open "$HELD/shapes_000032.png" --open "$HELD/shapes_000002.png" --open "$HELD/shapes_000007.png" \
  --open "$HELD/shapes_000018.png"
echo "wrote $OUT/compare.png"
"$STUDIO" --screenshot "$OUT/compare-dataset.png" --page compare --dataset "$SETTINGS/held" --split all --limit 200
echo "wrote $OUT/compare-dataset.png"

# Datasets page: the same 200 scenes with the demo model evaluated per sample, sorted
# worst first (the detail panel shows the worst caption under its references), then a
# caption search ("red star", the words highlighted in the references).
"$STUDIO" --screenshot "$OUT/datasets.png" --page datasets --dataset "$SETTINGS/held" --split all --eval demo
echo "wrote $OUT/datasets.png"
"$STUDIO" --screenshot "$OUT/datasets-search.png" --page datasets --dataset "$SETTINGS/held" --search "red star"
echo "wrote $OUT/datasets-search.png"

# Runs page: two real runs of the shapes-demo recipe, shortened (600 scenes, 6 XE epochs
# of 25 batches, 2 SCST epochs of 10) so that this script trains them in minutes, at two
# learning rates; both selected, so their curves overlay and the config diff shows the lr.
export XDG_DATA_HOME=$SETTINGS/data  # the runs register in this data folder's run store
"$EXPNET" train --print-config --preset shapes-demo > "$SETTINGS/shapes-demo.json"
for lr in 0.001 0.0003; do
  /usr/bin/python3 - "$SETTINGS/shapes-demo.json" "$SETTINGS/short-$lr.json" "$lr" <<'PY'
import json, sys
config = json.load(open(sys.argv[1]))
config.update(shapes_images=600, validation_images=40)
config["stages"][0].update(epochs=6, max_batches_per_epoch=25, warmup=20, lr=float(sys.argv[3]))
config["stages"][1].update(epochs=2, max_batches_per_epoch=10)
json.dump(config, open(sys.argv[2], "w"), indent=1)
PY
  "$EXPNET" train --config "$SETTINGS/short-$lr.json" --name "shapes-demo-lr$lr" --out "$SETTINGS/runs/lr$lr" \
    --no-progress >/dev/null
done
"$STUDIO" --screenshot "$OUT/runs.png" --page runs --select shapes-demo-lr0.001,shapes-demo-lr0.0003
echo "wrote $OUT/runs.png"

# Training page: a real run of docs/screenshots/training-demo.json opened (README), its curves
# (loss raw and smoothed, learning rate, validation CIDEr-D and BLEU-4, throughput) and its
# last sample captions.
"$EXPNET" train --config docs/screenshots/training-demo.json --out "$SETTINGS/tp_demo" --no-progress >/dev/null
"$STUDIO" --screenshot "$OUT/training.png" --page training --run "$SETTINGS/tp_demo"
echo "wrote $OUT/training.png"

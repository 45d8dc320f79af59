#!/usr/bin/env bash
# Regenerates the README screenshots (docs/screenshots/*.png and their FILE.json)
# with expnet-studio --screenshot, offscreen. Run from the repository root after a
# Release build (ninja -C build/release expnet-studio). Needs the fixtures
# (../shared/fixtures, or EXPNET_FIXTURES=DIR): the tiny reference model has random
# weights, so its captions are real engine output but not meaningful English.
set -euo pipefail
STUDIO=${STUDIO:-build/release/app/expnet-studio}
FIX=${EXPNET_FIXTURES:-../shared/fixtures}
TINY=$FIX/reference/tiny
OUT=docs/screenshots
[[ -x $STUDIO ]] || { echo "error: $STUDIO not found: build first (ninja -C build/release expnet-studio)" >&2; exit 1; }
[[ -f $TINY/checkpoint.pth ]] || { echo "error: $TINY/checkpoint.pth not found: set EXPNET_FIXTURES" >&2; exit 1; }
mkdir -p "$OUT"
export QT_QPA_PLATFORM=offscreen
# A fresh settings store: the screenshots must not depend on what a user chose last.
SETTINGS=$(mktemp -d)
trap 'rm -rf "$SETTINGS"' EXIT
export XDG_CONFIG_HOME=$SETTINGS
MODEL=(--model "$TINY/model_config.json" --checkpoint "$TINY/checkpoint.pth" --vocab "$TINY/vocab.pickle")

# Caption page: five images captioned (beam 5, n-best 3) and one file that is not an
# image, which fails on its own row; the first row is selected, so its n-best list,
# timings and settings show.
printf 'this is not an image\n' > "$SETTINGS/not-an-image.jpg"
"$STUDIO" --screenshot "$OUT/caption.png" --page caption "${MODEL[@]}" \
  --open "$TINY/image0.png" --open "$FIX/preprocess/edges_251x173.png" \
  --open "$FIX/preprocess/gradient_200x150.png" --open "$FIX/preprocess/noise_640x480.png" \
  --open "$SETTINGS/not-an-image.jpg" --open "$FIX/preprocess/tall_93x517.png"
echo "wrote $OUT/caption.png"

# Attention page: the cross-attention of word 3 of image0's greedy caption.
"$STUDIO" --screenshot "$OUT/attention.png" --page attention "${MODEL[@]}" \
  --open "$TINY/image0.png" --beam 1 --word 3
echo "wrote $OUT/attention.png"

# --- Training page: its screenshot command goes here (Training page helper). ---
# "$STUDIO" --screenshot "$OUT/training.png" --page training --run RUN_DIR
# echo "wrote $OUT/training.png"
# --- end Training page ---

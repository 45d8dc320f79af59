#!/usr/bin/env bash
# The layer kinds (docs/model.md, "Layer kinds") on a GPU machine: builds the CLI
# with packaging/gpu-check.sh, trains a tiny ablation of every encoder/decoder kind
# pair on CUDA (frozen backbone, cached features, beam validation), prints its
# table, captions with the incremental and the full decoder (the tokens must agree)
# and traces the NG-SAN run. Results: docs/performance.md ("Layer kinds on CUDA").
#   packaging/gpu-layer-kinds.sh      (writes to $OUT when set, else build/gpu-out)
set -u
EXPNET_GPU_BUILD_ONLY=1 EXPNET_GPU_BUDGET_S=300 bash packaging/gpu-check.sh /tmp/gout > /tmp/gout-build.log 2>&1 || { tail -50 /tmp/gout-build.log; exit 1; }
tail -3 /tmp/gout-build.log
X=$PWD/build/gpu/app/expnet
TORCH_LIB=$(python3 -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
DD=/opt/expnet-deps
export LD_LIBRARY_PATH=$DD/usr/lib/x86_64-linux-gnu:$DD/blas:$TORCH_LIB
export EXPNET_HOME=/tmp/kinds-home
python3 - <<'PY'
import json
base = json.load(open("tests/train/tiny_train.json"))
base["checkpoint_every"] = 0
base["shapes_images"] = 400
base["validation_images"] = 16
base["stages"] = [{"name": "xe", "objective": "xe", "backbone": "frozen", "batch": 16, "batch_unit": "image",
                   "lr": 1e-3, "schedule": "linear", "warmup": 4, "epochs": 3, "clip": 1.0, "dropout": 0.1}]
variants = []
for enc in ["static_expansion", "dynamic_expansion", "self_attention", "ngsan"]:
    for dec in ["dynamic_expansion", "self_attention"]:
        m = {"encoder_layer": enc, "decoder_layer": dec}
        if enc == "dynamic_expansion": m["num_exp_enc_list"] = [8]
        variants.append({"name": enc + "-" + dec, "model": m})
json.dump({"name": "cuda-kinds", "base": base, "variants": variants}, open("/tmp/kinds.json", "w"))
PY
mkdir -p /tmp/k
SECONDS=0
"$X" train --device cuda --ablation /tmp/kinds.json --out /tmp/k --no-progress > /tmp/k/table.txt 2> /tmp/k/train.err
echo "ablation exit $? in ${SECONDS}s"; cat /tmp/k/table.txt; grep -iE "error|warn" /tmp/k/train.err | head -10
IMG=$(ls /tmp/k/cuda-kinds-static_expansion-dynamic_expansion/shapes/images/* 2>/dev/null | head -3)
for run in /tmp/k/cuda-kinds-*; do
  for dec in incremental full; do
    "$X" caption --device cuda --checkpoint $run/checkpoints/best.pth --decoder $dec --beam 3 --json $IMG > $run/caption-$dec.json 2>$run/caption-$dec.err || tail -3 $run/caption-$dec.err
  done
  python3 - "$run" <<'PY'
import json, os, sys
run = sys.argv[1]
a, b = ([json.loads(l) for l in open(f"{run}/caption-{d}.json")] for d in ("incremental", "full"))
tokens = lambda rows: [[c["tokens"] for c in r["captions"]] for r in rows]
print(os.path.basename(run), len(a), "images; incremental == full tokens:", tokens(a) == tokens(b))
PY
done
"$X" explain --device cuda --checkpoint /tmp/k/cuda-kinds-ngsan-self_attention/checkpoints/best.pth --out /tmp/k/explain $(echo $IMG | cut -d' ' -f1) 2>&1 | tail -2
python3 -c "import json; d=json.load(open('/tmp/k/explain/trace.json')); print('trace encoder keys', list(d['encoder'][0].keys()), 'decoder keys', list(d['decoder'][0].keys()))"
OUT=${OUT:-$PWD/build/gpu-out}
mkdir -p "$OUT"; cp /tmp/k/table.txt /tmp/k/train.err "$OUT/" ; cp /tmp/gout-build.log "$OUT/"

#!/usr/bin/env bash
# On a GPU machine whose image carries a CUDA PyTorch (and nothing else we
# need): builds the engine and the expnet CLI (EXPNET_BUILD_GUI=OFF) against that
# PyTorch's LibTorch with the kit of packaging/gpu-kit.sh, then checks parity
# with the fixtures on CUDA and runs the benchmarks on CUDA and on the CPU.
#   packaging/gpu-check.sh [OUT]     (OUT: logs and results, default build/gpu-out)
# EXPNET_GPU_BUILD_ONLY=1 builds and stops. EXPNET_GPU_TRAINING=side-by-side|recipes|all
# runs issue 49's training checks instead of the parity and benchmark steps:
# side-by-side, the XE and SCST steps against the authors' code on CUDA (their Python
# from the kit's authors/, packaging/gpu-kit.sh with EXPNET_AUTHORS set; about 250 s);
# recipes, the shapes-demo recipe's time to validation CIDEr-D 2.0 in fp32 and in bf16
# (packaging/time_to_cider.py, at most 250 s each). Set EXPNET_GPU_BUDGET_S to match.
# Steps past the time budget (EXPNET_GPU_BUDGET_S, default 540 s) are skipped
# and say so. Results: docs/performance.md ("CUDA").
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${1:-$ROOT/build/gpu-out}
KIT=${EXPNET_GPU_KIT:-$ROOT/.gpukit}
BUDGET=${EXPNET_GPU_BUDGET_S:-540}
DD=${EXPNET_GPU_DEPS:-/opt/expnet-deps}
BUILD=$ROOT/build/gpu
mkdir -p "$OUT"
LOG=$OUT/check.log
exec > >(tee -a "$LOG") 2>&1
say() { echo "[gpu-check $(date +%T) +${SECONDS}s] $*"; }
left() { echo $((BUDGET - SECONDS)); }
# step NAME SECONDS COMMAND...: runs it with a limit, unless the budget is spent.
step() {
  local name=$1 limit=$2
  shift 2
  if (($(left) < 20)); then say "SKIPPED $name: budget spent"; return 0; fi
  ((limit > $(left) - 10)) && limit=$(($(left) - 10))
  say "$name (limit ${limit}s)"
  timeout --kill-after=5 "$limit" "$@" > "$OUT/$name.txt" 2> "$OUT/$name.err"
  local rc=$?
  tail -n 25 "$OUT/$name.txt"
  ((rc != 0)) && { say "$name FAILED (exit $rc)"; tail -n 30 "$OUT/$name.err"; }
  return 0
}

say "machine: $(nproc) cores, $(uname -r)"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
command -v g++ >/dev/null && g++ --version | head -1 || say "no g++"
cmake --version | head -1
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "cxx11 abi", torch._C._GLIBCXX_USE_CXX11_ABI)'
TORCH_PREFIX=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
TORCH_LIB=$(python3 -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')

mkdir -p "$DD"
xz -dc "$KIT/deps.tar.xz" | tar -C "$DD" -xf -
mkdir -p "$DD/bin" && ln -sf "$DD/pkgconf" "$DD/bin/pkg-config"
export PATH=$DD/bin:$PATH
export PKG_CONFIG_SYSROOT_DIR=$DD
export PKG_CONFIG_LIBDIR=$DD/usr/lib/x86_64-linux-gnu/pkgconfig:$DD/usr/share/pkgconfig
export LD_LIBRARY_PATH=$DD/usr/lib/x86_64-linux-gnu:$DD/blas:$TORCH_LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

# LibTorch ships its own fmt (v12) in its include folder, searched before the
# kit's; Debian's spdlog is built against fmt 9: -I puts fmt 9 and spdlog first.
mkdir -p "$DD/fmt9" && ln -sfn "$DD/usr/include/fmt" "$DD/fmt9/fmt" && ln -sfn "$DD/usr/include/spdlog" "$DD/fmt9/spdlog"
TORCH_INCLUDE=$(dirname "$TORCH_LIB")/include
say "LibTorch headers that include fmt: $(grep -rlE '#include <fmt/' "$TORCH_INCLUDE"/{c10,ATen,torch/csrc/api,torch/csrc/distributed/c10d} 2>/dev/null | wc -l)"
grep -rlE '#include <fmt/' "$TORCH_INCLUDE"/{c10,ATen,torch/csrc/api} 2>/dev/null | head -5
GEN=()
command -v ninja >/dev/null && GEN=(-G Ninja)
say "configure"
cmake -S "$ROOT" -B "$BUILD" "${GEN[@]}" -DEXPNET_BUILD_GUI=OFF -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$TORCH_PREFIX;$DD/usr" -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_CXX_FLAGS="-I$DD/fmt9" > "$OUT/configure.txt" 2>&1 ||
  { tail -n 60 "$OUT/configure.txt"; say "configure FAILED"; exit 1; }
grep -iE "torch|cuda|warning" "$OUT/configure.txt" | head -20
say "build"
cmake --build "$BUILD" -j "$(nproc)" --target expnet -- -k 0 > "$OUT/build.txt" 2>&1
build_rc=$?
grep -E "error|Error" "$OUT/build.txt" | head -60
((build_rc != 0)) && { tail -n 40 "$OUT/build.txt"; say "build FAILED"; exit 1; }
say "built"
X=$BUILD/app/expnet
"$X" --version --device cuda
# EXPNET_GPU_BUILD_ONLY=1: stop here (a caller runs its own commands with the CLI).
[[ ${EXPNET_GPU_BUILD_ONLY:-0} == 1 ]] && { say "build only: done in ${SECONDS}s"; exit 0; }

TRAINING=${EXPNET_GPU_TRAINING:-}
if [[ -n $TRAINING ]]; then
  A=${EXPNET_AUTHORS:-$KIT/authors}
  if [[ $TRAINING == recipes ]]; then
    :
  elif [[ -d $A/models ]]; then
    for objective in xe scst; do
      step "side-by-side-$objective-cuda" 150 python3 "$ROOT/tests/peer/authors_train_side_by_side.py" --authors "$A" \
        --expnet "$X" --work "$OUT/side-by-side" --device cuda --objective "$objective" --steps 20 --warmup 3 --rounds 2 \
        --json "$OUT/side-by-side-$objective-cuda.json"
    done
  else
    say "no authors' code at $A: the side-by-side steps are skipped"
  fi
  for precision in fp32 bf16; do
    [[ $TRAINING == side-by-side ]] && break
    rm -rf "$OUT/recipe-$precision"
    step "time-to-cider-$precision" 260 python3 "$ROOT/packaging/time_to_cider.py" --expnet "$X" --out "$OUT/recipe-$precision" \
      --preset shapes-demo --precision "$precision" --device cuda --target 2.0 --limit 240
  done
  say "done in ${SECONDS}s"
  exit 0
fi

F=${EXPNET_FIXTURES:-$KIT/fixtures}/reference/tiny
step doctor 60 "$X" doctor --device cuda
if [[ -f $F/checkpoint.pth ]]; then
  for dev in cuda cpu; do
    for dec in incremental full; do
      step "parity-$dev-$dec" 60 "$X" caption --device "$dev" --model "$F/model_config.json" --checkpoint "$F/checkpoint.pth" \
        --vocab "$F/vocab.pickle" --beam 3 --n-best 3 --max-len 12 --no-exif --decoder "$dec" --json "$F/image0.png"
    done
  done
  # bf16 (tensor cores): the same check, reported beside the fp32 ones (bf16 may change a token).
  step parity-cuda-bf16 60 "$X" caption --device cuda --precision bf16 --model "$F/model_config.json" \
    --checkpoint "$F/checkpoint.pth" --vocab "$F/vocab.pickle" --beam 3 --n-best 3 --max-len 12 --no-exif --json "$F/image0.png"
  python3 "$ROOT/packaging/gpu_parity.py" "$F/expected.json" "$OUT"/parity-*.txt | tee "$OUT/parity.txt"
else
  say "no fixtures at $F: parity skipped"
fi
step bench-caption-cuda 90 "$X" bench caption --device cuda --precision fp32 --precision bf16 --repeats 10 --json
step bench-decode-cuda 120 "$X" bench decode --device cuda --repeats 5 --json
step bench-forward-cuda 90 "$X" bench forward --device cuda --repeats 10 --warmup 2 --json
step bench-forward-cuda-b8 90 "$X" bench forward --device cuda --batch 8 --repeats 10 --warmup 2 --json
step bench-forward-cuda-b8-bf16 90 "$X" bench forward --device cuda --batch 8 --precision bf16 --repeats 10 --warmup 2 --json
step bench-train-cuda 150 "$X" bench train --device cuda --steps 20 --warmup 3 --json
step bench-caption-cpu 120 "$X" bench caption --device cpu --repeats 3 --json
step bench-train-cpu 120 "$X" bench train --device cpu --steps 5 --warmup 2 --json
say "done in ${SECONDS}s"

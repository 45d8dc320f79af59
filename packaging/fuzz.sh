#!/usr/bin/env bash
# Fuzzes the LibTorch-free file readers with libFuzzer + ASan + UBSan
# (tests/fuzz, docs/reliability.md).
#   packaging/fuzz.sh TARGET SECONDS [libFuzzer options...]   one target (e.g. unpickler)
#   packaging/fuzz.sh all SECONDS                             each target in turn
#   packaging/fuzz.sh list                                    the targets
# Configures and builds $EXPNET_FUZZ_BUILD_DIR (default build/fuzz) with clang-14,
# replays tests/fuzz/regressions/TARGET, then fuzzes from tests/fuzz/corpus/TARGET.
# New inputs go to BUILD/corpus/TARGET (the checked-in corpus is never written),
# findings to BUILD/findings/TARGET. Exits non-zero on a finding.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${EXPNET_FUZZ_BUILD_DIR:-$ROOT/build/fuzz}
CXX_14=${EXPNET_FUZZ_CXX:-clang++-14}
CC_14=${EXPNET_FUZZ_CC:-clang-14}

usage() { sed -n '2,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[[ $# -ge 1 ]] || usage
TARGET=$1
shift

if ! command -v "$CXX_14" >/dev/null 2>&1 || ! command -v "$CC_14" >/dev/null 2>&1; then
  echo "[fuzz] $CXX_14 / $CC_14 not found: install clang-14 and libclang-rt-14-dev (packaging/install-deps.sh)" >&2
  exit 3
fi

# Configure once (the fuzz build is its own folder: other compiler, no LibTorch).
# Configuring and building hold a lock: runs of several targets at once share the folder.
mkdir -p "$BUILD"
exec 9>"$BUILD/.fuzz-build.lock"
flock 9
if [[ ! -f "$BUILD/CMakeCache.txt" ]]; then
  echo "[fuzz] configuring $BUILD (clang-14, RelWithDebInfo, ASan+UBSan+libFuzzer)"
  generator=()
  command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
  cmake -S "$ROOT" -B "$BUILD" "${generator[@]}" -DEXPNET_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_COMPILER="$CXX_14" -DCMAKE_C_COMPILER="$CC_14" >"$BUILD/configure.log" 2>&1 ||
    { cat "$BUILD/configure.log" >&2; exit 1; }
else
  cmake "$BUILD" >/dev/null  # picks up a new harness or zip_entries.cpp
fi
mapfile -t ALL < <(tr ';' '\n' <"$BUILD/fuzz_targets.txt" | sed '/^$/d')
flock -u 9
if [[ $TARGET == list ]]; then printf '%s\n' "${ALL[@]}"; exit 0; fi
[[ $# -ge 1 ]] || usage
SECONDS_EACH=$1
shift

# Per target: -max_len fits its seeds; the memory and time limits of docs/reliability.md.
max_len() {
  case $1 in
    image_decode) echo 65536 ;;
    unpickler|zip_entries|vocabulary) echo 16384 ;;
    eval_tokenizer) echo 4096 ;;
    *) echo 8192 ;;
  esac
}

fuzz_one() {
  local target=$1 seconds=$2
  shift 2
  local exe="$BUILD/fuzz_$target"
  echo "[fuzz] building fuzz_$target"
  flock 9
  cmake --build "$BUILD" --target "fuzz_$target" -j "${EXPNET_FUZZ_JOBS:-2}" >"$BUILD/build-$target.log" 2>&1 ||
    { tail -n 60 "$BUILD/build-$target.log" >&2; flock -u 9; return 1; }
  flock -u 9
  local scratch="$BUILD/corpus/$target" findings="$BUILD/findings/$target" tmp="$BUILD/tmp/$target"
  # The dataset harnesses write each input to a file: memory-backed is twice as fast.
  [[ -d /dev/shm && -w /dev/shm ]] && tmp="/dev/shm/expnet-fuzz-$(id -u)/$(echo "$BUILD" | cksum | cut -d' ' -f1)/$target"
  mkdir -p "$scratch" "$findings" "$tmp"
  local seeds="$ROOT/tests/fuzz/corpus/$target" regressions="$ROOT/tests/fuzz/regressions/$target"
  local dict=() dirs=("$scratch")
  [[ -d $seeds ]] && dirs+=("$seeds")
  [[ -f "$ROOT/tests/fuzz/dict/$target.dict" ]] && dict=(-dict="$ROOT/tests/fuzz/dict/$target.dict")
  local common=(-rss_limit_mb=500 -timeout=5 -max_len="$(max_len "$target")" -artifact_prefix="$findings/")
  # A 64 MiB quarantine (ASan's default is 256) keeps -rss_limit_mb=500 about the target's own memory.
  export TMPDIR=$tmp ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:quarantine_size_mb=64}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
  # Past findings first: each file once.
  if [[ -d $regressions ]] && compgen -G "$regressions/*" >/dev/null; then
    echo "[fuzz] $target: replaying $(find "$regressions" -type f | wc -l) regression inputs"
    "$exe" "${common[@]}" "$regressions"/* >"$BUILD/replay-$target.log" 2>&1 ||
      { tail -n 40 "$BUILD/replay-$target.log" >&2; echo "[fuzz] $target: a regression input fails again" >&2; return 1; }
  fi
  echo "[fuzz] $target: ${seconds}s from $seeds (new inputs: $scratch)"
  local log="$BUILD/fuzz-$target.log" rundir="$BUILD/run/$target" status=0 started=$SECONDS
  # In its own folder: with -jobs=N libFuzzer writes each job's output to ./fuzz-JOB.log.
  rm -rf "$rundir" && mkdir -p "$rundir"
  (cd "$rundir" && "$exe" "${common[@]}" "${dict[@]}" -max_total_time="$seconds" -print_final_stats=1 "$@" "${dirs[@]}") \
    >"$log" 2>&1 || status=$?
  grep -q '^stat::' "$log" || cat "$rundir"/fuzz-*.log >>"$log" 2>/dev/null || true
  rm -f "$tmp"/expnet-fuzz-*  # the harnesses' input files, one per process
  if [[ $status -ne 0 ]]; then
    tail -n 60 "$log" >&2
    echo "[fuzz] $target: FINDING (exit $status; reproducer in $findings, log $log)" >&2
    return 1
  fi
  local stats
  stats=$(grep -E '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' "$log" | sed 's/^stat:://; s/: */=/' | tr '\n' ' ')
  echo "[fuzz] $target: ${stats}seconds=$((SECONDS - started)) $(grep -oE 'corp: [0-9]+/[0-9]+[a-zA-Z]*' "$log" | tail -n 1)"
}

if [[ $TARGET == all ]]; then
  failed=()
  for target in "${ALL[@]}"; do fuzz_one "$target" "$SECONDS_EACH" "$@" || failed+=("$target"); done
  if [[ ${#failed[@]} -gt 0 ]]; then echo "[fuzz] findings or failures in: ${failed[*]}" >&2; exit 1; fi
  echo "[fuzz] all ${#ALL[@]} targets clean for ${SECONDS_EACH}s each"
else
  printf '%s\n' "${ALL[@]}" | grep -qx "$TARGET" || { echo "[fuzz] unknown target '$TARGET' (targets: ${ALL[*]})" >&2; exit 2; }
  fuzz_one "$TARGET" "$SECONDS_EACH" "$@"
fi

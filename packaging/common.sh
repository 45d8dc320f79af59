# Shared by studio.sh and test.sh: install what is missing, configure, build.
# Build folder: build/release (override with EXPNET_BUILD_DIR).
set -euo pipefail
EXPNET_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
EXPNET_BUILD_DIR=${EXPNET_BUILD_DIR:-$EXPNET_ROOT/build/release}

expnet_install_and_build() {
  "$EXPNET_ROOT/packaging/install-deps.sh"
  echo "[build] configuring $EXPNET_BUILD_DIR (Release, Ninja, ccache)"
  cmake -S "$EXPNET_ROOT" -B "$EXPNET_BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
  local jobs
  jobs=$(nproc)
  echo "[build] building with $jobs jobs (a clean build takes minutes: LibTorch headers are heavy)"
  cmake --build "$EXPNET_BUILD_DIR" -j "$jobs"
}

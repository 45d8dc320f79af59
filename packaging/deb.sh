#!/usr/bin/env bash
# Builds the .deb from a clean build folder (build/deb, Release) and checks it:
# control fields and file list, lintian, AppStream and desktop entry, and the
# programs run from the extracted package (tests/package/check_package.sh).
#
#   bash packaging/deb.sh              # build + check; the package is build/deb/expnet-studio_*.deb
#   bash packaging/deb.sh --install    # also, as root: apt installs it (pulling its
#                                      # dependencies), then removes it, checking that
#                                      # removal leaves users' XDG folders alone
#   bash packaging/deb.sh --deb FILE   # check (and --install) this package, no build;
#                                      # (its build folder: the one it is in)
# Build folder: build/deb (override with EXPNET_DEB_BUILD_DIR). A clean build
# takes minutes (LibTorch headers are heavy).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
build=${EXPNET_DEB_BUILD_DIR:-$root/build/deb}
install=0 deb=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --install) install=1; shift ;;
    --deb) deb=$(realpath "${2:?--deb needs a FILE}"); shift 2 ;;
    -h|--help) sed -n '2,13p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "deb.sh: unknown argument '$1' (use --install, --deb FILE or --help)" >&2; exit 2 ;;
  esac
done

# A package without the demo model would install a studio whose default model
# is missing: refuse before spending minutes on the build.
for model in demo_model.pth pnaic_demo_k2.pth pnaic_demo_k5.pth; do
  file=$root/resources/demo/$model
  # A Git LFS pointer (a clone without `git lfs pull`) is a few hundred bytes.
  if [[ ! -f $file || $(stat -c %s "$file") -lt 100000 ]]; then
    echo "deb.sh: refusing to build the package: $file is missing or not a model (under 100 kB:" >&2
    echo "  an LFS pointer?), so the package's built-in models (expnet --model demo) would not work." >&2
    echo "  Restore it (README.md, 'The demo model', gives its recipe and SHA-256), then run deb.sh again." >&2
    exit 1
  fi
done

if [[ -n $deb && -z ${EXPNET_DEB_BUILD_DIR:-} ]]; then build=$(dirname "$deb"); fi

"$root/packaging/install-deps.sh"
if [[ -z $deb ]]; then
  echo "[deb] clean build in $build (Release)"
  rm -rf "$build"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build" -j "$(nproc)" --target package
  deb=$(ls -t "$build"/expnet-studio_*_"$(dpkg --print-architecture)".deb | head -n 1)
fi
bash "$root/tests/package/check_package.sh" --build "$build" --source "$root" --deb "$deb"

if [[ $install -eq 0 ]]; then
  echo "[deb] done: $deb"
  echo "[deb] install it with: sudo apt install $deb"
  exit 0
fi

# Install-time checks: system-wide, so only on request and never from CTest.
if [[ $(id -u) -ne 0 ]]; then
  echo "deb.sh --install: apt needs root: run it as root (sudo bash packaging/deb.sh --install)" >&2; exit 1
fi
if dpkg-query -W -f='${Status}' expnet-studio 2>/dev/null | grep -q "install ok installed"; then
  echo "deb.sh --install: expnet-studio is already installed: remove it first (apt-get remove expnet-studio)," >&2
  echo "  so that this check leaves the machine as it found it" >&2; exit 1
fi
# The dependencies apt will pull, to remove them again afterwards (autoremove
# would take every auto-installed package of the machine, not just these).
before=$(dpkg-query -W -f='${Package}\n' | sort)
xdg=$(mktemp -d /tmp/expnet-deb-home.XXXXXX)
trap 'rm -rf "$xdg"' EXIT
echo "[deb] apt-get install $deb"
DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$deb"
pulled=$(comm -13 <(echo "$before") <(dpkg-query -W -f='${Package}\n' | sort) | grep -vx expnet-studio || true)
echo "[deb] apt pulled: ${pulled:-nothing (every dependency was already installed)}"
apt-get check -q || { echo "deb.sh --install: apt-get check finds broken dependencies after installing $deb" >&2; exit 1; }
[[ -x /usr/bin/expnet ]] || { echo "deb.sh --install: /usr/bin/expnet missing after installing $deb" >&2; exit 1; }
# A user's data and settings made by the installed programs.
unset EXPNET_HOME EXPNET_RESOURCES
export HOME=$xdg XDG_DATA_HOME=$xdg/data XDG_CONFIG_HOME=$xdg/config XDG_CACHE_HOME=$xdg/cache
/usr/bin/expnet --version
/usr/bin/expnet dataset make-shapes --out "$xdg/shapes" --images 1 --seed 5 >/dev/null 2>&1
/usr/bin/expnet caption --model demo "$xdg/shapes/images/shapes_000000.png"
mkdir -p "$XDG_DATA_HOME/expnet" "$XDG_CONFIG_HOME/expnet" "$XDG_CACHE_HOME/expnet"
for d in "$XDG_DATA_HOME" "$XDG_CONFIG_HOME" "$XDG_CACHE_HOME"; do echo keep >"$d/expnet/user-file"; done
QT_QPA_PLATFORM=offscreen /usr/bin/expnet-studio --screenshot "$xdg/shot.png" --page caption --model demo \
  --open "$xdg/shapes/images/shapes_000000.png" >/dev/null 2>&1
snapshot() { find "$xdg/data" "$xdg/config" "$xdg/cache" -printf '%p %s %T@\n' | sort; }
kept=$(snapshot)
echo "[deb] apt-get remove expnet-studio"
DEBIAN_FRONTEND=noninteractive apt-get remove -y -q expnet-studio
if [[ -n $pulled ]]; then
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive apt-get remove -y -q $pulled
fi
[[ ! -e /usr/bin/expnet && ! -e /usr/share/expnet/demo/demo_model.pth ]] \
  || { echo "deb.sh --install: files of the package are left after apt-get remove" >&2; exit 1; }
if [[ $(snapshot) != "$kept" ]]; then
  echo "deb.sh --install: removing the package changed the user's XDG folders ($xdg)" >&2; exit 1
fi
echo "[deb] install check passed: apt resolved the dependencies (pulled: ${pulled:-none missing}), remove left the user's XDG folders alone"

#!/usr/bin/env bash
# Checks the .deb (issue 29): its control fields and file list, lintian,
# AppStream and desktop-entry validation, then runs the programs from the
# package extracted with `dpkg-deb -x` into a temporary root outside the build
# folder, so they must find the demo model beside themselves, not in the
# sources. Used by CTest (label `package`) and by packaging/deb.sh.
#
#   check_package.sh --build BUILD_DIR --source SOURCE_DIR [--deb FILE] [--make]
#     --make   first run `cmake --build BUILD_DIR --target package`
#     --deb    the package to check (default: the newest BUILD_DIR/expnet-studio_*.deb)
# BUILD_DIR/app/expnet gives the reference caption. Exits 1 naming each failure.
set -uo pipefail

build="" source="" deb="" make=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --source) source=$2; shift 2 ;;
    --deb) deb=$2; shift 2 ;;
    --make) make=1; shift ;;
    *) echo "check_package.sh: unknown argument '$1' (use --build, --source, --deb, --make)" >&2; exit 2 ;;
  esac
done
if [[ -z "$build" || -z "$source" ]]; then
  echo "check_package.sh: --build BUILD_DIR and --source SOURCE_DIR are required" >&2; exit 2
fi
build=$(cd "$build" && pwd -P) source=$(cd "$source" && pwd -P)

failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }

for tool in dpkg-deb lintian appstreamcli desktop-file-validate; do
  if ! command -v "$tool" >/dev/null; then
    echo "FAIL: '$tool' is not installed: run packaging/install-deps.sh (it installs lintian, appstream, desktop-file-utils)" >&2
    exit 1
  fi
done

if [[ $make -eq 1 ]]; then
  echo "== cmake --build $build --target package"
  if ! cmake --build "$build" --target package; then
    echo "FAIL: building the package target in $build failed (output above)" >&2; exit 1
  fi
fi
if [[ -z "$deb" ]]; then
  deb=$(ls -t "$build"/expnet-studio_*_"$(dpkg --print-architecture)".deb 2>/dev/null | head -n 1)
fi
if [[ -z "$deb" || ! -f "$deb" ]]; then
  echo "FAIL: no expnet-studio_*.deb in $build: build it with cmake --build $build --target package" >&2; exit 1
fi
echo "== checking $deb ($(du -h "$deb" | cut -f1))"

# Control fields ------------------------------------------------------------
info=$(dpkg-deb --info "$deb") || { echo "FAIL: dpkg-deb --info cannot read $deb" >&2; exit 1; }
field() { dpkg-deb --field "$deb" "$1"; }
[[ $(field Package) == expnet-studio ]] && ok "Package: expnet-studio" || fail "Package is '$(field Package)', expected expnet-studio"
[[ $(basename "$deb") == expnet-studio_$(field Version)_$(field Architecture).deb ]] && ok "file name $(basename "$deb")" \
  || fail "file name $(basename "$deb") is not expnet-studio_<version>_<arch>.deb"
depends=$(field Depends)
echo "Depends: $depends"
[[ $depends == *libopenblas0-pthread* ]] && ok "Depends names libopenblas0-pthread" || fail "Depends lacks libopenblas0-pthread (cmake/Packaging.cmake CPACK_DEBIAN_PACKAGE_DEPENDS)"
[[ $depends == *libtorch* && $depends == *libqt6* && $depends == *libc6* ]] && ok "Depends computed by dpkg-shlibdeps (libc6, libtorch, Qt)" \
  || fail "Depends lacks libc6/libtorch/libqt6: is CPACK_DEBIAN_PACKAGE_SHLIBDEPS on and dpkg-dev installed?"
for f in Maintainer Section Description; do
  [[ -n $(field $f) ]] && ok "$f present" || fail "control field $f is empty (cmake/Packaging.cmake)"
done

# File list -------------------------------------------------------------------
contents=$(dpkg-deb --contents "$deb")
paths=$(awk '{ for (i = 6; i <= NF; i++) printf "%s%s", $i, (i < NF ? " " : "\n") }' <<<"$contents")
has() { grep -qxF -- "$1" <<<"$paths"; }
required=(./usr/bin/expnet ./usr/bin/expnet-studio
  ./usr/share/expnet/demo/demo_model.pth ./usr/share/expnet/demo/pnaic_demo_k2.pth ./usr/share/expnet/demo/pnaic_demo_k5.pth
  ./usr/share/applications/expnet-studio.desktop ./usr/share/metainfo/io.github.expnet.studio.metainfo.xml
  ./usr/share/icons/hicolor/scalable/apps/expnet-studio.svg
  ./usr/share/doc/expnet-studio/copyright ./usr/share/doc/expnet-studio/changelog.gz)
for size in 16 22 24 32 48 64 128 256; do required+=("./usr/share/icons/hicolor/${size}x${size}/apps/expnet-studio.png"); done
# Man pages and completion come from cmake/ExpnetManuals.cmake: required once
# the build installs them (its install rules are in the build's install scripts).
installs() { grep -rqs --include=cmake_install.cmake --exclude-dir=_CPack_Packages -e "$1" "$build"; }
if installs "share/man/man1"; then
  for page in expnet expnet-studio; do
    has "./usr/share/man/man1/$page.1.gz" || has "./usr/share/man/man1/$page.1" || fail "man page $page.1 missing from the package"
  done
else
  echo "note: this build installs no man pages (cmake/ExpnetManuals.cmake not used): not checked"
fi
if installs "bash-completion/completions"; then
  required+=(./usr/share/bash-completion/completions/expnet)
else
  echo "note: this build installs no bash completion: not checked"
fi
for f in "${required[@]}"; do has "$f" || fail "$f missing from the package"; done
ok "${#required[@]} required files checked"
bad=$(grep -vE '^\./(usr/.*)?$' <<<"$paths" || true)
[[ -z $bad ]] && ok "every file is under /usr" || fail "files outside /usr: $bad"
leak=$(grep -E -e "$build" -e "$source" -e '/root' -e '/home' -e '_CPack_Packages' -e 'CMakeFiles' <<<"$paths" || true)
[[ -z $leak ]] && ok "no path names the build tree, the sources or a home folder" || fail "paths from the build machine: $leak"
demo_size=$(awk '$6 == "./usr/share/expnet/demo/demo_model.pth" { print $3 }' <<<"$contents")
[[ ${demo_size:-0} -gt 100000 ]] && ok "demo model packaged ($demo_size bytes)" || fail "demo_model.pth is missing or tiny in the package (${demo_size:-0} bytes)"

# lintian ---------------------------------------------------------------------
echo "== lintian"
lint=$(lintian --tag-display-limit 0 "$deb" 2>&1)
echo "$lint"
errors=$(grep -E '^E: ' <<<"$lint" || true)
[[ -z $errors ]] && ok "lintian reports no error ($(grep -c '^W: ' <<<"$lint") warnings)" || fail "lintian errors: $errors"

# Extracted package -------------------------------------------------------------
tmp=$(mktemp -d /tmp/expnet-pkgcheck.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
root=$tmp/root
dpkg-deb -x "$deb" "$root" || { echo "FAIL: dpkg-deb -x $deb failed" >&2; exit 1; }
appstreamcli validate --no-net "$root/usr/share/metainfo/io.github.expnet.studio.metainfo.xml" && ok "appstreamcli validate" \
  || fail "appstreamcli validate --no-net rejects the packaged metainfo (resources/io.github.expnet.studio.metainfo.xml)"
dfv=$(desktop-file-validate "$root/usr/share/applications/expnet-studio.desktop" 2>&1); rc=$?
echo "$dfv"
[[ $rc -eq 0 ]] && ! grep -q 'error:' <<<"$dfv" && ok "desktop-file-validate" \
  || fail "desktop-file-validate rejects the packaged desktop entry (resources/expnet-studio.desktop)"

# Run with a fresh home and XDG folders, no EXPNET_RESOURCES: nothing of this
# machine's user or build may be what makes the programs work.
mkdir -p "$tmp/home" "$tmp/xdg-config" "$tmp/xdg-data" "$tmp/xdg-cache" "$tmp/runtime"
chmod 700 "$tmp/runtime"
isolated=(env -u EXPNET_RESOURCES HOME="$tmp/home" XDG_CONFIG_HOME="$tmp/xdg-config" XDG_DATA_HOME="$tmp/xdg-data"
  XDG_CACHE_HOME="$tmp/xdg-cache" XDG_RUNTIME_DIR="$tmp/runtime" QT_QPA_PLATFORM=offscreen)
cli=$root/usr/bin/expnet studio=$root/usr/bin/expnet-studio
for exe in "$cli" "$studio"; do
  linked=$(ldd "$exe" 2>&1)
  if grep -q 'not found' <<<"$linked"; then fail "$exe: libraries not found: $(grep 'not found' <<<"$linked")"
  elif grep -qE -e "$build" -e "$source" <<<"$linked"; then fail "$exe links to the build machine's tree: $linked"
  else ok "$(basename "$exe") links to system libraries only"; fi
done
if out=$("${isolated[@]}" "$cli" --version 2>&1); then ok "expnet --version: $(head -n 1 <<<"$out")"; else fail "extracted expnet --version failed: $out"; fi

"$build/app/expnet" dataset make-shapes --out "$tmp/shapes" --images 1 --seed 5 >/dev/null 2>&1
image=$(find "$tmp/shapes" -name '*.png' | head -n 1)
if [[ -z $image ]]; then
  fail "$build/app/expnet dataset make-shapes made no image in $tmp/shapes"
else
  want=$("$build/app/expnet" caption --model demo "$image" 2>/dev/null | cut -f2)
  got=$("${isolated[@]}" "$cli" caption --model demo "$image" 2>"$tmp/caption.err" | cut -f2)
  if [[ -n $want && $got == "$want" ]]; then ok "extracted caption equals the build tree's: '$got'"
  else fail "extracted caption '$got' differs from the build tree's '$want' ($(cat "$tmp/caption.err"))"; fi

  # Hide the packaged demo model: the binary must fail, naming where it looked,
  # and must not find the build machine's copy in the sources.
  demo=$root/usr/share/expnet/demo/demo_model.pth
  mv "$demo" "$tmp/demo_model.pth.hidden"
  if err=$("${isolated[@]}" "$cli" caption --model demo "$image" 2>&1); then
    fail "with the packaged demo model hidden, the extracted expnet still captioned: it found another copy ($err)"
  elif ! grep -qF "$demo" <<<"$err"; then
    fail "the missing-demo error does not name $demo: $err"
  elif grep -qF "$source" <<<"$err"; then
    fail "the extracted binary looked in the source tree $source: $err"
  else
    ok "demo model hidden: refused, naming where it looked, not the sources"
    echo "$err" | sed 's/^/    /'
  fi
  mv "$tmp/demo_model.pth.hidden" "$demo"

  shot=$tmp/caption-page.png
  if out=$("${isolated[@]}" "$studio" --screenshot "$shot" --page caption --model demo --open "$image" 2>&1) \
      && [[ -s $shot && $(head -c 4 "$shot" | tail -c 3) == PNG ]]; then
    ok "expnet-studio --screenshot of the Caption page wrote $(stat -c %s "$shot") bytes"
    # The screenshot's FILE.json lists what the page shows: the same caption.
    if [[ -n $want ]] && grep -qF "\"caption\": \"$want\"" "$shot.json" 2>/dev/null; then
      ok "the studio's Caption page shows the same caption"
    else
      fail "the studio's screenshot description $shot.json does not show the caption '$want'"
    fi
  else
    fail "extracted expnet-studio --screenshot wrote no PNG: $out"
  fi
fi

if [[ $failures -gt 0 ]]; then
  echo "$failures check(s) failed for $deb" >&2
  exit 1
fi
echo "all package checks passed for $deb"

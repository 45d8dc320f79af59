#!/usr/bin/env bash
# Installs, with apt, the Debian 12 packages ExpansionNet Studio needs to build,
# run and test. Idempotent: packages already installed are not touched, and when
# nothing is missing the script does not call apt at all (fast second run).
# Works as root, or as a user with sudo.
set -euo pipefail

PACKAGES=(
  # toolchain
  build-essential cmake ninja-build ccache pkg-config help2man
  # the fuzzers (packaging/fuzz.sh, tests/fuzz): clang with libFuzzer and the sanitizer runtimes
  clang-14 libclang-rt-14-dev
  # engine
  libtorch-dev libgloo-dev libopenblas0-pthread
  libopencv-dev libsqlite3-dev nlohmann-json3-dev libcli11-dev libspdlog-dev libfmt-dev
  libsimdjson-dev nettle-dev
  # zip archives checked before LibTorch opens them (core/src/checkpoint/zip_entries.cpp)
  libminizip-dev zlib1g-dev
  # alt text in the photos' XMP metadata (docs/metadata.md); ExifTool reads it back in the tests
  libexiv2-dev libimage-exiftool-perl
  # studio
  qt6-base-dev libqt6sql6-sqlite libqcustomplot-dev libqcustomplot2.1-qt6
  libgl1-mesa-dev fonts-dejavu-core
  # test peer: Debian's PyTorch, run as /usr/bin/python3; Pillow and OpenCV draw
  # the demo model's held-out scenes (tests/demo); protobuf and crcmod read back
  # the TensorBoard event files (tests/tfevents)
  python3 python3-torch python3-numpy python3-pil python3-opencv python3-protobuf python3-crcmod
  # the .deb (cmake/Packaging.cmake, packaging/deb.sh, tests/package): rsvg-convert
  # renders the icon's PNG sizes; dpkg-shlibdeps (dpkg-dev) computes Depends; the
  # package test runs lintian, appstreamcli and desktop-file-validate
  librsvg2-bin dpkg-dev lintian appstream desktop-file-utils
)

source "$(dirname "${BASH_SOURCE[0]}")/apt-common.sh"
require_missing install-deps "${PACKAGES[@]}"
missing=("${MISSING[@]}")

if ! find_sudo install-deps; then
  echo "[install-deps] error: ${#missing[@]} packages are missing (${missing[*]})" >&2
  echo "[install-deps] and this user is not root and has no sudo. Run this script as root." >&2
  exit 1
fi

echo "[install-deps] missing ${#missing[@]} packages: ${missing[*]}"
echo "[install-deps] apt-get update ..."
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
echo "[install-deps] apt-get install ${missing[*]} ..."
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
echo "[install-deps] done."

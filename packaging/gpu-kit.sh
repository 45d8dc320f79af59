#!/usr/bin/env bash
# Packs what a headless engine build needs besides LibTorch (headers and shared
# libraries of OpenCV, SQLite, fmt/spdlog, simdjson, nettle, minizip, zlib,
# nlohmann-json, CLI11, pkgconf), taken from this Debian 12 machine, into KIT
# (default .gpukit), with the fixtures. A GPU machine whose image carries a CUDA
# PyTorch but none of these (and cannot install them) then builds the engine
# against that PyTorch's LibTorch with packaging/gpu-check.sh. docs/performance.md
# ("CUDA") says how it was used.
#   packaging/gpu-kit.sh [KIT]
# OpenCV's image reader links GDAL and GDCM, whose own dependencies would not fit
# the transfer: they are replaced by libraries of the same names whose functions
# abort with a message. Only GDAL rasters and DICOM files reach them; the check
# reads PNG and JPEG. The kit is for checking on such machines, never for users.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
KIT=${1:-$ROOT/.gpukit}
FIXTURES=${EXPNET_FIXTURES:-$ROOT/../shared/fixtures}
LIB=/usr/lib/x86_64-linux-gnu
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
P=$STAGE/prefix

copy() {  # copy absolute paths (files or symlinks) under the prefix, keeping their place
  for f in "$@"; do
    mkdir -p "$P$(dirname "$f")"
    cp -a "$f" "$P$f"
  done
}

# Headers, CMake configurations and pkg-config files of the -dev packages.
for pkg in libopencv-core-dev libopencv-imgproc-dev libopencv-imgcodecs-dev nlohmann-json3-dev libcli11-dev \
           libspdlog-dev libfmt-dev libsimdjson-dev nettle-dev libsqlite3-dev libminizip-dev zlib1g-dev; do
  dpkg -L "$pkg" | while read -r f; do [[ -f $f || -L $f ]] && [[ $f != /usr/share/doc/* && $f != *.a ]] && echo "$f"; done
done | sort -u > "$STAGE/dev-files"
copy $(cat "$STAGE/dev-files")
# OpenCV's CMake files come from libopencv-dev (every module): keep them, and
# check only the three modules the engine links.
copy $LIB/cmake/opencv4/*.cmake /usr/include/opencv4/opencv2/opencv_modules.hpp /usr/include/opencv4/opencv2/opencv.hpp
sed -i '/_cmake_import_check_targets opencv_\(core\|imgproc\|imgcodecs\) /!{/_cmake_import_check_targets/d}' \
  "$P$LIB/cmake/opencv4/OpenCVModules-release.cmake"

# Runtime libraries: what these link, recursively, but the C and C++ runtimes
# (the GPU machine's own serve), GDAL and GDCM (stubbed below), and OpenBLAS
# (the reference BLAS/LAPACK that OpenCV's core loads instead, never called here).
skip='/(libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt|ld-linux-x86-64)\.so|libgdal|libgdcm|openblas|/(libblas|liblapack)\.so'
roots=($LIB/libopencv_core.so.406 $LIB/libopencv_imgproc.so.406 $LIB/libjpeg.so.62 $LIB/libwebp.so.7
       $LIB/libpng16.so.16 $LIB/libtiff.so.6 $LIB/libopenjp2.so.7 $LIB/libOpenEXR-3_1.so.30 $LIB/libspdlog.so.1.10
       $LIB/libfmt.so.9 $LIB/libsimdjson.so.14 $LIB/libnettle.so.8 $LIB/libsqlite3.so.0 $LIB/libminizip.so.1
       $LIB/libz.so.1 $LIB/libtbb.so.12 $LIB/libGLX.so.0 $LIB/libpkgconf.so.3)
{ printf '%s\n' "${roots[@]}"; for r in "${roots[@]}"; do ldd "$r" | awk '$3 ~ /^\// {print $3}'; done; } |
  sed 's|^/lib/|/usr/lib/|' | sort -u | grep -Ev "$skip" > "$STAGE/runtime"
while read -r so; do
  copy "$so"
  real=$(readlink -f "$so")
  [[ $real != "$so" ]] && copy "$real"
done < "$STAGE/runtime"
copy $LIB/libopencv_imgcodecs.so.4.6.0 $LIB/libopencv_imgcodecs.so.406
mkdir -p "$P/blas"
cp -L $LIB/blas/libblas.so.3 $LIB/lapack/liblapack.so.3 "$P/blas/"
cp /usr/bin/pkgconf "$P/pkgconf"

# GDAL and GDCM stand-ins: every symbol OpenCV imports from them aborts.
for lib in libgdal.so.32 libgdcmMSFF.so.3.0 libgdcmDSED.so.3.0; do
  nm -D --defined-only "$LIB/$lib" | awk '{print $3}' | sort -u > "$STAGE/defined"
  nm -D --undefined-only "$LIB/libopencv_imgcodecs.so.406" | awk '{print $2}' | sort -u |
    comm -12 - "$STAGE/defined" > "$STAGE/used"
  {
    echo '#include <stdio.h>'
    echo '#include <stdlib.h>'
    echo "static void missing(const char* f) { fprintf(stderr, \"%s: $lib is not in this GPU check kit (packaging/gpu-kit.sh)\\n\", f); abort(); }"
    while read -r sym; do
      # OpenCV registers GDAL's drivers when it lists its image readers: that one does nothing.
      if [[ $sym == GDALAllRegister ]]; then echo "void $sym(void) {}"; else echo "void $sym(void) { missing(\"$sym\"); }"; fi
    done < "$STAGE/used"
  } > "$STAGE/$lib.c"
  gcc -shared -fPIC -O1 -Wl,-soname,"$lib" -o "$P$LIB/$lib" "$STAGE/$lib.c"
done

rm -rf "$KIT"
mkdir -p "$KIT"
tar -C "$P" -cf - . | xz -T2 -6 > "$KIT/deps.tar.xz"
if [[ -d $FIXTURES ]]; then cp -a "$FIXTURES" "$KIT/fixtures"; else echo "[gpu-kit] no fixtures at $FIXTURES: parity will be skipped" >&2; fi
# EXPNET_AUTHORS=DIR (a checkout of the authors' ExpansionNet_v2): the Python files the
# training side-by-side imports (models, losses, optims, utils, eval's scorers), for
# gpu-check.sh's EXPNET_GPU_TRAINING steps; their code is only run there, never shipped.
if [[ -n ${EXPNET_AUTHORS:-} ]]; then
  (cd "$EXPNET_AUTHORS" && find models losses optims utils eval -name '*.py' -not -path 'eval/spice/*' -print0 |
    tar --null -T - -cf -) | (mkdir -p "$KIT/authors" && tar -C "$KIT/authors" -xf -)
fi
grep -qx '/.gpukit/' "$ROOT/.git/info/exclude" 2>/dev/null || echo '/.gpukit/' >> "$ROOT/.git/info/exclude"
echo "[gpu-kit] $KIT: $(du -sh "$KIT" | cut -f1) (deps $(du -h "$KIT/deps.tar.xz" | cut -f1))"

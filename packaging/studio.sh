#!/usr/bin/env bash
# README command 1: install what is missing, build (Release) and start
# expnet-studio on the built-in demo. Extra arguments go to expnet-studio.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
expnet_install_and_build
if [[ -z "${DISPLAY:-}" && -z "${WAYLAND_DISPLAY:-}" && -z "${QT_QPA_PLATFORM:-}" ]]; then
  echo "[studio] no display (DISPLAY/WAYLAND_DISPLAY unset): cannot open a window here." >&2
  echo "[studio] on a headless machine try: $EXPNET_BUILD_DIR/app/expnet-studio --screenshot studio.png" >&2
  exit 1
fi
echo "[studio] starting $EXPNET_BUILD_DIR/app/expnet-studio $*"
exec "$EXPNET_BUILD_DIR/app/expnet-studio" "$@"

#!/usr/bin/env bash
# README command 2: install what is missing, build, run every test with CTest.
# Exits non-zero on any failure. Extra arguments go to ctest (e.g. -L unit).
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
expnet_install_and_build
# sshd and ip for the remote-host tests (network namespaces): for the tests only,
# never started as a service (packaging/install-test-hosts.sh).
"$EXPNET_ROOT/packaging/install-test-hosts.sh"
echo "[test] ctest in $EXPNET_BUILD_DIR"
cd "$EXPNET_BUILD_DIR"
QT_QPA_PLATFORM=offscreen ctest --output-on-failure "$@"

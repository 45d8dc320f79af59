#!/usr/bin/env bash
# Installs, with apt, what the tests of SSH features need to make their test
# hosts (tests/support/test_host.h): Debian's sshd, the ssh client tools and ip.
# For the test command only (packaging/test.sh), never for the studio.
#
# It never leaves a listening sshd behind: the tests run their own sshd inside
# network namespaces. When openssh-server is missing, it is installed with
# services kept from starting, and then disabled. When it is already installed,
# nothing of the system's ssh set-up is touched.
#
# Idempotent: when nothing is missing the script does not call apt at all.
# Works as root, or as a user with sudo; otherwise it skips (those tests skip too).
set -euo pipefail

PACKAGES=(openssh-server openssh-client iproute2)
POLICY=/usr/sbin/policy-rc.d

source "$(dirname "${BASH_SOURCE[0]}")/apt-common.sh"
require_missing install-test-hosts "${PACKAGES[@]}"
missing=("${MISSING[@]}")

if ! find_sudo install-test-hosts; then
  echo "[install-test-hosts] skipping: ${missing[*]} missing, and this user is not root and has no sudo."
  echo "[install-test-hosts] The tests that need test hosts will skip (they need root anyway)."
  exit 0
fi

new_server=false
is_installed openssh-server || new_server=true

# Keeps the package scripts from starting sshd (invoke-rc.d and deb-systemd-invoke
# ask policy-rc.d; 101 means "not allowed"). Only ours is removed afterwards.
our_policy=false
remove_our_policy() {
  if [[ $our_policy == true ]]; then
    "${SUDO[@]}" rm -f "$POLICY"
  fi
}
trap remove_our_policy EXIT
if [[ $new_server == true && ! -e "$POLICY" ]]; then
  printf '#!/bin/sh\n# install-test-hosts.sh: no services start while it installs openssh-server\nexit 101\n' |
    "${SUDO[@]}" tee "$POLICY" >/dev/null
  "${SUDO[@]}" chmod 755 "$POLICY"
  our_policy=true
fi

echo "[install-test-hosts] missing ${#missing[@]} packages: ${missing[*]}"
echo "[install-test-hosts] apt-get update ..."
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
echo "[install-test-hosts] apt-get install ${missing[*]} ..."
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
remove_our_policy
our_policy=false

if [[ $new_server == true ]]; then
  echo "[install-test-hosts] openssh-server was just installed: disabling its service (the tests run their own sshd)."
  # Debian's ssh.service does not start while this file exists.
  "${SUDO[@]}" touch /etc/ssh/sshd_not_to_be_run
  if command -v systemctl >/dev/null 2>&1; then
    # --now also stops it, in case an existing policy-rc.d let the package start it.
    "${SUDO[@]}" systemctl disable --now ssh.service ssh.socket >/dev/null 2>&1 ||
      "${SUDO[@]}" systemctl disable ssh.service ssh.socket >/dev/null 2>&1 || true
  fi
  if [[ -x /etc/init.d/ssh ]] && ! [[ -d /run/systemd/system ]]; then
    "${SUDO[@]}" /etc/init.d/ssh stop >/dev/null 2>&1 || true
  fi
fi
echo "[install-test-hosts] done."

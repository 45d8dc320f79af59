# Sourced by install-deps.sh and install-test-hosts.sh: which Debian packages are
# missing, and how this user runs apt-get (as root, or through sudo).

# is_installed PKG: dpkg says it is installed.
is_installed() {
  [[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)" == "install ok installed" ]]
}

# find_missing PKG...: sets the array MISSING to those not installed.
find_missing() {
  MISSING=()
  local pkg
  for pkg in "$@"; do
    is_installed "$pkg" || MISSING+=("$pkg")
  done
}

# require_missing TAG PKG...: sets MISSING as find_missing does; when nothing is
# missing, says so and exits the script with 0.
require_missing() {
  local tag=$1
  shift
  find_missing "$@"
  if [[ ${#MISSING[@]} -eq 0 ]]; then
    echo "[$tag] all $# required packages are already installed."
    exit 0
  fi
}

# find_sudo TAG: sets the array SUDO (empty as root, (sudo) otherwise); returns 1
# when this user is neither root nor has sudo.
find_sudo() {
  if [[ $(id -u) -eq 0 ]]; then
    SUDO=()
  elif command -v sudo >/dev/null 2>&1; then
    SUDO=(sudo)
    echo "[$1] not root: using sudo for apt-get."
  else
    return 1
  fi
}

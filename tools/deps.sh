#!/bin/sh
# Installs the Debian packages lace needs to build and test, if missing.
# Run by `make demo` and `make test`; safe to run again (does nothing then).
set -e
need=""
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
for p in cmake make gcc python3 libopenblas-dev pkg-config; do
  have_pkg "$p" || need="$need $p"
done
[ -z "$need" ] && exit 0
echo "lace: installing missing packages:$need"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq $need

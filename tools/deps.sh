#!/bin/sh
# Installs the Debian packages lace needs to build and test, if missing.
# Run by `make demo`, `make test` and .ci/run; does nothing when everything
# is there. As a normal user it goes through sudo; it refreshes the apt lists
# first, so a fresh machine with empty /var/lib/apt/lists works too.
# Needs: a C17 compiler with the sanitizer runtimes (gcc), CMake >= 3.20,
# make, python3 (stub generation), OpenBLAS (cblas.h, libopenblas), nm
# (binutils) and pkg-config (the install test).
set -e

have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

need=""
for p in gcc libc6-dev make cmake python3 binutils libopenblas-dev pkg-config; do
  have_pkg "$p" || need="$need $p"
done
[ -z "$need" ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
  # Not Debian: accept tools found on PATH, otherwise say what is missing.
  missing=""
  for c in cc make cmake python3 nm pkg-config; do
    command -v "$c" >/dev/null 2>&1 || missing="$missing $c"
  done
  [ -z "$missing" ] && exit 0
  echo "lace: missing tools:$missing (and OpenBLAS); install them with your package manager" >&2
  exit 1
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
  else
    echo "lace: need root or sudo to install:$need" >&2
    exit 1
  fi
fi

echo "lace: installing missing Debian packages:$need"
export DEBIAN_FRONTEND=noninteractive
# sudo resets the environment; pass the frontend through explicitly.
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
# shellcheck disable=SC2086
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $need

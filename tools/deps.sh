#!/bin/sh
# Installs the Debian packages lace needs to build and test, if missing.
# Run by `make demo`, `make test` and .ci/run; does nothing when everything
# is there. As a normal user it goes through sudo; it refreshes the apt lists
# first, so a fresh machine with empty /var/lib/apt/lists works too.
# Needs: a C17 compiler with the sanitizer runtimes (gcc), CMake >= 3.20,
# make, python3 (stub generation), OpenBLAS (cblas.h, libopenblas), nm
# (binutils), pkg-config (the install test), KissFFT (libkissfft-dev,
# the FFT backend) and OpenMPI (libopenmpi-dev, openmpi-bin: mpirun and the
# libmpi.so.40 that lace's distributed layer dlopens at run time).
set -e

have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

# A tool counts as present when it is on PATH (whatever installed it); the
# libraries when their Debian package is installed or their header is found.
need=""
for pair in gcc:gcc make:make cmake:cmake python3:python3 nm:binutils pkg-config:pkg-config; do
  command -v "${pair%%:*}" >/dev/null 2>&1 || need="$need ${pair#*:}"
done
have_pkg libc6-dev || [ -f /usr/include/stdio.h ] || need="$need libc6-dev"
have_cblas() {
  for f in /usr/include/cblas.h /usr/include/*/cblas.h /usr/include/*/openblas*/cblas.h; do
    [ -f "$f" ] && return 0
  done
  return 1
}
# cblas.h alone is not enough (reference BLAS ships one too): the OpenBLAS
# library itself must be there.
have_openblas_lib() {
  for f in /usr/lib/*/libopenblas.so /usr/lib/libopenblas.so /usr/lib64/libopenblas.so \
           /usr/local/lib/libopenblas.so; do
    [ -e "$f" ] && return 0
  done
  return 1
}
have_pkg libopenblas-dev || { have_cblas && have_openblas_lib; } || need="$need libopenblas-dev"
have_pkg libkissfft-dev || [ -f /usr/include/kissfft/kiss_fft.h ] || need="$need libkissfft-dev"
# OpenMPI: the library lace loads (libmpi.so.40) and the launcher the tests use.
have_libmpi() {
  for f in /usr/lib/*/libmpi.so.40 /usr/lib/libmpi.so.40 /usr/lib64/libmpi.so.40; do
    [ -e "$f" ] && return 0
  done
  return 1
}
have_pkg libopenmpi-dev || have_libmpi || need="$need libopenmpi-dev"
have_pkg openmpi-bin || command -v mpirun >/dev/null 2>&1 || need="$need openmpi-bin"
[ -z "$need" ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
  echo "lace: missing:$need; install them with your package manager" >&2
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

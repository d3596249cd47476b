#!/bin/sh
# Packs what a lent GPU machine needs to run the GPU tests and benchmarks
# without building there: build-gpu's liblace.so, every tests/gpu/test_*.c
# and the GPU benchmarks linked against it (one copy of the kernels instead
# of one per program), and the Debian libraries lace loads that the device
# image lacks (OpenBLAS, KissFFT, gfortran's runtime), into
# .gpubuild/bundle.tar.xz (ignored by git; carried by the device tool).
#   sh tools/gpu_bundle.sh [AREA...]  after building build-gpu (LACE_CUDA=ON);
#                                     AREAs: more tests/<AREA>/ directories, whose
#                                     programs go to cpu-tests/ (run there with
#                                     LACE_TEST_DEVICE=gpu: their cases on the GPU)
# There: tar xJf .gpubuild/bundle.tar.xz -C /tmp && sh tools/gpu_check.sh /tmp/gpub
set -eu
B=build-gpu
[ -f "$B/liblace.so.0" ] || { echo "gpu_bundle: build $B first (LACE_CUDA=ON)"; exit 1; }
D=$(mktemp -d)/gpub
mkdir -p "$D"
cp -L "$B/liblace.so.0" "$D/"
strip --strip-unneeded "$D/liblace.so.0"
CF="-std=gnu17 -O2 -Wno-unused-function -Iinclude -Isrc"
LF="-L$D -l:liblace.so.0 -lm -lpthread -Wl,-rpath,\$ORIGIN"
for t in tests/gpu/test_*.c; do
  n=$(basename "$t" .c)
  cc $CF -Itests/common -DLACE_TEST_DATA="\"/tmp/gpub/data\"" "$t" -o "$D/$n" $LF
done
if [ $# -gt 0 ]; then
  mkdir -p "$D/cpu-tests"
  for a in "$@"; do
    for t in tests/"$a"/test_*.c; do
      n=$(basename "$t" .c)
      cc $CF -Itests/common -DLACE_TEST_DATA="\"/tmp/gpub/data\"" "$t" -o "$D/cpu-tests/$n" \
        -L"$D" -l:liblace.so.0 -lm -lpthread -Wl,-rpath,/tmp/gpub
    done
  done
fi
CBLAS=/usr/include/x86_64-linux-gnu/openblas-pthread
for b in bench_gpu bench_decode; do
  cc $CF -Ibench -I$CBLAS "bench/$b.c" -o "$D/$b" $LF
done
CU=/usr/local/cuda
cc $CF -Ibench -DLACE_BENCH_CUDA -I$CU/include bench/bench_cublas.c -o "$D/bench_cublas" $LF \
  -L$CU/lib64 -lcublasLt -lcublas -lcudart
cp -r tests/data "$D/data" 2>/dev/null || true
# the Debian libraries liblace.so.0 needs beyond the CUDA toolkit's
for l in $(ldd "$D/liblace.so.0" | awk '/=>/ {print $3}' | grep -E 'openblas|kissfft|gfortran|quadmath'); do
  cp -L "$l" "$D/"
done
mkdir -p .gpubuild
tar cJf .gpubuild/bundle.tar.xz -C "$(dirname "$D")" gpub
rm -rf "$(dirname "$D")"
ls -la .gpubuild/bundle.tar.xz

#!/bin/sh
# The GPU check: every GPU test (test_gpu_*) and the side-by-side GPU benchmark.
#   sh tools/gpu_check.sh          builds build-gpu (Release, LACE_CUDA=ON),
#                                  then runs them from there
#   sh tools/gpu_check.sh DIR      runs prebuilt binaries from DIR (how the
#                                  lent H200 runs binaries built elsewhere;
#                                  DIR/cpu-tests/, when there, are run with
#                                  LACE_TEST_DEVICE=gpu: see gpu_bundle.sh)
# LACE_GPU_BENCH=0 skips the benchmarks; their output is in gpu-bench.log and
# gpu-decode.log (the transformer decode step: lace, torch, jax).
# Exit status: non-zero when a test failed (a skip, 77, is not a failure).
# Each test is stopped after LACE_GPU_TEST_TIMEOUT seconds (300), a failure.
set -u
[ -f tools/gpu_env.sh ] && . tools/gpu_env.sh
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
if [ $# -ge 1 ]; then
  T=$1 B=$1
else
  cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DLACE_CUDA=ON -DLACE_BUILD_BENCH=ON >/dev/null &&
    cmake --build build-gpu -j"$(nproc)" || exit 1
  T=build-gpu/tests B=build-gpu/bench
fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null
rc=0
for p in "$T"/test_gpu_*; do
  [ -x "$p" ] || continue
  t=${p##*/}
  echo "== $t"
  timeout "${LACE_GPU_TEST_TIMEOUT:-300}" "$p"
  s=$?
  [ $s -eq 0 ] || [ $s -eq 77 ] || { echo "== $t FAILED ($s)"; rc=1; }
  # again with the other launch modes (GEMV clusters, no programmatic dependent launch)
  echo "== $t (LACE_CUDA_GEMV_CLUSTER=1 LACE_CUDA_PDL=0)"
  LACE_CUDA_GEMV_CLUSTER=1 LACE_CUDA_PDL=0 timeout "${LACE_GPU_TEST_TIMEOUT:-300}" "$p"
  s=$?
  [ $s -eq 0 ] || [ $s -eq 77 ] || { echo "== $t (clusters, no PDL) FAILED ($s)"; rc=1; }
done
# a bundle's other test programs (gpu_bundle.sh AREA...), their cases on the GPU
if [ -d "$T/cpu-tests" ]; then
  log=$(mktemp)
  for p in "$T"/cpu-tests/test_*; do
    [ -x "$p" ] || continue
    t=${p##*/}
    echo "== $t (LACE_TEST_DEVICE=gpu)"
    LACE_TEST_DEVICE=gpu timeout "${LACE_GPU_TEST_TIMEOUT:-300}" "$p" > "$log" 2>&1
    s=$?
    tail -n 20 "$log"
    [ "$s" -eq 0 ] || [ "$s" -eq 77 ] || { echo "== $t (on the GPU) FAILED ($s)"; rc=1; }
  done
  rm -f "$log"
fi
if [ "${LACE_GPU_BENCH:-1}" != 0 ]; then
  echo "== bench"
  PYTHONUNBUFFERED=1 python3 tools/gpu_bench.py "$B/bench_gpu" 2>&1 | tee gpu-bench.log
  echo "== decode"
  PYTHONUNBUFFERED=1 python3 tools/gpu_decode.py "$B/bench_decode" 2>&1 | tee gpu-decode.log
fi
exit $rc

# Thin front end over CMake. Build trees: build/ (release), build-asan/
# (AddressSanitizer + UndefinedBehaviorSanitizer), build-tsan/ (ThreadSanitizer).
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
PYTHON ?= python3

# Debian 12's OpenBLAS (0.3.21) does not recognise recent Xeons (Sapphire and
# Emerald Rapids) and falls back to its slowest kernels (Prescott, about 3.5x
# slower sgemm here). On CPUs with AVX-512 ask for the SkylakeX kernels,
# unless OPENBLAS_CORETYPE is already set. See BENCHMARKS.md.
ifeq ($(origin OPENBLAS_CORETYPE),undefined)
  ifneq ($(shell grep -m1 -ow avx512f /proc/cpuinfo 2>/dev/null),)
    export OPENBLAS_CORETYPE := SkylakeX
  endif
endif

# OpenBLAS's idle threads spin (sched_yield) for a while after each call,
# taking cores from lace's own pool while fused kernels run between the
# matrix products of a training step; a short timeout puts them to sleep
# sooner (measured in BENCHMARKS.md, "Training"), unless already set.
ifeq ($(origin OPENBLAS_THREAD_TIMEOUT),undefined)
  export OPENBLAS_THREAD_TIMEOUT := 4
endif

# GCC 12's ThreadSanitizer cannot map its shadow memory on kernels with 32
# bits of mmap randomisation ("unexpected memory mapping"); the TSan tests
# run with address randomisation off where setarch allows it.
NO_ASLR := $(shell setarch $$(uname -m) -R true 2>/dev/null && echo setarch $$(uname -m) -R)

.PHONY: all deps build demo test test-plain test-asan test-tsan bench install api-status clean fuzz

all: build

deps:
	@sh tools/deps.sh

build/Makefile: | deps
	cmake -S . -B build -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

build: deps build/Makefile
	cmake --build build -j $(JOBS)

# The main job: a compiled transformer decode step on an embedded model.
demo: build
	./build/examples/demo_decode

# Every test through CTest: plain, then under ASan+UBSan, then the threaded
# tests under TSan.
test: test-plain test-asan test-tsan

test-plain: build
	cd build && ctest --output-on-failure -j $(JOBS)

test-asan: deps
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DLACE_SANITIZE=address,undefined \
	  -DLACE_BUILD_BENCH=OFF $(CMAKE_FLAGS)
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --output-on-failure -j $(JOBS)

test-tsan: deps
	cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DLACE_SANITIZE=thread \
	  -DLACE_BUILD_BENCH=OFF -DLACE_BUILD_EXAMPLES=OFF $(CMAKE_FLAGS)
	cmake --build build-tsan -j $(JOBS)
	cd build-tsan && TSAN_OPTIONS=halt_on_error=1 $(NO_ASLR) ctest --output-on-failure -L threads -j $(JOBS)

# The libFuzzer harnesses of tests/fuzz/ (needs clang), each run for
# FUZZ_SECONDS on its corpus; new inputs go to build-fuzz-clang/corpus/,
# crashes to build-fuzz-clang/crash-*. Ten minutes each:
#   make fuzz FUZZ_SECONDS=600   (or FUZZERS="api json" for a subset)
FUZZ_SECONDS ?= 60
FUZZERS ?= npy safetensors gguf json api mlxfn
fuzz: deps
	CC=clang cmake -S . -B build-fuzz-clang -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLACE_FUZZ=ON \
	  -DLACE_SANITIZE=fuzzer-no-link,address,undefined -DLACE_BUILD_TESTS=OFF -DLACE_CUDA=OFF \
	  -DLACE_BUILD_BENCH=OFF -DLACE_BUILD_EXAMPLES=OFF $(CMAKE_FLAGS)
	cmake --build build-fuzz-clang -j $(JOBS)
	@set -e; for h in $(FUZZERS); do mkdir -p build-fuzz-clang/corpus/$$h; \
	  ./build-fuzz-clang/tests/fuzz/fuzz_$$h -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 \
	    -timeout=10 -print_final_stats=1 -artifact_prefix=build-fuzz-clang/crash-$$h- \
	    build-fuzz-clang/corpus/$$h tests/fuzz/corpus/$$h \
	    $$(ls -d tests/fuzz/crashes/$$h 2>/dev/null); done

# Every benchmark program (output also saved as build/bench/<name>.txt), then
# the same op cases in numpy (torch, mlx when importable by $(PYTHON)).
bench: build
	@set -e; for b in build/bench/bench_*; do \
	  if [ -x "$$b" ] && [ -f "$$b" ]; then "$$b" | tee "$$b.txt"; fi; done
	$(PYTHON) bench/compare_numpy.py build/bench/bench_ops.txt | tee build/bench/compare_numpy.txt
	$(PYTHON) bench/compare_compile.py build/bench/bench_compile.txt | tee build/bench/compare_compile.txt
	$(PYTHON) bench/compare_train.py build/bench/bench_train.txt | tee build/bench/compare_train.txt
	@echo "markdown tables for BENCHMARKS.md: python3 bench/bench_table.py"

# mlx-c functions lace implements, per header; the missing ones are listed in
# build/missing_api.txt (they link, and fail with "not implemented in lace").
api-status: build
	@find build/CMakeFiles/lace_objects.dir -name '*.o' | \
	  xargs $(PYTHON) tools/gen_stubs.py /dev/null --list > build/missing_api.txt
	@awk -F'\t' 'NR == FNR { miss[$$1] = 1; next } FNR > 1 { tot[$$1]++; if (!($$2 in miss)) ok[$$1]++ } \
	  END { for (h in tot) { printf "%-20s %4d of %4d\n", h, ok[h], tot[h]; a += ok[h]; t += tot[h] } \
	        printf "%-20s %4d of %4d\n", "(all)", a, t }' build/missing_api.txt tools/mlxc_api.tsv | sort
	@echo "missing functions: build/missing_api.txt"

install: build
	cmake --install build $(if $(PREFIX),--prefix $(PREFIX),)

clean:
	rm -rf build build-asan build-tsan

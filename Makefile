# Thin front end over CMake. Build trees: build/ (release), build-asan/
# (AddressSanitizer + UndefinedBehaviorSanitizer), build-tsan/ (ThreadSanitizer).
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
PYTHON ?= python3

.PHONY: all deps build demo test test-plain test-asan test-tsan bench install clean

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
	cd build-tsan && TSAN_OPTIONS=halt_on_error=1 ctest --output-on-failure -L threads -j $(JOBS)

# Every benchmark program (output also saved as build/bench/<name>.txt), then
# the same op cases in numpy (torch, mlx when importable by $(PYTHON)).
bench: build
	@set -e; for b in build/bench/bench_*; do \
	  if [ -x "$$b" ] && [ -f "$$b" ]; then "$$b" | tee "$$b.txt"; fi; done
	$(PYTHON) bench/compare_numpy.py build/bench/bench_ops.txt

install: build
	cmake --install build $(if $(PREFIX),--prefix $(PREFIX),)

clean:
	rm -rf build build-asan build-tsan

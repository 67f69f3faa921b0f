#!/usr/bin/env bash
# Installs the Debian packages of the build and the tests that are
# missing (scripts/deps.sh, as root), builds, and runs every test:
#  1. the release build: Criterion unit tests, the library preloaded
#     into real programs, and the library and packages built by a user
#     without root (ctest);
#  2. the Debian package (scripts/package.sh) installed with dpkg, run
#     and removed, as root;
#  3. the same unit tests built with AddressSanitizer and
#     UndefinedBehaviorSanitizer (the engine as a normal library);
#  4. the aarch64 engine, cross-compiled, its tests run by ctest under
#     qemu-aarch64 on two CPUs (DC ZVA blocks of 512 and 64 bytes).
set -eu
cd "$(dirname "$0")/.."
scripts/deps.sh

echo "== release build"
scripts/build.sh build -DHZ_TESTS=ON -DHZ_BENCH=ON
(cd build && ctest --output-on-failure)

echo "== the Debian package: built, installed, run, removed (as root)"
tests/programs/package.sh "$PWD"

echo "== AddressSanitizer + UndefinedBehaviorSanitizer build"
scripts/build.sh build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHZ_SANITIZE=ON -DHZ_TESTS=ON -DHZ_BENCH=OFF
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure)

echo "== aarch64 under qemu-user"
scripts/build.sh build-aarch64 -DCMAKE_TOOLCHAIN_FILE=scripts/aarch64-linux-gnu.cmake \
	-DHZ_TESTS=OFF -DHZ_BENCH=OFF -DHZ_PRELOAD=OFF
for cpu in max cortex-a53; do
	echo "-- qemu-aarch64 -cpu $cpu"
	(cd build-aarch64 && QEMU_CPU=$cpu ctest --output-on-failure)
done

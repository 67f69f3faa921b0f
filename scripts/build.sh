#!/usr/bin/env bash
# A release build into build/ (or $1; further arguments go to cmake): the
# library (libhugezero.so and libhugezero.a), the files the command
# installs and the man pages. A new directory builds no tests and no
# benchmarks (-DHZ_TESTS=ON and -DHZ_BENCH=ON add them; the tests need
# the packages of scripts/deps.sh without --build); a directory
# configured before keeps its choice. Installs nothing and needs no root:
# it names the build's Debian packages that are missing and stops.
set -eu
cd "$(dirname "$0")/.."
scripts/deps.sh --build --check
dir=${1:-build}
shift || true
new=()
[ -f "$dir/CMakeCache.txt" ] || new=(-DHZ_TESTS=OFF -DHZ_BENCH=OFF)
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release "${new[@]}" "$@" >/dev/null
cmake --build "$dir" -j"$(nproc)"

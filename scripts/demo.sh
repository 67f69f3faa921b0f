#!/usr/bin/env bash
# Installs the build's Debian packages that are missing (scripts/deps.sh
# --build: as root; another user is told which), builds the library and
# the benchmarks into build/, and runs a workload a user would
# recognise (bench/workload: a frame pipeline with large zeroed buffers and
# a recycled calloc each frame) under the library with A/B arms on half of
# the eligible calls; then prints the merged report with the A/B verdict
# and writes its chart. Arguments go to the workload (FRAMES).
set -eu
cd "$(dirname "$0")/.."
scripts/deps.sh --build
scripts/build.sh build -DHZ_BENCH=ON
out=build/demo
rm -rf "$out"
mkdir -p "$out"
scripts/hugezero run --ab 0.5 --callsites 10 --stats "$out/report.%p.json" -- build/bench/workload "$@"
echo
scripts/hugezero report --svg "$out/ab.svg" "$out"/report.*.json

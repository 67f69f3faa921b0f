#!/usr/bin/env bash
# Installs what is missing, builds, and runs the kernel benchmark: glibc's
# memset, every kernel this CPU runs and hugezero's dispatch, side by side.
# Arguments go to the benchmark (--max SIZE, --reps N, --csv FILE).
set -eu
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh build -DHZ_BENCH=ON
exec build/bench/memset_bench --csv build/memset_bench.csv "$@"

#!/usr/bin/env bash
# Configures and builds into build/ (or $1, with further cmake arguments).
set -eu
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "$dir" -j"$(nproc)"

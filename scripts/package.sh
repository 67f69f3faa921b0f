#!/usr/bin/env bash
# Builds the Debian package (hugezero_VERSION_ARCH.deb) into dist/ (or
# $1): a release build for /usr in build-package/, then CPack, whose
# Depends come from dpkg-shlibdeps. Install it with
#   apt install ./dist/hugezero_*.deb
set -eu
cd "$(dirname "$0")/.."
out=$(realpath -m "${1:-dist}")
scripts/deps.sh
cmake -S . -B build-package -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
	-DHZ_TESTS=OFF -DHZ_BENCH=OFF >/dev/null
cmake --build build-package -j"$(nproc)" >/dev/null
mkdir -p "$out"
(cd build-package && cpack -G DEB -B "$out" >/dev/null)
rm -rf "$out/_CPack_Packages"
ls "$out"/hugezero_*.deb

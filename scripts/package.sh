#!/usr/bin/env bash
# Builds the Debian packages into dist/ (or $1): libhugezero0 (the shared
# library), libhugezero-dev (the archive, header, pkg-config and CMake
# files) and hugezero (the command, hugezero(1) and hugezero(7)), from a
# release build for /usr in build-package/, by CPack, their Depends from
# dpkg-shlibdeps. Installs nothing and needs no root (CPack writes the
# files as root's in the archives): it names the build's Debian packages
# that are missing and stops. Install the packages with
#   apt install ./dist/*.deb
set -eu
cd "$(dirname "$0")/.."
out=$(realpath -m "${1:-dist}")
scripts/deps.sh --build --check
cmake -S . -B build-package -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
	-DHZ_TESTS=OFF -DHZ_BENCH=OFF >/dev/null
cmake --build build-package -j"$(nproc)" >/dev/null
mkdir -p "$out"
(cd build-package && cpack -G DEB -B "$out" >/dev/null)
rm -rf "$out/_CPack_Packages"
ls "$out"/*.deb

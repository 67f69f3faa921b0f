#!/usr/bin/env bash
# The Debian packages hugezero needs, in two sets. --build: what
# scripts/build.sh and scripts/package.sh need to build the library and
# the packages. Without it: those and everything the tests run
# (scripts/test.sh). As root it installs the missing ones with apt-get.
# As another user, or with --check, it installs nothing: it names the
# missing ones and the command that installs them, and exits 1.
# Usage: deps.sh [--build] [--check]
set -eu
build_pkgs=(
	# the compilers, make, and binutils (nm, objcopy, ar: the renamed
	# jemalloc; strip, readelf: CPack)
	build-essential cmake
	# jemalloc's static archive, which the library embeds
	libjemalloc-dev
	# writes the Prometheus rules at build time; the command is Python
	python3
	# the packages' Depends: dpkg-shlibdeps (dpkg-dev) on the ELF files
	# that CPack finds with file
	dpkg-dev file)
test_pkgs=(
	# the unit tests; pkg-config builds against the installed library
	libcriterion-dev pkg-config
	# call sites' backtraces (dlopen'ed by the library)
	libunwind8
	# the aarch64 engine, cross-compiled and run under qemu-user
	gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user
	# real programs the preloaded library is tested under, and the
	# real-program suite's (hugezero suite --real; redis-tools has
	# redis-benchmark)
	python3-numpy sqlite3 redis-server redis-tools postgresql-15
	openjdk-17-jdk-headless zstd xz-utils
	# the suite's MariaDB cases: mariadbd and mariadb-install-db
	# (mariadb-server), mariadb-admin (mariadb-client), the sysbench load
	mariadb-server mariadb-client sysbench
	# the other allocators the benchmarks compare against, GNU time for
	# the workload suite's peak RSS
	time libjemalloc2 libmimalloc2.0 libtcmalloc-minimal4
	# strace counts the system calls of a release (tests/programs/release.sh)
	strace
	# valgrind beside the library (tests/programs/tools.sh)
	valgrind
	# promtool checks the Prometheus report and rules, and with the node
	# exporter serves the fleet's end-to-end test; man renders the man
	# pages; lintian checks the Debian packages
	prometheus prometheus-node-exporter man-db lintian)

set_name="the build and the tests" check=0
pkgs=("${build_pkgs[@]}" "${test_pkgs[@]}")
for arg in "$@"; do
	case $arg in
	--build) set_name="the build" pkgs=("${build_pkgs[@]}") ;;
	--check) check=1 ;;
	*) echo "usage: deps.sh [--build] [--check]" >&2; exit 2 ;;
	esac
done
if ! command -v dpkg-query >/dev/null; then
	# Not Debian: nothing this script can check or install. A check lets
	# the build go on, and CMake names what it lacks.
	echo "hugezero: no dpkg-query to check; needed for $set_name, as Debian names them: ${pkgs[*]}" >&2
	if [ "$check" -eq 1 ]; then exit 0; fi
	exit 1
fi
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
cmd="apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$check" -eq 1 ] || [ "$(id -u)" -ne 0 ]; then
	echo "hugezero: not installed, needed for $set_name: ${missing[*]}" >&2
	echo "install them as root:" >&2
	echo "  apt-get update && $cmd" >&2
	exit 1
fi
echo "hugezero: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
$cmd -qq

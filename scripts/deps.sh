#!/usr/bin/env bash
# Installs the Debian packages hugezero needs to build and test, if any are
# missing. As root it runs apt-get; otherwise it prints the command to run.
set -eu
pkgs=(build-essential cmake pkg-config libjemalloc-dev libunwind-dev libcriterion-dev
      gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user
      # real programs the preloaded library is tested under, and the
      # real-program suite's (hugezero suite --real; redis-tools has
      # redis-benchmark)
      python3 python3-numpy sqlite3 redis-server redis-tools postgresql-15
      openjdk-17-jdk-headless zstd xz-utils
      # the suite's MariaDB cases: mariadbd and mariadb-install-db
      # (mariadb-server), mariadb-admin (mariadb-client), the sysbench load
      mariadb-server mariadb-client sysbench
      # the other allocators the benchmarks compare against, GNU time for
      # the workload suite's peak RSS
      time
      # strace counts the system calls of a release (tests/programs/release.sh)
      strace
      libjemalloc2 libmimalloc2.0 libtcmalloc-minimal4
      # promtool checks the Prometheus report and rules, and with the node
      # exporter serves the fleet's end-to-end test; man renders the man
      # pages, dpkg-shlibdeps (dpkg-dev) gives the Debian packages their
      # Depends, lintian checks them
      prometheus prometheus-node-exporter man-db dpkg-dev lintian)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
cmd="apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
	echo "hugezero: missing packages; run as root:" >&2
	echo "  apt-get update && $cmd" >&2
	exit 1
fi
echo "hugezero: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
$cmd -qq

#!/usr/bin/env bash
# The Debian package, as root (CI): scripts/package.sh builds it; dpkg -i
# installs it; the installed command runs python3 under the installed
# library; the package's Depends came from dpkg-shlibdeps (libc6); dpkg -r
# removes it and leaves none of its files behind; dpkg --purge its record.
# Usage: package.sh SOURCE_DIR
set -u
src=$1
. "$(dirname "$0")/../util/common.sh"
if [ "$(id -u)" -ne 0 ]; then
	echo "skipped: dpkg -i needs root"
	exit 0
fi
if dpkg-query -W -f='${Status}' hugezero 2>/dev/null | grep -q 'install ok installed'; then
	echo "skipped: a hugezero package is installed here already"
	exit 0
fi
if deb=$("$src/scripts/package.sh" "$work/dist" 2>"$work/err" | tail -1) && [ -f "$deb" ]; then
	ok "scripts/package.sh built $(basename "$deb")"
else
	bad "scripts/package.sh: $(tail -5 "$work/err")"
	finish
	exit
fi
depends=$(dpkg-deb -f "$deb" Depends)
if grep -q 'libc6 (>=' <<<"$depends" && grep -q python3 <<<"$depends"; then
	ok "Depends: $depends"
else
	bad "Depends: '$depends'"
fi
if dpkg -i "$deb" >"$work/dpkg.log" 2>&1; then
	ok "dpkg -i"
else
	bad "dpkg -i: $(tail -5 "$work/dpkg.log")"
	finish
	exit
fi
files=$(dpkg -L hugezero)
so=/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)/libhugezero.so.0
(
	cd "$work" || exit 1
	env -u HUGEZERO_LIB -u LD_PRELOAD hugezero run --stats "$work/r.%p.json" -- python3 -c \
		'import os, ctypes; print(os.environ["LD_PRELOAD"]); ctypes.CDLL(None).calloc(1, 64 << 20)' \
		>"$work/run.out" 2>&1
) && out=$(head -1 "$work/run.out")
if [ "${out:-}" = "$so" ] && grep -q 'calloc.large.calls' "$work"/r.*.json 2>/dev/null; then
	ok "hugezero run -- python3 from /usr/bin, under $so"
else
	bad "installed run: $(cat "$work/run.out")"
fi
if man -w hugezero.7 >/dev/null 2>&1 && pkg-config --modversion hugezero >/dev/null; then
	ok "man hugezero(7) and pkg-config find the installed files"
else
	bad "man or pkg-config cannot find the installed files"
fi
# The fleet's Prometheus rules where a Prometheus configuration names
# them, valid, and what the installed command writes.
rules=/usr/share/hugezero/prometheus/hugezero.rules.yml
if [ -f "$rules" ] && promtool check rules "$rules" >/dev/null 2>&1 &&
	env -u HUGEZERO_LIB hugezero rules | cmp -s - "$rules"; then
	ok "$rules passes promtool check rules, as hugezero rules writes it"
else
	bad "$rules: missing, invalid or not what hugezero rules writes"
fi
if dpkg -r hugezero >"$work/dpkg.log" 2>&1; then
	ok "dpkg -r"
else
	bad "dpkg -r: $(tail -5 "$work/dpkg.log")"
fi
left=""
while read -r f; do
	[ -n "$f" ] && [ ! -d "$f" ] && [ -e "$f" ] && left="$left $f"
done <<<"$files"
state=$(dpkg-query -W -f='${Status}' hugezero 2>/dev/null || true)
if [ -z "$left" ] && ! grep -q 'ok installed' <<<"$state"; then
	ok "no file of the package left behind (dpkg: ${state:-unknown})"
else
	bad "left behind:$left; state '$state'"
fi
# The ldconfig postrm CPack writes keeps the package's record until purged.
dpkg --purge hugezero >/dev/null 2>&1
if dpkg-query -W hugezero >/dev/null 2>&1; then
	bad "dpkg --purge left a record"
else
	ok "dpkg --purge: no record left"
fi
rm -rf "$src/build-package"
finish

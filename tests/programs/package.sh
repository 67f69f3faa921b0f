#!/usr/bin/env bash
# The Debian packages, as root (CI): scripts/package.sh builds
# libhugezero0, libhugezero-dev and hugezero; lintian finds no error in
# them; the man pages are in hugezero; their Depends (dpkg-shlibdeps:
# libc6) tie them together; dpkg -i installs each (the library alone
# first, then the others); the installed command runs python3 under the
# installed library; dpkg -r removes each, the command and the
# development files first, and leaves none of their files behind; dpkg
# --purge their records.
# Usage: package.sh SOURCE_DIR
set -u
src=$1
. "$(dirname "$0")/../util/common.sh"
if [ "$(id -u)" -ne 0 ]; then
	echo "skipped: dpkg -i needs root"
	exit 0
fi
pkgs="libhugezero0 libhugezero-dev hugezero"
for p in $pkgs; do
	if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		echo "skipped: the package $p is installed here already"
		exit 0
	fi
done
if "$src/scripts/package.sh" "$work/dist" >"$work/out" 2>"$work/err" && [ "$(grep -c '\.deb$' "$work/out")" -eq 3 ]; then
	ok "scripts/package.sh built $(xargs -n1 basename <"$work/out" | tr '\n' ' ')"
else
	bad "scripts/package.sh: $(tail -5 "$work/err") $(cat "$work/out")"
	finish
	exit
fi
deb() { ls "$work"/dist/"$1"_*.deb; }
if ! command -v lintian >/dev/null; then
	bad "lintian is not installed (scripts/deps.sh installs it)"
elif errors=$(lintian "$work"/dist/*.deb 2>/dev/null | grep '^E:'); then
	bad "lintian: $errors"
else
	ok "lintian: no errors ($(lintian "$work"/dist/*.deb 2>/dev/null | grep -c '^W:') warnings)"
fi
# The man pages come with the command: hugezero(7), the options'
# reference, is read where the command that sets them is installed.
cli_files=$(dpkg-deb -c "$(deb hugezero)")
if grep -q 'man1/hugezero\.1\.gz$' <<<"$cli_files" && grep -q 'man7/hugezero\.7\.gz$' <<<"$cli_files" &&
	! dpkg-deb -c "$(deb libhugezero-dev)" | grep -q '/man/'; then
	ok "hugezero holds hugezero(1) and hugezero(7), libhugezero-dev no man page"
else
	bad "the man pages are not all in hugezero: $(grep /man/ <<<"$cli_files")"
fi
lib_dep=$(dpkg-deb -f "$(deb libhugezero0)" Depends)
dev_dep=$(dpkg-deb -f "$(deb libhugezero-dev)" Depends)
cli_dep=$(dpkg-deb -f "$(deb hugezero)" Depends)
if grep -q 'libc6 (>=' <<<"$lib_dep" && grep -q 'libhugezero0 (=' <<<"$dev_dep" &&
	grep -q 'libhugezero0 (=' <<<"$cli_dep" && grep -q python3 <<<"$cli_dep"; then
	ok "Depends: $lib_dep; $dev_dep; $cli_dep"
else
	bad "Depends: '$lib_dep'; '$dev_dep'; '$cli_dep'"
fi
if dpkg -i "$(deb libhugezero0)" >"$work/dpkg.log" 2>&1 && [ -e "$(ls /usr/lib/*/libhugezero.so.0 2>/dev/null | head -1)" ] &&
	dpkg -i "$(deb libhugezero-dev)" "$(deb hugezero)" >>"$work/dpkg.log" 2>&1; then
	ok "dpkg -i: the library alone, then the development files and the command"
else
	bad "dpkg -i: $(tail -5 "$work/dpkg.log")"
	finish
	exit
fi
files=$(for p in $pkgs; do dpkg -L "$p"; done)
so=/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)/libhugezero.so.0
(
	cd "$work" || exit 1
	env -u HUGEZERO_LIB -u LD_PRELOAD hugezero run --stats "$work/r.%p.json" -- python3 -c \
		'import os, ctypes; print(os.environ["LD_PRELOAD"]); ctypes.CDLL(None).calloc(1, 64 << 20)' \
		>"$work/run.out" 2>"$work/run.err"
) && out=$(head -1 "$work/run.out")
if [ "${out:-}" = "$so" ] && grep -q 'calloc.large.calls' "$work"/r.*.json 2>/dev/null; then
	ok "hugezero run -- python3 from /usr/bin, under $so"
else
	bad "installed run: $(cat "$work/run.out" "$work/run.err")"
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
if dpkg -r hugezero libhugezero-dev >"$work/dpkg.log" 2>&1 && dpkg -r libhugezero0 >>"$work/dpkg.log" 2>&1; then
	ok "dpkg -r: the command and the development files, then the library"
else
	bad "dpkg -r: $(tail -5 "$work/dpkg.log")"
fi
left=""
while read -r f; do
	[ -n "$f" ] && [ ! -d "$f" ] && [ -e "$f" ] && left="$left $f"
done <<<"$files"
state=$(for p in $pkgs; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null; done)
if [ -z "$left" ] && ! grep -q 'ok installed' <<<"$state"; then
	ok "no file of the packages left behind"
else
	bad "left behind:$left; state '$state'"
fi
# The ldconfig postrm CPack writes keeps the library's record until purged.
dpkg --purge $pkgs >/dev/null 2>&1
kept=$(for p in $pkgs; do dpkg-query -W "$p" >/dev/null 2>&1 && echo "$p"; done)
if [ -n "$kept" ]; then
	bad "dpkg --purge left a record: $kept"
else
	ok "dpkg --purge: no record left"
fi
rm -rf "$src/build-package"
finish

#!/usr/bin/env bash
# The build without the test world, by a user without root: a copy of the
# source tree (the files git tracks or would, as the work tree has them),
# owned by nobody, who runs scripts/build.sh and scripts/package.sh with a
# HOME of its own; the library comes out and runs, the three packages
# come out with their files root's in the archives, and HOME stays empty.
# scripts/deps.sh --build as nobody finds the build's packages and calls
# no apt-get. With one reported missing (a dpkg-query in front on PATH),
# deps.sh and build.sh as nobody name it and the command that installs it,
# and stop before building; as root, --check installs nothing and without
# it only the missing package is installed (an apt-get in front on PATH
# records its calls). Skipped (77) where it cannot change user (not root)
# or copy the tree (not a git work tree).
# Usage: nonroot_build.sh SOURCE_DIR
set -u
src=$1
. "$(dirname "$0")/../util/common.sh"
if [ "$(id -u)" -ne 0 ]; then
	echo "skipped: running as another user needs root"
	exit 77
fi
if ! git -c safe.directory="$src" -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	echo "skipped: $src is not a git work tree"
	exit 77
fi
user=nobody
group=$(id -gn "$user")
tree=$work/tree home=$work/home
chmod 755 "$work" # $work is root's; nobody works in directories of its own inside
mkdir -p "$tree" "$home" "$work/bin"
(cd "$src" && git -c safe.directory="$src" ls-files -z --cached --others --exclude-standard |
	while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
	tar --null -T - -cf -) | tar -C "$tree" -xf -
chown -R "$user:$group" "$tree" "$home"

# apt-get, recording its calls and installing nothing.
: >"$work/apt.log"
chmod 666 "$work/apt.log"
cat >"$work/bin/apt-get" <<EOF
#!/bin/sh
echo "\$*" >>"$work/apt.log"
EOF
chmod 755 "$work/bin/apt-get"
recorded=$work/bin:$PATH
# missing_path NAME PACKAGE...: a PATH whose dpkg-query says the packages
# are not installed, and whose apt-get records.
missing_path() {
	local dir=$work/$1
	shift
	mkdir -p "$dir"
	cat >"$dir/dpkg-query" <<EOF
#!/bin/sh
for a; do case " $* " in *" \$a "*) exit 1 ;; esac; done
exec $(command -v dpkg-query) "\$@"
EOF
	chmod 755 "$dir/dpkg-query"
	echo "$dir:$recorded"
}
cmake_missing=$(missing_path cmake cmake)
# What only the tests need: the build must go on without them.
tests_missing=$(missing_path tests libcriterion-dev lintian man-db pkg-config)

# as_user PATH COMMAND...: COMMAND run in the copy as nobody, its
# environment only HOME, PATH and LANG.
as_user() {
	local path=$1
	shift
	(cd "$tree" && setpriv --reuid="$user" --regid="$group" --clear-groups \
		env -i HOME="$home" PATH="$path" LANG=C.UTF-8 "$@")
}

if as_user "$recorded" scripts/deps.sh --build 2>"$work/err" && [ ! -s "$work/apt.log" ]; then
	ok "deps.sh --build as $user: every build package installed, no apt-get"
else
	bad "deps.sh --build as $user: $(cat "$work/err") $(cat "$work/apt.log")"
fi
for s in "deps.sh --build" build.sh; do
	# shellcheck disable=SC2086 # the script and its argument
	if ! as_user "$cmake_missing" scripts/$s >/dev/null 2>"$work/err" &&
		grep -q 'not installed, needed for the build: cmake$' "$work/err" &&
		grep -q 'apt-get install -y --no-install-recommends cmake$' "$work/err" &&
		[ ! -s "$work/apt.log" ] && [ ! -e "$tree/build" ]; then
		ok "$s as $user, cmake reported missing: named with its apt-get command, stopped"
	else
		bad "$s as $user, cmake reported missing: $(cat "$work/err") $(cat "$work/apt.log")"
	fi
done
if ! (cd "$tree" && PATH=$cmake_missing scripts/deps.sh --build --check 2>"$work/err") &&
	grep -q cmake "$work/err" && [ ! -s "$work/apt.log" ]; then
	ok "deps.sh --build --check as root, cmake reported missing: named, no apt-get"
else
	bad "deps.sh --build --check as root: $(cat "$work/err") $(cat "$work/apt.log")"
fi
if (cd "$tree" && PATH=$cmake_missing scripts/deps.sh --build 2>"$work/err") &&
	[ "$(cat "$work/apt.log")" = "update -qq
install -y --no-install-recommends cmake -qq" ]; then
	ok "deps.sh --build as root, cmake reported missing: apt-get installs cmake only"
else
	bad "deps.sh --build as root: $(cat "$work/err") $(cat "$work/apt.log")"
fi
: >"$work/apt.log"

if as_user "$tests_missing" scripts/build.sh >"$work/out" 2>&1 &&
	[ -e "$tree/build/libhugezero.so.0" ] && [ -e "$tree/build/libhugezero.a" ] &&
	LD_PRELOAD=$tree/build/libhugezero.so.0 HUGEZERO_VERBOSE=1 /bin/true 2>&1 | grep -q '^hugezero: hugezero '; then
	ok "build.sh as $user: libhugezero.so.0 (loads) and libhugezero.a"
else
	bad "build.sh as $user: $(tail -5 "$work/out")"
fi
if as_user "$tests_missing" scripts/package.sh >"$work/out" 2>"$work/err" &&
	[ "$(grep -c '\.deb$' "$work/out")" -eq 3 ]; then
	ok "package.sh as $user: $(xargs -n1 basename <"$work/out" | tr '\n' ' ')"
	owners=$(for d in "$tree"/dist/*.deb; do dpkg-deb -c "$d"; done | awk '{ print $2 }' | sort -u)
	[ "$owners" = root/root ] && ok "the packages' files are root's" || bad "the packages' owners: $owners"
else
	bad "package.sh as $user: $(tail -5 "$work/err") $(cat "$work/out")"
fi
if [ -z "$(ls -A "$home")" ] && [ ! -s "$work/apt.log" ]; then
	ok "nothing written to HOME, no apt-get"
else
	bad "written to HOME: $(ls -A "$home"); apt-get: $(cat "$work/apt.log")"
fi
finish

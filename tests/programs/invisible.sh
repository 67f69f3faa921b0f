#!/usr/bin/env bash
# The library's threads and shortcuts are invisible to a correct program:
# each case (tests/programs/invisible/NAME.c, built as BINDIR/invisible_NAME)
# is a program run twice, each run a process of its own under timeout:
# without the library (glibc: it must pass there, or the case itself is
# wrong and the test fails), then with LD_PRELOAD=LIB, INVISIBLE_HZ=1 and
# the HUGEZERO_* environment the case's source names on a line
#   /* invisible-env: K=V K2=V2 */
# A case may name what it needs on a line
#   /* invisible-needs: root idle */
# root: run as root, else skipped. idle: both runs in a private mount
# namespace whose /proc/loadavg (bind-mounted over) shows one runnable
# thread, so that the helpers, offered work only while fewer threads run
# than there are CPUs, take part on a busy machine too (root, 2 CPUs or
# more, else skipped); the case then fails when no helper took part. A
# program exits 0 (passed), 77 (the environment does not allow it:
# skipped, when glibc's run says so), 75 (no helper took part: the
# library's run is made again, up to 3 in all, then failed) or else
# (failed). A skip never counts
# as a pass; with every case skipped the script exits 77.
# Usage: invisible.sh LIBHUGEZERO BINDIR
# (INVISIBLE_CASES="NAME..." runs those cases only; INVISIBLE_TIMEOUT a
# run's bound in seconds.)
set -u
lib=$(realpath "$1") bin=$(realpath "$2")
src=$(dirname "$(realpath "$0")")/invisible
. "$(dirname "$0")/../util/common.sh"
ulimit -c 0
T=${INVISIBLE_TIMEOUT:-45} # one run's bound, seconds
start_time=$SECONDS
skipped=0

root=0
[ "$(id -u)" = 0 ] && root=1
cpus=$(nproc)
# The idle namespace: a file that shows one runnable thread over
# /proc/loadavg, in a mount namespace of the run's own.
echo "0.00 0.00 0.00 1/100 1" >"$work/loadavg"
IDLE='mount --bind "$1" /proc/loadavg || exit 99; shift; exec "$@"'
idle_why=""
if [ $root = 0 ]; then
	idle_why="needs root (a mount namespace)"
elif [ "$cpus" -lt 2 ]; then
	idle_why="needs 2 CPUs or more ($cpus here)"
elif [ "$(unshare -m --propagation private sh -c "$IDLE" sh "$work/loadavg" cat /proc/loadavg 2>&1)" != \
	"$(cat "$work/loadavg")" ]; then
	idle_why="no private mount namespace with /proc/loadavg bind-mounted over could be made"
fi

# A run's status in words.
status() { # RC
	local r=$1
	case $r in
	0) echo "passed" ;;
	77) echo "skipped" ;;
	99) echo "the idle namespace could not be set up" ;;
	75) echo "judged nothing (no helper took part) in 3 runs" ;;
	124) echo "hung (no exit in $T s)" ;;
	137) echo "killed by SIGKILL (or hung past $T s)" ;;
	*)
		if [ "$r" -gt 128 ]; then
			echo "killed by SIG$(kill -l $((r - 128)))"
		else
			echo "exit $r"
		fi
		;;
	esac
}
# The line of a source that starts with /* invisible-KEY: its words.
field() { # FILE KEY
	sed -n "s|^/\* invisible-$2:\(.*\)\*/.*|\1|p" "$1" | head -1
}
# Why a run failed: its first FAIL line, else its last line.
why_of() { # FILE
	grep -m1 '^FAIL' "$1" || tail -n 1 "$1"
}

shopt -s nullglob
cases=("$src"/*.c)
[ ${#cases[@]} -gt 0 ] || { bad "no case in $src"; finish; exit; }
for c in "${cases[@]}"; do
	name=$(basename "$c" .c)
	[ -n "${INVISIBLE_CASES:-}" ] && [[ " $INVISIBLE_CASES " != *" $name "* ]] && continue
	prog=$bin/invisible_$name
	read -r -a envs <<<"$(field "$c" env)"
	read -r -a needs <<<"$(field "$c" needs)"
	why="" idle=0 unknown=""
	for n in "${needs[@]}"; do
		case $n in
		root) [ $root = 1 ] || why="needs root" ;;
		idle) idle=1 ;;
		*) unknown+=" $n" ;;
		esac
	done
	if [ -n "$unknown" ]; then # a misspelt need must not skip for ever
		bad "$name: needs$unknown, which this script does not know (root, idle)"
		continue
	fi
	[ -z "$why" ] && [ $idle = 1 ] && why=$idle_why
	if [ -n "$why" ]; then
		echo "skip - $name: $why"
		skipped=$((skipped + 1))
		continue
	fi
	if [ ! -x "$prog" ]; then
		bad "$name: $prog is not built"
		continue
	fi
	wrap=()
	[ $idle = 1 ] && wrap=(unshare -m --propagation private sh -c "$IDLE" sh "$work/loadavg")
	t0=$SECONDS
	timeout -k 5 "$T" "${wrap[@]}" env -u LD_PRELOAD -u INVISIBLE_HZ "$prog" >"$work/$name.glibc" 2>&1
	g=$?
	if [ $g = 77 ]; then
		echo "skip - $name: $(grep -m1 '^skip' "$work/$name.glibc" || why_of "$work/$name.glibc")"
		skipped=$((skipped + 1))
		continue
	fi
	if [ $g != 0 ]; then
		bad "$name: the case fails without the library ($(status $g)): $(why_of "$work/$name.glibc")"
		continue
	fi
	for try in 1 2 3; do
		timeout -k 5 "$T" "${wrap[@]}" env LD_PRELOAD="$lib" INVISIBLE_HZ=1 "${envs[@]}" "$prog" \
			>"$work/$name.hz" 2>&1
		h=$?
		[ $h = 75 ] || break
		echo "# $name: judged nothing ($(why_of "$work/$name.hz")), run $try of 3"
	done
	if [ $h = 0 ]; then
		ok "$name ($((SECONDS - t0)) s)"
	else
		bad "$name: glibc passed, hugezero $(status $h): $(why_of "$work/$name.hz")"
	fi
	sed 's/^/    | /' "$work/$name.hz" | tail -n 20
done
echo "($((SECONDS - start_time)) s; $skipped skipped)"
finish
r=$?
[ $r = 0 ] && [ $pass = 0 ] && exit 77
exit $r

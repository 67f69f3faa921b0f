#!/usr/bin/env bash
# Whether preloading reaches a program, as `hugezero run` and `hugezero
# info --pid` say it: a plain program's malloc and memset are hugezero's;
# with jemalloc linked in, malloc is the program's own; a static program
# runs no dynamic linker; a program built with AddressSanitizer keeps its
# runtime first in LD_PRELOAD and runs (preloaded first, hugezero makes it
# abort, as ASan says). Each program's output must be what it prints
# without the library.
# Usage: resolve.sh HUGEZERO_COMMAND LIB PLAIN JEMALLOC STATIC ASAN
set -u
cli=$1 lib=$2 plain=$3 jem=$4 static=$5 asan=$6
. "$(dirname "$0")/../util/common.sh"
export HUGEZERO_LIB=$lib

# run NAME PROGRAM PATTERN...: hugezero run's output is the program's own
# ("7"), and what it says on stderr matches every PATTERN.
run() {
	local name=$1 prog=$2 out
	shift 2
	out=$("$cli" run --stats "$work/r.%p.json" -- "$prog" 2>"$work/err")
	if [ "$out" != 7 ]; then
		bad "$name: output '$out': $(cat "$work/err")"
		return
	fi
	for p in "$@"; do
		if ! grep -Eq "$p" "$work/err"; then
			bad "$name: no '$p' in: $(cat "$work/err")"
			return
		fi
	done
	ok "$name: $(head -1 "$work/err")"
}
run "plain program" "$plain" "reaches own_plain's malloc and memset" "malloc: hugezero" "memset: hugezero"
run "jemalloc linked in" "$jem" "does not reach" "malloc: the program's own \(jemalloc linked in\)"
run "static program" "$static" "statically linked: no dynamic linker runs, so LD_PRELOAD does nothing"
# Looking at a program runs none of it: each ran once under hugezero run
# (ld.so's trace of a static one would run it instead).
for prog in "$static" "$plain" "$jem"; do
	rm -f "$work/runs"
	OWN_ALLOC_RUNS=$work/runs "$cli" run --stats "$work/r.%p.json" -- "$prog" >/dev/null 2>&1
	n=$(wc -l <"$work/runs" 2>/dev/null)
	[ "$n" = 1 ] && ok "$(basename "$prog") ran once" || bad "$(basename "$prog") ran ${n:-0} times"
done
run "AddressSanitizer" "$asan" "malloc: libasan.so[.0-9]*, the sanitizer's allocator" \
	"memset: libasan.so[.0-9]*, the sanitizer's interceptor"
# The order it ran with: the sanitizer's runtime first.
# (the command itself then runs under ASan: its leaks are not this test's)
real=$(realpath "$lib")
order=$("$cli" run --quiet -- sh -c 'echo "$LD_PRELOAD"' 2>&1)
o=$(ASAN_OPTIONS=detect_leaks=0 LD_PRELOAD=$(gcc -print-file-name=libasan.so) "$cli" run --quiet -- \
	sh -c 'echo "$LD_PRELOAD"' 2>&1 | tail -1)
case "$o" in
*/libasan.so*:"$real") ok "an ASan runtime preloaded stays before the library: $o" ;;
*) bad "ASan's runtime not first: $o" ;;
esac
[ "$order" = "$real" ] && ok "no sanitizer: the library alone" || bad "LD_PRELOAD '$order'"
# The control: the library first makes ASan abort, so the order above is
# what lets the program run.
if LD_PRELOAD=$lib "$asan" >/dev/null 2>"$work/e"; then
	bad "ASan program ran with the library first: the control case does not hold"
else
	grep -q "ASan runtime does not come first" "$work/e" && ok "control: the library first, ASan aborts" ||
		bad "control: $(cat "$work/e")"
fi

# info --pid: a process started by hugezero run, then one without it.
"$cli" run --quiet --stats "$work/i.%p.json" -- "$plain" 30 >/dev/null &
p1=$!
"$plain" 30 >/dev/null &
p2=$!
sleep 1
out1=$("$cli" info --pid $p1 2>&1)
out2=$("$cli" info --pid $p2 2>&1)
kill $p1 $p2 2>/dev/null
wait $p1 $p2 2>/dev/null
grep -q "hugezero is loaded" <<<"$out1" && grep -q "malloc: hugezero" <<<"$out1" &&
	ok "info --pid: loaded, malloc is hugezero's" || bad "info --pid (loaded): $out1"
grep -q "hugezero is not loaded" <<<"$out2" && ok "info --pid: not loaded" || bad "info --pid (not loaded): $out2"
"$cli" info --pid 999999999 2>/dev/null && bad "info --pid of no process succeeded" ||
	ok "info --pid of no process: an error"
finish

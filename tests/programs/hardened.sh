#!/usr/bin/env bash
# HUGEZERO_HARDENED=1 (tests/programs/hardened.c), each check also run in
# the default mode, where it must fail (so it can): every block zero once
# freed, the clearing moved from calloc to free, a write past a large
# block faulting on its guard page, realloc keeping the bytes. Then the
# heap-misuse probes (tests/programs/misuse.c) under glibc, the peers
# (where installed) and hugezero with and without hardening, side by
# side: hardened hugezero must catch at least as many as glibc, a free of
# a local array must end in glibc's message, and no run may end with a
# calloc byte not zero.
# Usage: hardened.sh LIB HARDENED_BINARY MISUSE_BINARY
set -u
lib=$1 prog=$2 misuse=$3
. "$(dirname "$0")/../util/common.sh"
ulimit -c 0

expect() { # NAME WANT(pass|fail|SEGV) HARDENED COMMAND...
	local name=$1 want=$2 h=$3 out rc got
	shift 3
	out=$(HUGEZERO_HARDENED=$h LD_PRELOAD=$lib timeout 60 "$@" 2>&1)
	rc=$?
	case $rc in 0) got=pass ;; 139) got=SEGV ;; 1) got=fail ;; *) got="exit $rc" ;; esac
	if [ "$got" = "$want" ]; then ok "$name"; else bad "$name: $got, not $want: $out"; fi
}
expect "hardened: every block's bytes zero after free (24 B to 40 MiB)" pass 1 "$prog" zero
expect "default mode: the same check sees the bytes left" fail 0 "$prog" zero
expect "hardened: calloc of a freed 8 MiB block clears nothing, free did" pass 1 "$prog" moved
expect "default mode: the same check sees no clearing at free" fail 0 "$prog" moved
expect "hardened: a freed sparse 40 MiB block: the steps written cleared, the rest left" pass 1 \
	env HUGEZERO_POPULATE=0 "$prog" sparse
expect "default mode: the same check sees nothing cleared" fail 0 env HUGEZERO_POPULATE=0 "$prog" sparse
for m in 1 3 4 48; do
	expect "hardened: a write past a $m MiB block faults (guard page)" SEGV 1 "$prog" guard $m
done
expect "default mode: the same write passes" pass 0 "$prog" guard 4
expect "hardened: realloc and usable sizes of small blocks" pass 1 "$prog" resize

# ---- the probes ----
L=/usr/lib/x86_64-linux-gnu
names=(glibc jemalloc mimalloc tcmalloc hugezero hardened)
declare -A pre=([glibc]="" [jemalloc]=$L/libjemalloc.so.2 [mimalloc]=$L/libmimalloc.so.2
	[tcmalloc]=$L/libtcmalloc_minimal.so.4 [hugezero]=$lib [hardened]=$lib)
declare -A caught wrong
have=()
for a in "${names[@]}"; do
	[ -z "${pre[$a]}" ] || [ -e "${pre[$a]}" ] || continue
	have+=("$a")
	caught[$a]=0 wrong[$a]=0
done
printf '%-24s' probe
for a in "${have[@]}"; do printf ' %-9s' "$a"; done
echo
for p in double_free interior_free invalid_free overflow write_after_free realloc_freed; do
	for s in small large; do
		printf '%-24s' "$p $s"
		for a in "${have[@]}"; do
			h=0
			[ "$a" = hardened ] && h=1
			HUGEZERO_HARDENED=$h LD_PRELOAD=${pre[$a]} timeout 30 "$misuse" "$p" "$s" >/dev/null 2>"$work/err"
			rc=$?
			case $rc in
			0) r=missed ;;
			3) r=WRONG wrong[$a]=$((wrong[$a] + 1)) ;;
			124) r=hung ;;
			*) if [ $rc -gt 128 ]; then r=$(kill -l $((rc - 128))) caught[$a]=$((caught[$a] + 1)); else r="exit$rc"; fi ;;
			esac
			printf ' %-9s' "$r"
		done
		echo
	done
done 2>/dev/null
printf '%-24s' caught
for a in "${have[@]}"; do printf ' %-9s' "${caught[$a]}/12"; done
echo
if [ "${caught[hardened]}" -ge "${caught[glibc]}" ]; then
	ok "hardened hugezero catches ${caught[hardened]} probes of 12, glibc ${caught[glibc]}"
else
	bad "hardened hugezero catches ${caught[hardened]} probes of 12, fewer than glibc's ${caught[glibc]}"
fi
# A free of a local array (the main thread's stack) ends as glibc ends
# it, with its message, not in a fault inside the engine beneath.
for s in small large; do
	out=$(HUGEZERO_HARDENED=1 LD_PRELOAD=$lib timeout 30 "$misuse" invalid_free $s 2>&1 >/dev/null)
	rc=$?
	if [ $rc = 134 ] && grep -q 'free(): invalid pointer' <<<"$out"; then
		ok "hardened: free of a local array ($s probe) aborts with glibc's message"
	else
		bad "hardened: free of a local array ($s probe): exit $rc, '$out', not SIGABRT with 'free(): invalid pointer'"
	fi
done 2>/dev/null
for a in hugezero hardened; do
	if [ "${wrong[$a]}" = 0 ]; then ok "$a: every calloc after a probe zero"; else bad "$a: ${wrong[$a]} probes left a calloc byte not zero"; fi
done
finish

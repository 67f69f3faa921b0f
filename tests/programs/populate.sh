#!/usr/bin/env bash
# Fresh blocks populated where the program touches them
# (tests/programs/populate.c): learnt from freed blocks and from blocks
# kept, never for sparse ones, as HUGEZERO_POPULATE says, over helpers
# from 64 MiB, and never after a free. Small fresh pages (HUGEZERO_FRESH=
# small) and huge ones. The same pattern under glibc first: the case, not
# the library, is what runs.
# Usage: populate.sh LIB POPULATE_BINARY
set -u
lib=$1 prog=$2
. "$(dirname "$0")/../util/common.sh"

if out=$("$prog" glibc 2>&1); then ok "glibc: the pattern runs, every calloc zero"; else bad "glibc: $out"; fi
# No reserve: the zeroer's population of free pages would be read as ours.
for fresh in small huge; do
	preloaded "$fresh pages: learnt from freed dense blocks, populated before the touch" \
		env HUGEZERO_FRESH=$fresh HUGEZERO_RESERVE=0 "$prog" learn
	preloaded "$fresh pages: learnt from blocks never freed (read 10 ms on)" \
		env HUGEZERO_FRESH=$fresh HUGEZERO_RESERVE=0 "$prog" kept
done
for fresh in small auto; do
	preloaded "$fresh pages: sparse blocks never populated" env HUGEZERO_FRESH=$fresh HUGEZERO_RESERVE=0 "$prog" sparse
done
preloaded "HUGEZERO_POPULATE=0: none populated" env HUGEZERO_POPULATE=0 HUGEZERO_RESERVE=0 "$prog" off
preloaded "HUGEZERO_POPULATE=1: the first block populated" env HUGEZERO_POPULATE=1 HUGEZERO_RESERVE=0 "$prog" on
preloaded "256 MiB over a helper (HUGEZERO_THREADS=2)" env HUGEZERO_POPULATE=1 HUGEZERO_THREADS=2 "$prog" helpers
preloaded "no page populated after the free" \
	env HUGEZERO_POPULATE=1 HUGEZERO_THREADS=2 HUGEZERO_BACKGROUND=0 "$prog" freed
finish

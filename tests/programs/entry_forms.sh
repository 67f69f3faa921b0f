#!/usr/bin/env bash
# One entry for large blocks: every allocating form of the exported ABI
# (tests/programs/entry_forms.cc, one form a run) appears in the report's
# size classes, has its call site sampled under its own name, is served
# by the hugepage arenas (aligned to 2 MiB where it asks), and, when it
# zeroes, is taken into the A/B arms.
# Usage: entry_forms.sh LIB ENTRY_FORMS_BINARY
set -u
lib=$1 bin=$2
. "$(dirname "$0")/../util/common.sh"

for form in $("$bin"); do
	rm -f "$work"/r.*
	if ! out=$(HUGEZERO_CALLSITES=1 HUGEZERO_AB=0.5 HUGEZERO_STATS="$work/r" HUGEZERO_STATS_FORMAT=json \
		LD_PRELOAD=$lib "$bin" "$form" 2>&1); then
		bad "$form: $out"
		continue
	fi
	check=$(/usr/bin/python3 - "$form" "$work"/r.* <<'PY'
import json, sys
form, path = sys.argv[1:]
rep = json.load(open(path))
N, M = 8, 1 << 20
zeroing = form in ("calloc", "mallocx_zero", "mallocx_zero_aligned", "rallocx_zero")
op = "calloc" if zeroing else "realloc" if form in ("realloc", "rallocx_aligned") else "malloc"
# rallocx_aligned's site also takes its two 1.5 MiB mallocx
site_calls = 3 * N if form == "rallocx_aligned" else N
bad = []
calls = sum(c["calls"] for c in rep["classes"][op] if c["min"] == 2 * M)
if calls != N:
    bad.append("%s class 2 MiB: %d calls, want %d" % (op, calls, N))
fn = "form_" + form
sites = [s for s in rep.get("callsites", []) if s["frames"] and s["frames"][0]["function"] == fn]
if sum(s["calls"] for s in sites) != site_calls:
    bad.append("call sites of %s: %r" % (fn, [(s["frames"][0]["function"], s["calls"]) for s in rep.get("callsites", [])]))
arms = sum(e["A"]["calls"] + e["B"]["calls"] for e in rep.get("ab", []) if e["op"] == "calloc")
if arms != (N if zeroing else 0):
    bad.append("calloc arms: %d calls, want %d" % (arms, N if zeroing else 0))
large = rep["counters"].get("malloc.large.calls", 0)
if large < N:
    bad.append("arena blocks: %d, want at least %d" % (large, N))
print("; ".join(bad) if bad else "ok")
PY
)
	if [ "$check" = ok ]; then ok "$form: size class, call site, arenas$(case $form in *zero*|calloc) echo ", arms" ;; esac)"
	else bad "$form: $check"; fi
done
finish

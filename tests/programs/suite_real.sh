#!/usr/bin/env bash
# The real-program suite's smoke test (~75 s): `hugezero suite --real
# --reps 1` on four quick cases (a program, a benchmark of bench/ with its
# reference clear, a redis server and pgbench's PostgreSQL, both through
# hugezero compare's server form) against the built library exits 0, and
# its CSV has each case's row with a figure, minor faults and a peak RSS
# for every allocator, none failed; the chart is valid SVG. Then a case
# whose output check fails (a `sort` first on PATH that copies its input
# unsorted) is reported: every run failed in the raw CSV, the table's
# failed runs, exit status 1.
# Usage: suite_real.sh HUGEZERO_COMMAND LIB (bench/ built beside LIB)
set -u
cli=$1 lib=$2
. "$(dirname "$0")/../util/common.sh"

cases=("sort -n 2M" "calloc+touch 32M" "redis SET 500KB" "pgbench")
if "$cli" suite --real --reps 1 --lib "$lib" --out "$work/ok" --cases "${cases[@]}" >"$work/ok.log" 2>&1; then
	ok "suite --real on ${cases[*]}: exit 0"
else
	bad "suite --real on ${cases[*]}: $(tail -5 "$work/ok.log")"
fi
check=$(/usr/bin/python3 - "$work/ok" "${cases[@]}" <<'PY'
import csv, sys, xml.dom.minidom
out, cases = sys.argv[1], sys.argv[2:]
rows = {r["case"]: r for r in csv.DictReader(open(out + "/real.csv"))}
bad = []
for case in cases:
    r = rows.get(case)
    if not r:
        bad.append("no row for %s" % case)
        continue
    keys = ["hz_over_best"] + [a + k for a in ("glibc", "jemalloc", "mimalloc", "tcmalloc", "hugezero")
                               for k in ("", "_faults", "_rss_kib") + (("_per_ref",) if case.startswith("calloc") else ())]
    for k in keys:
        try:
            if not float(r[k]) > 0:
                raise ValueError
        except ValueError:
            bad.append("%s: %s is %r" % (case, k, r[k]))
    bad += ["%s: %s %s" % (case, k, v) for k, v in r.items() if k.endswith("_failed") and v != "0"]
errors = [r for r in csv.DictReader(open(out + "/real.raw.csv")) if r["error"]]
if errors or len(rows) != len(cases):
    bad.append("%d rows, errors: %s" % (len(rows), [r["error"] for r in errors]))
xml.dom.minidom.parse(out + "/real.svg")
print("; ".join(bad) if bad else "ok")
PY
)
if [ "$check" = ok ]; then ok "real.csv: a figure, faults and peak RSS for every allocator; chart valid"; else bad "real.csv: $check"; fi

# A wrong answer is a failure, not a figure.
mkdir "$work/bin"
printf '#!/bin/sh\n# sort -n -o OUT IN, not sorting\ncp "$4" "$3"\n' >"$work/bin/sort"
chmod +x "$work/bin/sort"
PATH=$work/bin:$PATH "$cli" suite --real --reps 1 --lib "$lib" --out "$work/broken" --cases "sort -n" >"$work/broken.log" 2>&1
rc=$?
n=$(grep -c 'out of order' "$work/broken/real.raw.csv" 2>/dev/null)
if [ $rc -eq 1 ] && [ "$n" = 5 ] && grep -q '^failed runs' "$work/broken.log"; then
	ok "an unsorted output: 5 failed runs recorded and reported, exit 1"
else
	bad "an unsorted output: exit $rc, $n failed runs: $(tail -5 "$work/broken.log")"
fi

finish

#!/usr/bin/env bash
# The hugezero command: run prepends the library to LD_PRELOAD and passes
# the options; report merges the reports of a forking program (parent and
# child) into exact sums and writes a chart, and keeps the modes' process
# figures apart; info describes the machine.
# Usage: cli.sh HUGEZERO_COMMAND LIB STATS_KNOWN_BINARY OTHER_LIB (any library to preload)
set -u
cli=$1 lib=$2 known=$3 other=$4
. "$(dirname "$0")/../util/common.sh"
export HUGEZERO_LIB=$lib

# run: the library goes first, an existing LD_PRELOAD stays after it.
out=$(LD_PRELOAD=$other "$cli" run --stats "$work/x" --format text -- sh -c 'echo "$LD_PRELOAD|$HUGEZERO_STATS|$HUGEZERO_STATS_FORMAT"')
if [ "$out" = "$lib:$other|$work/x|text" ]; then ok "run: LD_PRELOAD $out"; else bad "run: '$out'"; fi
out=$("$cli" run --ab 0.25 --callsites 7 -- sh -c 'echo "$HUGEZERO_AB $HUGEZERO_CALLSITES"')
if [ "$out" = "0.25 7" ]; then ok "run: --ab and --callsites"; else bad "run: '$out'"; fi
"$cli" run --ab 2 -- true 2>/dev/null && bad "run: --ab 2 accepted" || ok "run: --ab 2 refused"
# --process-ab: the draw's share; with it 1, the process runs off and says so.
out=$("$cli" run --quiet --process-ab 0.5 -- sh -c 'echo "$HUGEZERO_PROCESS_AB"')
[ "$out" = 0.5 ] && ok "run: --process-ab passed on" || bad "run --process-ab: '$out'"
"$cli" run --quiet --process-ab 1 --stats "$work/off.%p.txt" --format text -- "$known" >/dev/null 2>&1
# (the workload forks: the child keeps its parent's mode, its own report)
files=$(ls "$work"/off.*.txt 2>/dev/null | wc -l)
offs=$(grep -lx "mode off" "$work"/off.*.txt 2>/dev/null | wc -l)
[ "$files" = 2 ] && [ "$offs" = 2 ] && ok "run --process-ab 1: both processes' reports (parent, forked child) say off" ||
	bad "run --process-ab 1: $offs of $files reports off: $(head -1 "$work"/off.*.txt 2>/dev/null)"
"$cli" run --process-ab -0.1 -- true 2>/dev/null && bad "run: --process-ab -0.1 accepted" ||
	ok "run: --process-ab -0.1 refused"

# report: parent and forked child merged (7 + 2 blocks of 3 MiB).
"$cli" run --ab 0.5 --stats "$work/r.%p.json" -- "$known" >/dev/null
if rep=$("$cli" report --svg "$work/ab.svg" "$work"/r.*.json) &&
	grep -q '^2 process report(s)' <<<"$rep" &&
	grep -Eq "^malloc +2 MiB +9 +28311552$" <<<"$rep" &&
	grep -q 'verdict' <<<"$rep" &&
	[ "$(awk -F'|' 'NF > 2 && $1 ~ /^memset +64 KiB/ { split($2, a, " "); split($3, b, " "); print a[1] + b[1] }' <<<"$rep")" = 9 ] &&
	/usr/bin/python3 -c 'import sys, xml.dom.minidom as m; m.parse(sys.argv[1])' "$work/ab.svg"; then
	ok "report: 2 processes merged, malloc from 2 MiB: 9 calls, the arms' 9 memsets counted once; chart is valid SVG"
else
	bad "report: $rep"
fi
"$cli" report "$work/nothing.json" 2>/dev/null && bad "report of nothing succeeded" || ok "report: no readable report is an error"

# The modes (HUGEZERO_PROCESS_AB): reports of processes drawn on (seeds 1
# and 2) and off (3 and 4) merged keep each process's own figures by its
# mode; the modes' table (hzcli/modes.py, for `hugezero report`) has both
# modes' two processes, their figures' means, and a comparison of each;
# reports of one mode have no table.
for seed in 1 2 3 4; do
	HUGEZERO_PROCESS_AB=0.5 HUGEZERO_AB_SEED=$seed "$cli" run --stats "$work/m$seed.%p.json" -- "$known" usable >/dev/null
done
check=$(/usr/bin/python3 - "$(dirname "$cli")" "$work"/m[1-4].*.json <<'PY'
import contextlib, io, json, sys
sys.path.insert(0, sys.argv[1])
from hzcli import merge, modes, stats
files = sys.argv[2:]
reps = [json.load(open(f)) for f in files]
m = merge.merge(files)
bad = []
if sorted(r["mode"] for r in reps) != ["off", "off", "on", "on"]:
    bad.append("modes %s" % [r["mode"] for r in reps])
rows = {r["figure"]: r for r in modes.report_rows(m["modes"])}
for counter, name, unit in modes.REPORT_FIGURES:
    r = rows[name]
    for mode in modes.MODES:
        xs = [p["counters"][counter] * unit for p in reps if p["mode"] == mode]
        if r[mode]["n"] != 2 or abs(r[mode]["mean"] - sum(xs) / 2) > 1e-9 * abs(sum(xs)):
            bad.append("%s %s: %s, the reports' %s" % (name, mode, r[mode], xs))
    on, off = ([p["counters"][counter] * unit for p in reps if p["mode"] == k] for k in ("on", "off"))
    if r["cmp"] != stats.compare_means(on, off) or (r["cmp"] is None and min(on + off) > 0):
        bad.append("%s: %s" % (name, r["cmp"]))
out = io.StringIO()
with contextlib.redirect_stdout(out):
    modes.print_modes(m)
    modes.print_modes(merge.merge([f for f, r in zip(files, reps) if r["mode"] == "on"]))
lines = [l for l in out.getvalue().splitlines() if l.split("|")[0].strip() in rows]
if out.getvalue().count("processes by mode") != 1 or len(lines) != 4 or \
        any(l.split("|")[1].split()[0] != "2" or l.split("|")[2].split()[0] != "2" for l in lines):
    bad.append("the table: %s" % out.getvalue())
print("; ".join(bad) if bad else "ok %s" % "; ".join(" ".join(l.split()) for l in lines[:1]))
PY
)
case $check in ok*) ok "report: the modes' figures by process, compared: ${check#ok }" ;; *) bad "the modes: $check" ;; esac

# The command's statistics are the library's own: on one process's report,
# for every cell of the arms, the B/A ratio, its interval and the verdict
# the command computes from the raw sums, and the percentiles it computes
# from the histograms, equal what the library wrote; and every counter the
# command's summary lists is one the library reports.
"$cli" run --ab 0.3 --stats "$work/s.%p.json" -- "$known" ab
check=$(/usr/bin/python3 - "$(dirname "$cli")" "$work"/s.*.json <<'PY'
import json, sys
sys.path.insert(0, sys.argv[1])
from hzcli import commands, stats
rep = json.load(open(sys.argv[2]))
bad, cells = [], 0
for e in rep["ab"]:
    cells += 1
    got = stats.compare(e["A"], e["B"])
    if got is None:
        if e["verdict"] != "not enough calls":
            bad.append("%s %d: no figures, the library's verdict %s" % (e["op"], e["min"], e["verdict"]))
        continue
    r, lo, hi, verdict = got
    if max(abs(r - e["ratio"]), abs(lo - e["lo"]), abs(hi - e["hi"])) > 2e-6 or verdict != e["verdict"]:
        bad.append("%s %d: %s, the library's %s" % (e["op"], e["min"], got,
                                                    (e["ratio"], e["lo"], e["hi"], e["verdict"])))
    for arm in "AB":
        hist = {lo: n for lo, n in e[arm]["hist"]}
        for q, key in ((0.5, "p50_ns"), (0.9, "p90_ns"), (0.99, "p99_ns")):
            if round(stats.quantile(hist, q)) != e[arm][key]:
                bad.append("%s %d %s %s: %s, the library's %s" % (e["op"], e["min"], arm, key,
                                                                 stats.quantile(hist, q), e[arm][key]))
missing = [k for k in commands.SUMMARY if k not in rep["counters"]]
if missing:
    bad.append("summary counters the library does not report: %s" % missing)
if cells < 2:
    bad.append("%d cells" % cells)
print("; ".join(bad) if bad else "ok %d cells" % cells)
PY
)
case $check in ok*) ok "the command's statistics equal the library's: $check" ;; *) bad "statistics: $check" ;; esac

# info: the library's view and the system's.
if info=$("$cli" info) && grep -q 'process_madvise releases memory' <<<"$info" &&
	grep -q '^transparent huge pages' <<<"$info" && grep -q 'tier 2 below' <<<"$info"; then
	ok "info: $(grep -c . <<<"$info") lines"
else
	bad "info: $info"
fi

finish

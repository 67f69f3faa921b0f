#!/usr/bin/env bash
# A/B across a fleet, end to end with the real parts: a node exporter
# (Debian's prometheus-node-exporter, its textfile collector on a temporary
# directory) and a Prometheus server (Debian's prometheus, a temporary
# configuration and data directory, the rules of `hugezero rules`, as the
# package installs them) on free local
# ports; six processes of a workload under HUGEZERO_PROCESS_AB=0.5, three
# drawn on (with the per-call arms) and three off, write periodic reports
# there and a JSON report each. Prometheus's recorded B/A ratio and its
# interval (centre and half-width) must agree with `hugezero report` over
# the JSON reports within 1%, cell by cell, with the same verdict;
# `hugezero fleet` prints them. Prometheus shows both modes with every
# process figure, its recorded per-mode figures agree with the JSON
# reports', and `hugezero fleet` compares the modes.
# (Prometheus's increase() extrapolates a series that ends inside the
# window by half a scrape interval: the counts it sees exceed a process's
# by 1/(2(samples - 1)), which narrows the interval by half that. Scraped
# every 200 ms for 10 s, a process's counts are within 1% of its own.)
# Everything started here is stopped here. Skips (exit 77) only when the
# programs are not installed.
# Usage: fleet.sh HUGEZERO_COMMAND LIB FLEET_WORK_BINARY
set -u
cli=$1 lib=$2 fw=$3
. "$(dirname "$0")/../util/common.sh"
for p in prometheus prometheus-node-exporter; do
	if ! command -v $p >/dev/null; then
		echo "SKIP - $p is not installed (scripts/deps.sh installs it)"
		exit 77
	fi
done
pids=()
stop_all() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	rm -rf "$work"
}
trap stop_all EXIT
trap 'exit 1' INT TERM # (bash runs no EXIT trap when a signal kills it)

free_port() {
	/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
wait_http() { # URL: up to 30 s
	for _ in $(seq 300); do
		/usr/bin/python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1)' "$1" \
			2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}
query() { # PROMQL: the JSON answer of an instant query
	/usr/bin/python3 -c 'import sys, urllib.parse, urllib.request
print(urllib.request.urlopen(sys.argv[1] + "/api/v1/query?" + urllib.parse.urlencode({"query": sys.argv[2]}), timeout=5).read().decode())' "$prom" "$1"
}

textdir=$work/textfile
mkdir -p "$textdir" "$work/json" "$work/data"
rules=$work/hugezero.rules.yml
"$cli" rules >"$rules" || { bad "hugezero rules failed"; exit 1; }
node_port=$(free_port)
prometheus-node-exporter --web.listen-address=127.0.0.1:$node_port --collector.disable-defaults \
	--collector.textfile --collector.textfile.directory="$textdir" >"$work/node.log" 2>&1 &
pids+=($!)
cat >"$work/prometheus.yml" <<EOF
global:
  scrape_interval: 200ms
  evaluation_interval: 1s
rule_files: ["$rules"]
scrape_configs:
  - job_name: node
    static_configs: [{targets: ["127.0.0.1:$node_port"]}]
EOF
prom_port=$(free_port)
prom=http://127.0.0.1:$prom_port
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/data" \
	--web.listen-address=127.0.0.1:$prom_port >"$work/prometheus.log" 2>&1 &
pids+=($!)
if wait_http "http://127.0.0.1:$node_port/metrics" && wait_http "$prom/-/ready"; then
	ok "node exporter on :$node_port and Prometheus on :$prom_port are up"
else
	bad "servers did not start: $(tail -3 "$work/node.log" "$work/prometheus.log")"
	exit 1
fi

# Prometheus scrapes a new target only once its discovery has passed it
# on (up to 5 s after start): wait for the first scrape.
up=0
for _ in $(seq 150); do
	[[ $(query 'up{job="node"}') == *'"1"]'* ]] && up=1 && break
	sleep 0.1
done
if [ $up = 0 ]; then
	bad "Prometheus never scraped the node exporter: $(query 'up')"
	exit 1
fi

# Six processes: a handful of calls, 3 s for a scrape to see them, 4 s of
# calls, the JSON report, 3 s for the last figures to be scraped, exit.
# At 0.5, seeds 1, 2 and 6 draw the on mode, 3, 4 and 5 the off mode
# (tests/obs/test_ab_stats.c knows these draws).
work_pids=()
for seed in 1 2 3 4 5 6; do
	HUGEZERO_STATS="$textdir/hugezero.prom" HUGEZERO_STATS_FORMAT=prometheus HUGEZERO_STATS_INTERVAL_MS=100 \
		HUGEZERO_PROCESS_AB=0.5 HUGEZERO_AB_SEED=$seed HUGEZERO_AB=0.5 HUGEZERO_LABELS=service=e2e \
		LD_PRELOAD=$lib "$fw" 3000 4000 "$work/json/r.%p.json" 3000 &
	work_pids+=($!)
done
st=0
for p in "${work_pids[@]}"; do wait "$p" || st=1; done
modes=$(cat "$work"/json/r.*.json 2>/dev/null | sed -n 's/^  "mode": "\(.*\)",$/\1/p' | sort | uniq -c | tr -s ' \n' ' ')
if [ $st = 0 ] && [ "$(ls "$work"/json/r.*.json | wc -l)" = 6 ] && [ "$modes" = " 3 off 3 on " ] &&
	[ -z "$(ls "$textdir")" ]; then
	ok "6 processes ran, 3 on under A/B and 3 off, wrote their JSON reports and removed their textfiles"
else
	bad "the workload: status $st, modes$modes, $(ls "$work/json") / left: $(ls "$textdir")"
fi
sleep 3 # the rules' evaluations after the last scrape

# Prometheus saw every call the JSON reports counted (their last scrape).
calls=$(query 'sum(max_over_time(hugezero_ab_duration_seconds_count{service="e2e"}[5m]))')
pids_seen=$(query 'count(count by (pid) (max_over_time(hugezero_ab_duration_seconds_count{service="e2e"}[5m])))')
check=$(/usr/bin/python3 - "$(dirname "$cli")" "$calls" "$pids_seen" "$prom" "$work"/json/r.*.json <<'PY'
import json, sys, urllib.parse, urllib.request
sys.path.insert(0, sys.argv[1])
from hzcli.merge import merge
from hzcli.stats import compare
calls, pids, prom, files = json.loads(sys.argv[2]), json.loads(sys.argv[3]), sys.argv[4], sys.argv[5:]
m = merge(files)
bad = []
total = sum(arms[a]["calls"] for arms in m["ab"].values() for a in "AB")
got = float(calls["data"]["result"][0]["value"][1]) if calls["data"]["result"] else 0
if got != total:
    bad.append("Prometheus saw %d calls, the reports %d" % (got, total))
if not pids["data"]["result"] or pids["data"]["result"][0]["value"][1] != "3":
    bad.append("pids seen: %s" % pids["data"]["result"])
def series(name):
    q = urllib.parse.urlencode({"query": '%s{service="e2e"}' % name})
    r = json.loads(urllib.request.urlopen(prom + "/api/v1/query?" + q, timeout=5).read())
    return {(s["metric"]["op"], int(s["metric"]["class"])): float(s["value"][1]) for s in r["data"]["result"]}
ratio, lo, hi, verdict = (series("hugezero:ab_ratio:5m"), series("hugezero:ab_ratio_lo95:5m"),
                          series("hugezero:ab_ratio_hi95:5m"), series("hugezero:ab_verdict:5m"))
names = {1: "B slower", -1: "B faster", 0: "no difference"}
cells = 0
for key, arms in sorted(m["ab"].items()):
    want = compare(arms["A"], arms["B"])
    if want is None:
        if key in ratio:
            bad.append("%s: a ratio without enough calls" % (key,))
        continue
    if key not in ratio or key not in lo or key not in hi or key not in verdict:
        bad.append("%s: no recorded ratio" % (key,))
        continue
    cells += 1
    # The ratio, and the interval's half-width (a bound near 0 has no
    # relative error to speak of), each within 1%.
    half_w, half_g = (want[2] - want[1]) / 2, (hi[key] - lo[key]) / 2
    for what, w, g in (("ratio", want[0], ratio[key]), ("half-width", half_w, half_g),
                       ("centre", (want[1] + want[2]) / 2, (lo[key] + hi[key]) / 2)):
        if abs(g - w) > 0.01 * abs(w):
            bad.append("%s %s: Prometheus %.5f, report %.5f" % (key, what, g, w))
    # (a bound within 1% of 1 may fall either side of it)
    near = min(abs(want[1] - 1), abs(want[2] - 1)) < 0.01 * want[0]
    if names[int(verdict[key])] != want[3] and not near:
        bad.append("%s verdict: Prometheus %s, report %s" % (key, names[int(verdict[key])], want[3]))
    print("  %-6s %8d: B/A %.4f [%.4f, %.4f] report, %.4f [%.4f, %.4f] Prometheus, %s" % (
        key[0], key[1], want[0], want[1], want[2], ratio[key], lo[key], hi[key], want[3]), file=sys.stderr)
if cells < 3:
    bad.append("only %d cells compared" % cells)
print("; ".join(bad) if bad else "ok %d cells, %d calls" % (cells, total))
PY
)
case $check in
ok*) ok "recorded B/A ratio, interval and verdict = hugezero report's within 1%: ${check#ok }" ;;
*) bad "Prometheus against the reports: $check" ;;
esac

# The modes: every process figure in Prometheus for 3 processes of each
# mode; the recorded per-mode series count them, their mean peak RSS is
# the JSON reports' (its last value: nothing grows it after the report),
# and every figure has its on/off comparison.
check=$(/usr/bin/python3 - "$(dirname "$cli")" "$prom" "$work"/json/r.*.json <<'PY'
import json, sys, urllib.parse, urllib.request
sys.path.insert(0, sys.argv[1])
from hzcli.merge import merge
from hzcli.rules import PROCESS_FIGURES, process_names
prom, files = sys.argv[2], sys.argv[3:]
def ask(q):
    u = prom + "/api/v1/query?" + urllib.parse.urlencode({"query": q})
    return json.loads(urllib.request.urlopen(u, timeout=5).read())["data"]["result"]
def by_mode(q):
    return {s["metric"].get("mode"): float(s["value"][1]) for s in ask(q)}
bad = []
for name in ("hugezero_process_minor_faults_total", "hugezero_process_cpu_time_seconds_total",
             "hugezero_process_rss_bytes", "hugezero_process_peak_rss_bytes"):
    got = by_mode('count by (mode) (max_over_time(%s{service="e2e"}[5m]))' % name)
    if got != {"off": 3, "on": 3}:
        bad.append("%s: processes by mode %s" % (name, got))
modes = merge(files)["modes"]
for figure, _ in PROCESS_FIGURES:
    r = process_names(figure, "5m")
    count = by_mode('%s{service="e2e"}' % r["count"])
    if count != {"off": 3, "on": 3}:
        bad.append("%s: recorded processes by mode %s" % (figure, count))
    if not all(ask('%s{service="e2e"}' % r[k]) for k in ("ratio", "lo95", "hi95", "verdict")):
        bad.append("%s: no recorded on/off comparison" % figure)
peak = by_mode('%s{service="e2e"}' % process_names("peak_rss_bytes", "5m")["mean"])
for mode in ("off", "on"):
    want = sum(modes[mode]["process.peak_rss_bytes"]) / 3
    if abs(peak.get(mode, 0) - want) > 0.02 * want:
        bad.append("%s: mean peak RSS %s recorded, %d reported" % (mode, peak.get(mode), want))
print("; ".join(bad) if bad else "ok peak RSS %.1f MiB off, %.1f MiB on" % (peak["off"] / 2**20, peak["on"] / 2**20))
PY
)
case $check in
ok*) ok "both modes in Prometheus with every process figure, recorded per mode and compared: ${check#ok }" ;;
*) bad "the modes in Prometheus: $check" ;;
esac

# hugezero fleet: the same table, its ratios, intervals and means the
# recorded ones (printed to 3 decimals, means to 0.1 us).
if out=$(HUGEZERO_LIB=$lib "$cli" fleet --prometheus "$prom" --match 'service="e2e"' --svg "$work/fleet.svg") &&
	rep=$("$cli" report "$work"/json/r.*.json); then
	check=$(/usr/bin/python3 - "$out" "$rep" "$(dirname "$cli")" "$work"/json/r.*.json <<'PY'
import contextlib, io, re, sys
sys.path.insert(0, sys.argv[3])
from hzcli import merge, modes
def rows(text):
    r = {}
    for line in text.splitlines():
        m = re.match(r"^(memset|calloc) +(\S+ \S+) \|(.*)\|(.*)\| ([0-9.]+) \[([0-9.]+), ([0-9.]+)\] +(.*)$", line)
        if m:
            ratio, lo, hi = (float(m[i]) for i in (5, 6, 7))
            mean_a, mean_b = float(m[3].split()[1]), float(m[4].split()[1])
            r[(m[1], m[2])] = ((ratio, (hi - lo) / 2, mean_a, mean_b), m[8].strip())
    return r
fleet, report = rows(sys.argv[1]), rows(sys.argv[2])
def near(k):  # a bound within 1% of 1: the verdict may differ
    (ratio, half, _, _), _ = report[k]
    return min(abs(ratio - half - 1), abs(ratio + half - 1)) < 0.01 * ratio
bad = [k for k in report if k not in fleet or (fleet[k][1] != report[k][1] and not near(k)) or
       any(abs(a - b) > 0.01 * b + (0.001 if i < 2 else 0.05) for i, (a, b) in enumerate(zip(fleet[k][0], report[k][0])))]
# The modes' table: both modes' 3 processes and a comparison for every
# figure, as the reports' own table (modes.print_modes) has them.
names = {n for _, n, _ in modes.FLEET_FIGURES + modes.REPORT_FIGURES}
def mode_rows(text):
    r = {}
    for line in text.splitlines():
        f = line.split("|")
        if len(f) == 4 and f[0].strip() in names:
            r[f[0].strip()] = (f[1].split()[0], f[2].split()[0], "not enough" not in f[3])
    return r
table = io.StringIO()
with contextlib.redirect_stdout(table):
    modes.print_modes(merge.merge(sys.argv[4:]))
fm, rm = mode_rows(sys.argv[1]), mode_rows(table.getvalue())
if len(fm) != 4 or any(v != ("3", "3", True) for v in fm.values()):
    bad.append("fleet's modes: %s" % fm)
if len(rm) != 4 or any(v != ("3", "3", True) for v in rm.values()):
    bad.append("the reports' modes: %s" % rm)
print("ok %d rows, both modes' 4 figures" % len(report) if report and not bad else "differ: %s" % bad)
PY
)
	if [[ $check == ok* ]] && /usr/bin/python3 -c 'import sys, xml.dom.minidom as m; m.parse(sys.argv[1])' "$work/fleet.svg"; then
		ok "hugezero fleet: the report's table and verdicts (${check#ok }), a valid chart"
	else
		bad "hugezero fleet: $check\n$out\n--- report:\n$rep"
	fi
else
	bad "hugezero fleet or report failed: $out"
fi

finish

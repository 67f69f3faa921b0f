#!/usr/bin/env bash
# The periodic Prometheus report as a node exporter's textfile collector
# reads it: one file per process named *.prom, readable by the collector's
# user, the user's labels on every sample, every rewrite replacing the
# file whole, a forked child writing its own, each file removed when its
# process exits; bad labels named and ignored (pid and mode are the
# report's own).
# Usage: textfile.sh LIB FLEET_WORK_BINARY
set -u
lib=$1 fw=$2
. "$(dirname "$0")/../util/common.sh"
dir=$work/textfile
mkdir "$dir"
# run ENV... fleet_work ARGS: execs, so `run ... &` gives the program's pid
# in $!; in the foreground it is run as (run ...).
run() {
	exec env HUGEZERO_STATS="$dir/hugezero.prom" HUGEZERO_STATS_FORMAT=prometheus HUGEZERO_AB=0.5 \
		LD_PRELOAD="$lib" "$@"
}

# A process's file while it runs: its name, mode, labels, promtool.
run HUGEZERO_STATS_INTERVAL_MS=20 HUGEZERO_LABELS='service=redis,region=eu "1"' \
	"$fw" 0 1500 "$work/r.%p.json" 0 &
pid=$!
f=$dir/hugezero.$pid.prom
# (until the arms' ratios are in it: every cell has 2 calls an arm)
for _ in $(seq 100); do grep -qs '^hugezero_ab_ratio{' "$f" && break; sleep 0.02; done
cp "$f" "$work/one.prom"
mode=$(stat -c %a "$f" 2>/dev/null)
samples=$(grep -v '^#' "$work/one.prom" | wc -l)
labelled=$(grep -v '^#' "$work/one.prom" | grep -c "{pid=\"$pid\",mode=\"on\",service=\"redis\",region=\"eu \\\\\"1\\\\\"\"")
promtool_out=$(promtool check metrics <"$work/one.prom" 2>&1)
# Read it as fast as possible while it is rewritten every 20 ms: each read
# is a whole report (the first family's header first, the last family's
# samples last, a final newline).
reads=$(/usr/bin/python3 - "$f" "$pid" <<'PY'
import os, sys
path, pid = sys.argv[1], sys.argv[2]
whole = torn = 0
while os.path.exists("/proc/" + pid) and whole + torn < 200000:
    try:
        with open(path) as fh:
            text = fh.read()
    except FileNotFoundError:
        continue
    lines = text.split("\n")
    if text.endswith("\n") and lines[0].startswith("# HELP ") and \
            lines[-2].startswith("hugezero_ab_ratio{") and "# TYPE hugezero_calls_total counter" in text:
        whole += 1
    else:
        torn += 1
print(whole, torn)
PY
)
wait $pid
st=$?
read -r whole torn <<<"$reads"
if [ "$st" = 0 ] && [ "${whole:-0}" -gt 100 ] && [ "${torn:-1}" = 0 ]; then
	ok "rewritten every 20 ms: $whole reads, each a whole report"
else
	bad "reads while rewritten: $reads whole/torn (status $st)"
fi
if [ "$mode" = 644 ] && grep -q '^hugezero_ab_ratio{' "$work/one.prom" && [ "$labelled" = "$samples" ] && [ -z "$promtool_out" ]; then
	ok "hugezero.$pid.prom: mode 644, the labels on all $samples samples, promtool passes"
else
	bad "hugezero.PID.prom: mode $mode, $labelled of $samples samples labelled, promtool: $promtool_out"
fi
left=$(ls "$dir")
if [ -z "$left" ] && [ "$(stat -c %a "$work"/r.$pid.json)" = 600 ]; then
	ok "at exit the process's file is removed, no temporary file left; its JSON report is private (600)"
else
	bad "left in the collector's directory after exit: $left"
fi

# Without an interval the report is written once, at exit, and stays.
(run "$fw" 0 100 "$work/x.%p.json" 0)
if ls "$dir"/hugezero.[0-9]*.prom >/dev/null 2>&1; then
	ok "no interval: the report at exit stays"
else
	bad "no interval: no file after exit: $(ls "$dir")"
fi
rm -f "$dir"/*

# A forked child writes its own file while it lives, then removes it; the
# parent's stays until the parent exits.
# The child's thread starts at its first large call an interval after the
# fork: right after the fork it has one thread (it may unshare or exec).
run HUGEZERO_STATS_INTERVAL_MS=50 "$fw" fork 1500 >"$work/child" &
parent=$!
for _ in $(seq 100); do [ "$(wc -l <"$work/child")" = 2 ] && break; sleep 0.02; done
child=$(grep -x '[0-9]*' "$work/child") threads=$(sed -n 's/^threads //p' "$work/child")
sleep 0.8
seen=$(grep -c '^hugezero_ab_duration_seconds_count{' "$dir/hugezero.$child.prom" 2>/dev/null)
wait $parent
st=$?
if [ "$st" = 0 ] && [ "$threads" = 1 ] && [ "${seen:-0}" -gt 0 ] && [ -z "$(ls "$dir")" ]; then
	ok "a forked child: 1 thread after fork, then its own file with its arms ($seen series), removed at its exit"
else
	bad "forked child $child: status $st, $threads threads after fork, $seen series seen; left: $(ls "$dir")"
fi

# Files of processes gone (killed, or a child that left by _exit): a
# process's interval write removes those of its path whose pid does not
# exist and that nobody rewrote for 5 minutes; it keeps a recent one (a
# process of another PID namespace rewrites its own), a live pid's, and
# files of other names. (No PID exceeds 2^22, pid_max's largest value.)
rm -f "$dir"/*
for f in hugezero.2000000001.prom hugezero.2000000002.prom.tmp hugezero.$$.prom other.2000000003.prom \
	hugezero.2000000004.prom.x; do
	echo "# planted" >"$dir/$f"
	touch -d '10 minutes ago' "$dir/$f"
done
echo "# planted" >"$dir/hugezero.2000000005.prom"
(run HUGEZERO_STATS_INTERVAL_MS=50 "$fw" 0 400 "$work/w.%p.json" 0)
left=$(ls "$dir" | LC_ALL=C sort | tr '\n' ' ')
want=$(printf '%s\n' hugezero.$$.prom hugezero.2000000004.prom.x hugezero.2000000005.prom other.2000000003.prom |
	LC_ALL=C sort | tr '\n' ' ')
if [ "$left" = "$want" ] &&
	grep -q '"report.swept_files": 2' "$work"/w.*.json; then
	ok "files of processes gone removed (2, counted), a recent one, a live pid's and others kept"
else
	bad "after the sweep: $left; $(grep -o '"report.swept_files": [0-9]*' "$work"/w.*.json)"
fi
rm -f "$dir"/*

# Bad labels: named on stderr, none added.
long=service=$(printf 'x%.0s' $(seq 600))
for spec in 'pid=1' 'mode=off' 'service' '1x=y' '__a=b' 'job=x' 'a-b=c' 'service=a,service=b' $'service=\xff' "$long"; do
	rm -f "$dir"/*
	(run HUGEZERO_LABELS="$spec" "$fw" 0 50 "$work/b.%p.json" 0 2>"$work/err")
	if grep -q "ignoring HUGEZERO_LABELS" "$work/err" &&
		grep -q '^hugezero_ab_bytes_total{pid="[0-9]*",mode="on",op=' "$dir"/hugezero.*.prom; then
		ok "HUGEZERO_LABELS=${spec:0:40}: named and ignored"
	else
		bad "HUGEZERO_LABELS=${spec:0:40}: $(cat "$work/err"); $(grep -m1 '^hugezero_ab_bytes' "$dir"/*)"
	fi
done

finish

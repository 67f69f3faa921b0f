#!/usr/bin/env bash
# hugezero compare, as a user runs it: a program under every allocator
# installed (3 repetitions) gives a table, a verdict per figure, a CSV whose
# medians are those of its runs, and a chart; an output that differs under
# one allocator, or an exit status, fails the check (not with --no-check);
# the server form on redis (when installed) gives the metric's verdict; a
# server that is never ready, or ignores SIGTERM, or goes to the
# background (its pid file named), is stopped within its bounds and
# leaves no process behind; bad arguments are refused.
# Usage: compare.sh HUGEZERO_COMMAND LIB
set -u
cli=$1 lib=$2
. "$(dirname "$0")/../util/common.sh"
export HUGEZERO_LIB=$lib
verdicts='(faster|slower|fewer|more|less|better|worse|the same within 2%|no difference at this noise)'
# The statistics' known answers: the exact rank test's p (5 against 5
# apart: 2/252; 3 against 3: 0.1, too few for a verdict), and the verdicts.
check=$(/usr/bin/python3 - "$(dirname "$cli")" <<'PY'
import random, sys
sys.path.insert(0, sys.argv[1])
from hzcli import compare as c
r = random.Random(1)
a, b = [1.0, 2, 3, 4, 5], [6.0, 7, 8, 9, 10]
got = [c.mann_whitney_p(a, b, r), c.mann_whitney_p(a[:3], b[:3], r), c.mann_whitney_p([1.0] * 4, [1.0] * 4, r),
       c.verdict(c.mann_whitney_p(a, b, r), c.bootstrap_ratio(a, b, r), "wall_s", True, 5, 5),
       c.verdict(c.mann_whitney_p(b, a, r), c.bootstrap_ratio(b, a, r), "metric", True, 5, 5),
       c.verdict(1.0, c.bootstrap_ratio([2.0] * 5, [2.0] * 5, r), "faults", True, 5, 5),
       c.verdict(0.1, (0.5, 0.4, 0.6), "wall_s", True, 3, 3)]
want = [2 / 252, 0.1, 1.0, "faster", "worse", "the same within 2%", "too few runs for a verdict (4 a side)"]
print("ok" if all(abs(g - w) < 1e-12 if isinstance(w, float) else g == w for g, w in zip(got, want)) else got)
PY
)
[ "$check" = ok ] && ok "statistics: the rank test's known p and the verdicts" || bad "statistics: $check"

"$cli" compare --reps 4 --csv "$work/c.csv" --svg "$work/c.svg" -- /usr/bin/python3 -c \
	'b = [bytearray(16 << 20) for _ in range(8)]; print(sum(sum(x[::4096]) for x in b))' >"$work/out" 2>"$work/err"
rc=$?
n=$(grep -Ec "^  (wall time|CPU time|minor faults|peak RSS) +over glibc: [0-9.]+ \[[0-9.]+, [0-9.]+\] p=[0-9.e-]+ $verdicts" "$work/out")
if [ $rc -eq 0 ] && [ "$n" = 4 ] && grep -Eq '^\[([0-9]+)/\1\] repetition 4' "$work/err"; then
	ok "program form: a verdict for each of the 4 figures, progress on stderr"
else
	bad "program form: rc $rc, $n verdicts: $(cat "$work/out" "$work/err")"
fi
# The CSV's medians are its runs' medians; the chart is valid SVG.
check=$(/usr/bin/python3 - "$work/c.csv" "$work/c.raw.csv" "$work/c.svg" <<'PY'
import csv, statistics, sys, xml.dom.minidom
summary = list(csv.DictReader(open(sys.argv[1])))
runs = list(csv.DictReader(open(sys.argv[2])))
bad = []
allocs = {r["allocator"] for r in runs}
if "glibc" not in allocs or "hugezero" not in allocs:
    bad.append("allocators %s" % sorted(allocs))
for r in summary:
    vals = [float(x[r["figure"]]) for x in runs if x["allocator"] == r["allocator"] and x[r["figure"]]]
    want = statistics.median(vals)
    if int(r["n"]) != len(vals) or abs(float(r["median"]) - want) > 1e-3 * max(abs(want), 1e-9):
        bad.append("%s %s: median %s, its runs' %s" % (r["figure"], r["allocator"], r["median"], want))
hz = [r for r in summary if r["allocator"] == "hugezero"]
if len(hz) != 4 or any(not r["glibc_verdict"] for r in hz):
    bad.append("hugezero's rows %s" % hz)
xml.dom.minidom.parse(sys.argv[3])
print("; ".join(bad) or "ok")
PY
)
[ "$check" = ok ] && ok "CSV: every median is its runs' median; SVG valid" || bad "CSV: $check"

# An output that differs under the preloads fails the check; --no-check
# takes it; an exit status that differs fails it too.
"$cli" compare --reps 1 --allocators glibc hugezero -- sh -c 'echo "$LD_PRELOAD"' >"$work/o" 2>&1
[ $? -eq 1 ] && grep -q "standard output differs" "$work/o" && ok "a different output fails the check" ||
	bad "different output: $(cat "$work/o")"
"$cli" compare --reps 1 --no-check --allocators glibc,hugezero -- sh -c 'echo "$LD_PRELOAD"' >"$work/o" 2>&1 &&
	ok "--no-check takes it" || bad "--no-check: $(cat "$work/o")"
"$cli" compare --reps 1 --allocators glibc hugezero -- sh -c '[ -z "$LD_PRELOAD" ]' >"$work/o" 2>&1
[ $? -eq 1 ] && grep -q "exit status 1 differs" "$work/o" && ok "a different exit status fails the check" ||
	bad "exit status: $(cat "$work/o")"
# A crash after the same output is a different status too (128 + SIGSEGV).
"$cli" compare --reps 1 --allocators glibc hugezero -- sh -c 'echo x; [ -z "$LD_PRELOAD" ] || kill -SEGV $$' \
	>"$work/o" 2>&1
[ $? -eq 1 ] && grep -q "exit status 139 differs" "$work/o" && ok "a crash after the same output fails the check" ||
	bad "crash: $(cat "$work/o")"

# The server form on redis.
if command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null; then
	before=$(pgrep -xc redis-server)
	"$cli" compare --reps 4 --csv "$work/s.csv" \
		--server 'redis-server --port {port} --bind 127.0.0.1 --save "" --appendonly no --dir {dir}' \
		--ready 'redis-cli -p {port} ping' \
		--load 'redis-benchmark -p {port} -q --csv -n 5000 -t set -d 50000 -r 1000' \
		--metric '^"SET","([0-9.]+)"' >"$work/out" 2>"$work/err"
	rc=$?
	if [ $rc -eq 0 ] && grep -Eq "^  metric +over glibc: [0-9.]+ \[[0-9.]+, [0-9.]+\] p=[0-9.e-]+ $verdicts" "$work/out" &&
		[ "$(grep -c '^metric,' "$work/s.csv")" -ge 2 ] && [ "$(pgrep -xc redis-server)" = "$before" ]; then
		ok "server form on redis: the metric's verdict; $(grep '^  metric' "$work/out")"
	else
		bad "server form: rc $rc: $(cat "$work/out" "$work/err")"
	fi
else
	echo "skip - redis-server is not installed: the server form's redis case"
fi

# A server never ready, and one that ignores SIGTERM: bounded, nothing left.
mark=hz-compare-test-$$
t0=$(date +%s)
"$cli" compare --reps 1 --allocators glibc hugezero --ready-timeout 1 \
	--server "bash -c 'exec -a $mark sleep 3600'" --ready false --load true --metric x >"$work/o" 2>&1
rc=$?
"$cli" compare --reps 1 --allocators glibc hugezero --stop-timeout 1 \
	--server "sh -c 'trap \"\" TERM; while :; do sleep 1; done; : $mark'" --ready true --load 'echo 5' \
	--metric '([0-9]+)' >"$work/o2" 2>&1
rc2=$?
# A server that goes to the background, out of the session started: it is
# measured (the preload checked in it, not in the wrapper gone) and
# stopped by its pid file, by its stop signal, well before the 20 s after
# which it would be killed.
t3=$(date +%s)
"$cli" compare --reps 1 --allocators glibc hugezero --stop-timeout 20 --stop-signal HUP \
	--server "bash -c 'setsid bash -c \"exec -a $mark sleep 3600\" </dev/null >/dev/null 2>&1 & echo \$! >{dir}/pid'" \
	--pidfile '{dir}/pid' --ready true --load 'echo 5' --metric '([0-9]+)' >"$work/o3" 2>&1
rc3=$?
[ $(($(date +%s) - t3)) -lt 15 ] || rc3="slow: $(($(date +%s) - t3)) s"
# A server that drops the preload is named as such, within the ready bound.
"$cli" compare --reps 1 --allocators glibc hugezero --ready-timeout 2 \
	--server "env -u LD_PRELOAD bash -c 'exec -a $mark sleep 3600'" --ready "pgrep -f '^$mark 3600'" --load 'echo 5' \
	--metric '([0-9]+)' >"$work/o4" 2>&1
rc4=$?
grep -q "hugezero, repetition 1: the server does not map libhugezero" "$work/o4" || rc4="$rc4, not named"
sleep 0.5
left=$(pgrep -f "$mark")
if [ $rc -eq 1 ] && grep -q "not ready in 1 s" "$work/o" && [ $rc2 -eq 0 ] && [ $rc3 -eq 0 ] && [ "$rc4" = 1 ] &&
	[ -z "$left" ] && [ $(($(date +%s) - t0)) -lt 40 ]; then
	ok "a server never ready fails within its bound; one that ignores SIGTERM is killed, one in the background too; one without the preload named; none left"
else
	bad "servers: rc $rc, $rc2, $rc3, $rc4, left '$left': $(cat "$work/o" "$work/o2" "$work/o3" "$work/o4")"
	[ -n "$left" ] && kill -9 $left
fi

# Bad arguments.
for a in "--reps 0 -- true" "--allocators nosuch -- true" "--server x -- true" "--server x --ready y --load z" \
	"--env NOEQUALS -- true" "--server x --ready y --load z --metric ( " \
	"--server x --ready y --load z --metric m --stop-signal NOSUCH" ""; do
	# shellcheck disable=SC2086
	if "$cli" compare $a >/dev/null 2>&1; then bad "compare $a accepted"; else ok "compare $a refused"; fi
done
finish

#!/usr/bin/env bash
# The report: exact counts of a known workload (tests/stats_known.c) in
# each process's file, threads folded in, a forked child counting from
# zero, a report written on demand; the JSON parses, the Prometheus file
# passes promtool, the interval thread rewrites the file while the
# program runs; HUGEZERO_MODE=off forwards everything to glibc, as does
# the off mode HUGEZERO_PROCESS_AB draws.
# Usage: stats.sh LIB STATS_KNOWN_BINARY ABI_BINARY CALLSITE_BINARY
set -u
lib=$1 known=$2 abi=$3 callsite=$4
. "$(dirname "$0")/../util/common.sh"

if ! pids=$(HUGEZERO_STATS="$work/r-%p.json" HUGEZERO_STATS_FORMAT=json LD_PRELOAD=$lib \
	"$known" dump "$work/dump" 2>"$work/err"); then
	bad "the workload failed: $(cat "$work/err")"
fi
read -r parent child <<<"$pids"
check=$(/usr/bin/python3 - "$work" "${parent:-0}" "${child:-0}" <<'PY'
import json, sys
work, parent, child = sys.argv[1:]
M = 1 << 20
def load(path):
    with open(path) as f:
        return json.load(f)
def cls(rep, op, lo):
    for c in rep["classes"][op]:
        if c["min"] == lo:
            return c["calls"], c["bytes"]
    return 0, 0
want_parent = {("malloc", 2 * M): (7, 21 * M), ("malloc", 4 * M): (3, 15 * M),
               ("calloc", 32768): (5, 200000), ("memset", 65536): (9, 900000),
               ("realloc", M): (4, 6 * M)}
want_child = {("malloc", 2 * M): (2, 6 * M), ("calloc", 32768): (0, 0),
              ("memset", 65536): (0, 0), ("malloc", 4 * M): (0, 0)}
bad = []
for name, path, want in (("parent", "%s/r-%s.json" % (work, parent), want_parent),
                         ("child", "%s/r-%s.json" % (work, child), want_child),
                         ("on demand", "%s/dump.%s" % (work, parent), want_parent)):
    try:
        rep = load(path)
    except Exception as e:
        bad.append("%s: %s" % (name, e))
        continue
    for (op, lo), exp in want.items():
        got = cls(rep, op, lo)
        if got != exp:
            bad.append("%s: %s class %d: %s, want %s" % (name, op, lo, got, exp))
    if rep["counters"].get("malloc.large.calls", 0) < want[("malloc", 2 * M)][0]:
        bad.append("%s: malloc.large.calls %s" % (name, rep["counters"].get("malloc.large.calls")))
    if name == "child":  # its own calls only, none of the parent's
        got = (rep["counters"]["malloc.large.calls"], rep["counters"]["memset.large.calls"])
        if got != (2, 0):
            bad.append("child: malloc.large.calls, memset.large.calls %s, want (2, 0)" % (got,))
print("; ".join(bad) if bad else "ok")
PY
)
if [ "$check" = ok ]; then
	ok "exact counts: parent (threads folded in), forked child from zero, on-demand dump"
else
	bad "counts: $check"
fi

# Prometheus text exposition format, checked by promtool; text too.
for f in prometheus text; do
	rm -f "$work"/f.*
	HUGEZERO_STATS="$work/f" HUGEZERO_STATS_FORMAT=$f LD_PRELOAD=$lib "$known" >/dev/null
	n=$(ls "$work"/f.* 2>/dev/null | wc -l)
	if [ "$f" = prometheus ]; then
		if [ "$n" = 2 ] && out=$(cat "$work"/f.* | head -c 100000 >/dev/null; for x in "$work"/f.*; do promtool check metrics <"$x" 2>&1 || exit 1; done); then
			ok "prometheus: 2 files pass promtool check metrics"
		else
			bad "prometheus: $n files; promtool: $out"
		fi
	elif [ "$n" = 2 ] && grep -q '^calloc.class.32768.calls 5$' "$work"/f.*; then
		ok "text: calloc.class.32768.calls 5"
	else
		bad "text: $n files: $(cat "$work"/f.* | grep calloc.class)"
	fi
done

# A/B arms: both arms give the same bytes (the workload checks them), the
# split follows HUGEZERO_AB within 4 standard deviations, each arm has its
# figures and the comparison a verdict; the Prometheus file passes.
rm -f "$work"/ab.*
if HUGEZERO_AB=0.3 HUGEZERO_AB_SEED=7 HUGEZERO_STATS="$work/ab" HUGEZERO_STATS_FORMAT=json \
	LD_PRELOAD=$lib "$known" ab; then
	check=$(/usr/bin/python3 - "$work"/ab.* <<'PY'
import json, math, sys
rep = json.load(open(sys.argv[1]))
bad = []
tot = {"memset": [0, 0], "calloc": [0, 0]}
for e in rep.get("ab", []):
    tot[e["op"]][0] += e["A"]["calls"]
    tot[e["op"]][1] += e["B"]["calls"]
    if e["verdict"] not in ("B faster", "B slower", "no difference", "not enough calls"):
        bad.append("verdict %r" % e["verdict"])
    for arm in "AB":
        if e[arm]["calls"] and not (0 < e[arm]["p50_ns"] <= e[arm]["p90_ns"] <= e[arm]["p99_ns"]):
            bad.append("%s %s percentiles" % (e["op"], arm))
        if sum(c for _, c in e[arm]["hist"]) != e[arm]["calls"]:
            bad.append("%s %s histogram total" % (e["op"], arm))
for op, n in (("memset", 2000), ("calloc", 200)):
    a, b = tot[op]
    sd = math.sqrt(n * 0.3 * 0.7)
    if a + b != n or abs(a - 0.3 * n) > 4 * sd:
        bad.append("%s: A %d B %d of %d" % (op, a, b, n))
print("; ".join(bad) if bad else "ok %s" % tot)
PY
)
	case $check in ok*) ok "A/B: split and figures: $check" ;; *) bad "A/B: $check" ;; esac
else
	bad "A/B: the workload saw wrong bytes"
fi
rm -f "$work"/ab.*
HUGEZERO_AB=0.5 HUGEZERO_STATS="$work/ab" HUGEZERO_STATS_FORMAT=prometheus LD_PRELOAD=$lib "$known" ab
if grep -q '^hugezero_ab_duration_seconds_bucket' "$work"/ab.* && out=$(promtool check metrics <"$work"/ab.* 2>&1); then
	ok "A/B: the Prometheus report passes promtool"
else
	bad "A/B prometheus: $out"
fi

# Fresh memory: HUGEZERO_FRESH=small gives the arenas' new mappings small
# pages (no huge page in the process after 32 MiB written), huge asks for
# huge pages (where THP is on, some appear); auto measures, whatever the
# machine (free page reporting, a balloon's VIRTIO_BALLOON_F_REPORTING,
# feature bit 5 in sysfs, is reported, not obeyed), and times its own
# first touches; a bad value is named and ignored.
fill='b = bytearray(b"x" * (32 << 20)); print(len(b))'
for m in small huge auto bogus; do
	rm -f "$work"/fresh.*
	HUGEZERO_FRESH=$m HUGEZERO_STATS="$work/fresh" LD_PRELOAD=$lib /usr/bin/python3 -c "$fill" >/dev/null 2>"$work/fresh.err"
	eval "fresh_$m=\"$(awk '$1 ~ /^(fresh\.|process\.anon_huge_bytes)/ { printf "%s=%s ", $1, $2 }' "$work"/fresh.[0-9]*)\""
done
reporting=0
for f in /sys/bus/virtio/drivers/virtio_balloon/virtio*/features; do
	[ -r "$f" ] && [ "$(cut -c6 "$f")" = 1 ] && reporting=1
done
thp=$(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)
has() { [[ " $1 " == *" $2 "* ]]; }
if has "$fresh_small" fresh.huge=0 && has "$fresh_small" process.anon_huge_bytes=0 &&
	! has "$fresh_small" fresh.small_mappings=0 && has "$fresh_huge" fresh.small_mappings=0 &&
	has "$fresh_huge" fresh.huge=1 && { [[ $thp == *"[never]"* ]] || ! has "$fresh_huge" process.anon_huge_bytes=0; } &&
	has "$fresh_auto" fresh.free_page_reporting=$reporting &&
	! has "$fresh_auto" fresh.probes=0 &&
	{ [[ $thp == *"[never]"* ]] || { ! has "$fresh_auto" fresh.samples=0 &&
		! has "$fresh_auto" fresh.recent_huge_touch_ns=0; }; } &&
	grep -q 'ignoring HUGEZERO_FRESH: not auto, huge or small: bogus' "$work/fresh.err"; then
	ok "HUGEZERO_FRESH: small, huge and auto (free page reporting $reporting) as asked, counted"
else
	bad "HUGEZERO_FRESH: small: $fresh_small; huge: $fresh_huge; auto: $fresh_auto (reporting $reporting); $(cat "$work/fresh.err")"
fi

# HUGEZERO_MODE=off: the library is loaded and counts, but memset and the
# malloc family are glibc's: a block's usable size is glibc's, no block
# comes from the arenas or the embedded jemalloc, no kernel runs, no arm.
glibc_usable=$("$known" usable) hz_usable=$(LD_PRELOAD=$lib "$known" usable)
rm -f "$work"/off.*
off_usable=$(HUGEZERO_MODE=off HUGEZERO_AB=0.5 HUGEZERO_STATS="$work/off" LD_PRELOAD=$lib "$known" usable)
HUGEZERO_MODE=off HUGEZERO_STATS="$work/off" LD_PRELOAD=$lib "$known" >/dev/null
count() { awk -v k="$1" '$1 == k { s += $2 } END { print s + 0 }' "$work"/off.*; }
kernels=$(awk '$1 ~ /^kernel\..*\.calls$/ { s += $2 } END { print s + 0 }' "$work"/off.*)
if [ "$off_usable" = "$glibc_usable" ] && [ "$hz_usable" != "$glibc_usable" ] &&
	[ "$(count malloc.large.calls)" = 0 ] && [ "$(count malloc.small.calls)" = 0 ] &&
	[ "$(count memset.class.65536.calls)" -ge 9 ] && [ "$kernels" = 0 ] && ! grep -q '^ab ' "$work"/off.*; then
	ok "HUGEZERO_MODE=off: glibc's blocks ($off_usable usable, as glibc; $hz_usable with the library on), no kernel"
else
	bad "off: usable $off_usable (glibc $glibc_usable, on $hz_usable), large $(count malloc.large.calls), small $(count malloc.small.calls), kernels $kernels"
fi
if out=$(HUGEZERO_MODE=off LD_PRELOAD=$lib "$abi" 2>&1); then
	ok "HUGEZERO_MODE=off: the malloc family's edges: $(echo "$out" | tail -1)"
else
	bad "HUGEZERO_MODE=off: $(echo "$out" | tail -3)"
fi

# HUGEZERO_PROCESS_AB: the mode drawn once at start: 0 never off, 1
# always, a seed its own mode (at 0.5 seed 3 off and seed 1 on, as
# test_ab_stats knows), HUGEZERO_MODE over the draw, a bad value of
# either named and ignored (a bad MODE leaves the draw to decide). A process drawn off is HUGEZERO_MODE=off's (glibc's blocks) and
# still reports, its mode first, its own figures last.
drawn() { # ENV...: "MODE USABLE" of the workload's usable run, its report in d.*
	rm -f "$work"/d.*
	local usable
	usable=$(env "$@" HUGEZERO_STATS="$work/d" LD_PRELOAD=$lib "$known" usable 2>"$work/d.err")
	echo "$(awk '$1 == "mode" { print $2 }' "$work"/d.[0-9]*) $usable"
}
for case in "off|HUGEZERO_PROCESS_AB=1" "on|HUGEZERO_PROCESS_AB=0" "off|HUGEZERO_PROCESS_AB=0.5 HUGEZERO_AB_SEED=3" \
	"on|HUGEZERO_PROCESS_AB=0.5 HUGEZERO_AB_SEED=1" "on|HUGEZERO_PROCESS_AB=1 HUGEZERO_MODE=on" \
	"off|HUGEZERO_PROCESS_AB=0 HUGEZERO_MODE=off" "on|HUGEZERO_PROCESS_AB=1.5" \
	"off|HUGEZERO_PROCESS_AB=1 HUGEZERO_MODE=of"; do
	want=${case%%|*}
	read -r got usable <<<"$(drawn ${case#*|})"
	[ "$want" = off ] && want_usable=$glibc_usable || want_usable=$hz_usable
	if [ "$got" = "$want" ] && [ "$usable" = "$want_usable" ] &&
		{ [[ $case != *=1.5 ]] || grep -q 'ignoring invalid HUGEZERO_PROCESS_AB' "$work/d.err"; } &&
		{ [[ $case != *=of ]] || grep -q 'ignoring HUGEZERO_MODE: not on or off: of' "$work/d.err"; }; then
		ok "${case#*|}: the $got mode (usable size $usable)"
	else
		bad "${case#*|}: the ${got:-no} mode, usable $usable, want $want ($want_usable): $(cat "$work/d.err")"
	fi
done
drawn HUGEZERO_PROCESS_AB=1 >/dev/null
figures=$(awk '$1 ~ /^process\./ { printf "%s=%s ", $1, $2 }' "$work"/d.[0-9]*)
if [[ $figures == "process.off=1 process.minor_faults="[1-9]*" process.cpu_time_ns="[1-9]*" process.wall_time_ns="[1-9]*" process.rss_bytes="[1-9]*" process.peak_rss_bytes="[1-9]*" process.anon_huge_bytes="* ]]; then
	ok "an off process's report: its mode and its own figures ($figures)"
else
	bad "an off process's figures: $figures"
fi
# Without /proc (a mount namespace of its own where one can be made): the
# figures it gives are left out, getrusage's stay, nothing fails.
if unshare -rm true 2>/dev/null; then
	rm -f "$work"/np.*
	out=$(unshare -rm sh -c 'mount -t tmpfs none /proc && exec env HUGEZERO_STATS="$1" LD_PRELOAD="$2" "$3" usable' \
		sh "$work/np" "$lib" "$known" 2>&1)
	figures=$(awk '$1 ~ /^process\./ { printf "%s ", $1 }' "$work"/np.* 2>/dev/null)
	if [ -n "$out" ] && [ "$figures" = "process.off process.minor_faults process.cpu_time_ns process.wall_time_ns " ]; then
		ok "without /proc: resident sizes left out, faults and CPU time given"
	else
		bad "without /proc: $out; figures: $figures"
	fi
else
	echo "(no unprivileged mount namespace here: the report without /proc is not tried)"
fi

# Call sites: every large memset sampled; the report names both calling
# functions, the one that cleared more bytes first, with the module and
# its build id for addr2line.
rm -f "$work"/cs.*
HUGEZERO_CALLSITES=1 HUGEZERO_STATS="$work/cs" HUGEZERO_STATS_FORMAT=json LD_PRELOAD=$lib "$callsite"
check=$(/usr/bin/python3 - "$work"/cs.* "$callsite" <<'PY'
import json, sys
rep = json.load(open(sys.argv[1]))
sites = rep.get("callsites", [])
def named(s):
    return [f["function"] for f in s["frames"]]
if len(sites) < 2:
    print("sites: %r" % sites)
elif named(sites[0])[0] != "clear_big_buffer_here" or named(sites[1])[0] != "clear_small_buffer_here":
    print("top frames %s, %s" % (named(sites[0])[:2], named(sites[1])[:2]))
elif sites[0]["bytes"] != 200 << 20 or sites[0]["frames"][0]["module"] != sys.argv[2] \
        or len(sites[0]["frames"][0]["build_id"]) != 40:
    print("site 1: %r" % sites[0])
else:
    print("ok")
PY
)
if [ "$check" = ok ]; then ok "call sites: clear_big_buffer_here first, then clear_small_buffer_here"
else bad "call sites: $check"; fi
rm -f "$work"/cs.*
HUGEZERO_CALLSITES=1 HUGEZERO_STATS="$work/cs" HUGEZERO_STATS_FORMAT=prometheus LD_PRELOAD=$lib "$callsite"
if grep -q 'site="clear_big_buffer_here+' "$work"/cs.* && out=$(promtool check metrics <"$work"/cs.* 2>&1); then
	ok "call sites in the Prometheus report pass promtool"
else
	bad "call sites, prometheus: $out"
fi

# Bad values get a clear answer: an unknown format from hz_stats_dump is
# EINVAL and writes nothing; bad options are named on stderr and ignored.
out=$(LD_PRELOAD=$lib "$known" badformat "$work/bad")
if [ "$out" = "-1 EINVAL" ] && ! ls "$work"/bad.* >/dev/null 2>&1; then
	ok "hz_stats_dump with an unknown format: -1, EINVAL, no file"
else
	bad "hz_stats_dump with an unknown format: '$out'"
fi
for case in "HUGEZERO_AB=2|ignoring invalid HUGEZERO_AB" "HUGEZERO_AB=x|ignoring invalid HUGEZERO_AB" \
	"HUGEZERO_STATS_FORMAT=xml|ignoring HUGEZERO_STATS_FORMAT" "HUGEZERO_MODE=of|ignoring HUGEZERO_MODE" \
	"HUGEZERO_CALLSITES=x|ignoring invalid HUGEZERO_CALLSITES"; do
	rm -f "$work"/o.*
	env "${case%%|*}" HUGEZERO_STATS="$work/o" LD_PRELOAD="$lib" "$known" ab >/dev/null 2>"$work/o.err"
	if grep -q "${case#*|}" "$work/o.err" && grep -q '^malloc.large.calls ' "$work"/o.[0-9]* &&
		! grep -q '^ab \|^callsite' "$work"/o.[0-9]*; then
		ok "${case%%|*}: named and ignored; a text report without arms or call sites"
	else
		bad "${case%%|*}: $(cat "$work/o.err")"
	fi
done

# The interval thread writes while the program runs.
rm -f "$work"/i.*
HUGEZERO_STATS="$work/i" HUGEZERO_STATS_INTERVAL_MS=50 LD_PRELOAD=$lib sleep 1 &
sp=$!
sleep 0.5
if [ -s "$work/i.$sp" ] && kill -0 $sp 2>/dev/null; then
	ok "interval: the report exists while the program runs"
else
	bad "interval: no report while running"
fi
wait $sp
# No thread unless asked for.
threads=$(LD_PRELOAD=$lib HUGEZERO_STATS="$work/t" sh -c 'ls /proc/$$/task | wc -l')
if [ "$threads" = 1 ]; then ok "no thread without HUGEZERO_STATS_INTERVAL_MS"; else bad "$threads threads"; fi

finish

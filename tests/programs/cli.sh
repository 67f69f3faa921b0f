#!/usr/bin/env bash
# The hugezero command: run prepends the library to LD_PRELOAD and passes
# the options; report merges the reports of a forking program (parent and
# child) into exact sums and writes a chart; info describes the machine.
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

# info: the library's view and the system's.
if info=$("$cli" info) && grep -q 'process_madvise releases memory' <<<"$info" &&
	grep -q '^transparent huge pages' <<<"$info" && grep -q 'tier 2 below' <<<"$info"; then
	ok "info: $(grep -c . <<<"$info") lines"
else
	bad "info: $info"
fi

finish

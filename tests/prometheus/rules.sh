#!/usr/bin/env bash
# The Prometheus rules `hugezero rules` writes (scripts/hzcli/rules.py):
# written into OUTDIR as hugezero.rules.yml, rules_test.yml copied beside
# them; promtool check rules must accept them and promtool test rules pass
# the unit tests (known answers of the A/B, the modes and the alerts).
# Other windows give valid rules too, and a window that is not a duration
# is refused.
# The module is imported directly: this needs neither the library nor the
# command. Skips (exit 77) only when promtool is not installed.
# Usage: rules.sh OUTDIR
set -u
out=$1
here=$(cd "$(dirname "$0")" && pwd)
scripts=$here/../../scripts
. "$here/../util/common.sh"
if ! command -v promtool >/dev/null; then
	echo "SKIP - promtool is not installed (Debian: apt install prometheus)"
	exit 77
fi
mkdir -p "$out"

# rules ARGS...: `hugezero rules ARGS` without the command's wiring.
rules() {
	/usr/bin/python3 - "$scripts" "$@" <<'PY'
import argparse, sys
sys.path.insert(0, sys.argv[1])
from hzcli import rules
p = argparse.ArgumentParser(prog="hugezero")
rules.add_arguments(p.add_subparsers(dest="cmd"))
args = p.parse_args(["rules"] + sys.argv[2:])
args.func(args)
PY
}

if rules >"$out/hugezero.rules.yml" && r=$(promtool check rules "$out/hugezero.rules.yml" 2>&1); then
	ok "check rules: $(grep -o '[0-9]* rules found' <<<"$r") (windows 5m and 1h)"
else
	bad "check rules: ${r:-hugezero rules failed}"
fi
cp "$here/rules_test.yml" "$out/"
if r=$(cd "$out" && promtool test rules rules_test.yml 2>&1); then
	ok "test rules: rules_test.yml"
else
	bad "test rules: rules_test.yml"
	echo "$r"
fi

if rules --window 30s --window 1h30m --window 1d >"$work/other.yml" &&
	r=$(promtool check rules "$work/other.yml" 2>&1) &&
	grep -q 'hugezero:ab_verdict:1d == 1' "$work/other.yml"; then
	ok "check rules: windows 30s, 1h30m and 1d; the alert on 1d's verdict"
else
	bad "windows 30s, 1h30m and 1d: ${r:-}"
fi
for w in 5x 0m 1m5h ""; do
	if rules --window "$w" >/dev/null 2>&1; then bad "--window '$w' accepted"; else ok "--window '$w' refused"; fi
done
finish

# Sourced by the test scripts: a work directory removed at exit, ok/bad
# lines counted, and finish, which prints the count and gives the status.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pass=0 fail=0
ok() { echo "ok   - $1"; pass=$((pass + 1)); }
bad() { echo "FAIL - $1"; fail=$((fail + 1)); }
finish() {
	echo "$pass passed, $fail failed"
	[ "$fail" -eq 0 ]
}
# preloaded NAME COMMAND...: the command run with LD_PRELOAD=$lib, a
# pass, or a failure with its output.
preloaded() {
	local name=$1 out
	shift
	if out=$(LD_PRELOAD=$lib "$@" 2>&1); then ok "$name"; else bad "$name: $out"; fi
}

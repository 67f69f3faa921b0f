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

#!/usr/bin/env bash
# The figures of README.md and docs/measurements.md are the ones the CSVs
# of docs/data give (hugezero figures --check); and the check fails, naming
# the row, when one README figure is changed in a copy of the tree, and
# when a document names a CSV that docs/data lacks.
# Usage: figures.sh HUGEZERO_COMMAND SOURCE_DIR
set -u
cli=$1 src=$2
. "$(dirname "$0")/../util/common.sh"

if out=$("$cli" figures --check --root "$src" 2>&1); then ok "the tree: $out"; else bad "the tree: $out"; fi

# A copy of the documents and the data, one figure of README's table changed:
# the first digit of the hugezero column of the table's first row.
copy() {
	rm -rf "$work/tree" && mkdir -p "$work/tree" && cp -r "$src/README.md" "$src/docs" "$work/tree/"
}
copy
row=$(/usr/bin/python3 - "$work/tree/README.md" <<'PY'
import re, sys
path = sys.argv[1]
text = open(path).read()
begin = text.index("<!-- figures:begin -->")
lines = text[begin:].split("\n")
i = next(i for i, l in enumerate(lines) if l.startswith("| ") and not l.startswith("| case") and "---" not in l)
cells = lines[i].split("|")
d = re.search(r"\d", cells[5])  # | case | unit | glibc | best other | hugezero |
cells[5] = cells[5][:d.start()] + str((int(d.group()) + 1) % 10) + cells[5][d.end():]
lines[i] = "|".join(cells)
open(path, "w").write(text[:begin] + "\n".join(lines))
print(cells[1].strip())
PY
)
if out=$("$cli" figures --check --root "$work/tree" 2>&1); then
	bad "a README figure changed ($row): the check passed"
elif grep -q "README.md: the figures differ from docs/data in the rows '$row'" <<<"$out" &&
	! grep -q "^docs/measurements.md: the figures differ" <<<"$out"; then
	ok "a README figure changed: the check fails, naming the row '$row'"
else
	bad "a README figure changed ($row): $out"
fi

# --write puts the figures back.
"$cli" figures --write --root "$work/tree" >/dev/null
if out=$("$cli" figures --check --root "$work/tree" 2>&1); then ok "--write mends it"; else bad "--write: $out"; fi

# A CSV named that docs/data does not have.
copy
echo 'See `data/real-2000-01-01.csv`.' >>"$work/tree/docs/measurements.md"
if out=$("$cli" figures --check --root "$work/tree" 2>&1); then
	bad "a missing CSV named: the check passed"
elif grep -q "docs/measurements.md names real-2000-01-01.csv, which is not in docs/data" <<<"$out"; then
	ok "a missing CSV named: the check fails, naming it"
else
	bad "a missing CSV named: $out"
fi
finish

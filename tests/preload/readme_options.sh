#!/usr/bin/env bash
# README.md's option reference must be the one generated from the table.
# Usage: readme_options.sh OPTIONS_DOC_BINARY README
set -u
gen=$("$1")
doc=$(sed -n '/<!-- options:begin -->/,/<!-- options:end -->/p' "$2" | sed '1d;$d')
if [ "$gen" = "$doc" ]; then echo "1 passed, 0 failed"; exit 0; fi
echo "README.md's option reference is stale; run scripts/options-doc.sh"
diff <(echo "$gen") <(echo "$doc")
echo "0 passed, 1 failed"
exit 1

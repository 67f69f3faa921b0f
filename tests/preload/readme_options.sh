#!/usr/bin/env bash
# docs/options.md's option reference must be the one generated from the
# table (scripts/options-doc.sh writes it there and into README.md).
# Usage: readme_options.sh OPTIONS_DOC_BINARY DOCS_OPTIONS_MD
set -u
gen=$("$1")
doc=$(sed -n '/<!-- options:begin -->/,/<!-- options:end -->/p' "$2" | sed '1d;$d')
if [ "$gen" = "$doc" ]; then echo "1 passed, 0 failed"; exit 0; fi
echo "docs/options.md's option reference is stale; run scripts/options-doc.sh"
diff <(echo "$gen") <(echo "$doc")
echo "0 passed, 1 failed"
exit 1

#!/usr/bin/env bash
# Regenerates README.md's option reference from the option table.
set -eu
cd "$(dirname "$0")/.."
scripts/build.sh build >/dev/null
python3 - build/options_doc README.md <<'PY'
import subprocess, sys
gen = subprocess.run([sys.argv[1]], capture_output=True, text=True, check=True).stdout
text = open(sys.argv[2]).read()
a, b = "<!-- options:begin -->\n", "<!-- options:end -->"
i, j = text.index(a) + len(a), text.index(b)
open(sys.argv[2], "w").write(text[:i] + gen + text[j:])
PY

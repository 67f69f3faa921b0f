#!/usr/bin/env bash
# Regenerates the option reference from the option table: docs/options.md's
# (which a test checks) and README.md's.
set -eu
cd "$(dirname "$0")/.."
scripts/build.sh build >/dev/null
python3 - build/options_doc docs/options.md README.md <<'PY'
import subprocess, sys
gen = subprocess.run([sys.argv[1]], capture_output=True, text=True, check=True).stdout
a, b = "<!-- options:begin -->\n", "<!-- options:end -->"
for path in sys.argv[2:]:
    text = open(path).read()
    i, j = text.index(a) + len(a), text.index(b)
    open(path, "w").write(text[:i] + gen + text[j:])
PY

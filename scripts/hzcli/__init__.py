"""The hugezero command's modules: stats (the arms' statistics, as the
library computes them), merge (per-process reports into one), plot (SVG
charts) and commands (run, report, info, bench)."""

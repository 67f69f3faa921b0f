"""The hugezero command's modules: stats (the arms' statistics, as the
library computes them), merge (per-process reports into one), plot (SVG
charts), harness (what the suites share), suite, real and idle (the
workload, real-program and idle-gap suites) and commands (run, report,
info, bench, suite, idle)."""

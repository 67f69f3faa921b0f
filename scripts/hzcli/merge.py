"""Per-process JSON reports (HUGEZERO_STATS_FORMAT=json) merged into one:
counters and size classes summed, the arms' raw sums and histograms added
(so the statistics are computed afresh on the whole), call sites summed by
their first three frames; and each process's own figures kept apart by its
mode (HUGEZERO_PROCESS_AB), for modes.py."""
import json
import sys


def load(path):
    """One report, or None (said on stderr) when it cannot be read."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        print("hugezero report: skipping %s: %s" % (path, e), file=sys.stderr)
        return None


# The process's own figures, one value a process (modes.py compares them).
PROCESS_FIGURES = ("process.minor_faults", "process.cpu_time_ns", "process.rss_bytes", "process.peak_rss_bytes")


def merge(files):
    """The reports in files merged; "modes": {mode: {figure: [value per
    process]}} for the reports that state their mode, a figure only where
    the process's report has it."""
    m = {"processes": 0, "counters": {}, "classes": {}, "ab": {}, "callsites": {}, "modes": {}}
    for path in files:
        rep = load(path)
        if rep is None:
            continue
        m["processes"] += 1
        for k, v in rep.get("counters", {}).items():
            m["counters"][k] = m["counters"].get(k, 0) + v
        if rep.get("mode") in ("on", "off"):
            mode = m["modes"].setdefault(rep["mode"], {})
            for k in PROCESS_FIGURES:
                if k in rep.get("counters", {}):
                    mode.setdefault(k, []).append(rep["counters"][k])
        for op, cells in rep.get("classes", {}).items():
            for c in cells:
                cur = m["classes"].setdefault((op, c["min"]), [0, 0])
                cur[0] += c["calls"]
                cur[1] += c["bytes"]
        for e in rep.get("ab", []):
            cur = m["ab"].setdefault((e["op"], e["min"]),
                                     {arm: {"calls": 0, "bytes": 0, "ns": 0.0, "ns2": 0.0, "hist": {}}
                                      for arm in "AB"})
            for arm in "AB":
                for f in ("calls", "bytes", "ns", "ns2"):
                    cur[arm][f] += e[arm][f]
                for lo, n in e[arm]["hist"]:
                    cur[arm]["hist"][lo] = cur[arm]["hist"].get(lo, 0) + n
        for s in rep.get("callsites", []):
            frames = s["frames"]
            key = " <- ".join("%s+0x%x" % (f["function"] or "?", f["offset"]) for f in frames[:3])
            cur = m["callsites"].setdefault(key, [0, 0, frames])
            cur[0] += s["calls"]
            cur[1] += s["bytes"]
    return m

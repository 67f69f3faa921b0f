"""The modes of HUGEZERO_PROCESS_AB side by side: per mode (off, glibc's
way for everything; on, hugezero's) the processes and the median and mean
of each of the process's own figures, then the on/off ratio of the means
with its 95% interval and verdict (stats.compare_means). `hugezero report`
computes them from JSON reports (merge.py: each process's figures over its
life up to its report); `hugezero fleet` prints those the recording rules
made over a window (rules.process_rules)."""
import statistics

from .stats import compare_means

MODES = ("off", "on")
# A JSON report's figures: (counter, the table's name, its unit per count).
REPORT_FIGURES = (("process.minor_faults", "minor faults", 1),
                  ("process.cpu_time_ns", "CPU seconds", 1e-9),
                  ("process.rss_bytes", "RSS MiB", 2 ** -20),
                  ("process.peak_rss_bytes", "peak RSS MiB", 2 ** -20))
# The recorded figures (rules.PROCESS_FIGURES), the same way.
FLEET_FIGURES = (("minor_faults_per_second", "minor faults/s", 1),
                 ("cpu_seconds_per_second", "CPU cores", 1),
                 ("rss_bytes", "RSS MiB (mean)", 2 ** -20),
                 ("peak_rss_bytes", "peak RSS MiB", 2 ** -20))
VERDICTS = {1: "on higher", -1: "on lower", 0: "no difference"}


def report_rows(modes):
    """print_table's rows from merge's modes ({mode: {counter: [value per
    process]}}), the comparison computed here."""
    rows = []
    for counter, name, unit in REPORT_FIGURES:
        values = {m: [v * unit for v in modes.get(m, {}).get(counter, [])] for m in MODES}
        row = {"figure": name, "cmp": compare_means(values["on"], values["off"])}
        for m, xs in values.items():
            row[m] = {"n": len(xs), "median": statistics.median(xs) if xs else None,
                      "mean": sum(xs) / len(xs) if xs else None}
        rows.append(row)
    return rows


def number(x):
    """x in a column of 10: whole above 1000, else 4 significant digits."""
    if x is None:
        return "-"
    return "%.0f" % x if abs(x) >= 1000 else "%.4g" % x


def print_table(rows, over):
    """The modes' table: per figure, each mode's processes, median and mean,
    then on/off [95% interval] and the verdict ("not enough processes" below
    2 a mode). over says what each process's figure covers."""
    print("\nprocesses by mode (off: glibc's way for everything, on: hugezero's), each process's figures %s"
          % over)
    print("on/off: the ratio of the modes' means, its 95% interval by the delta method")
    print("%-15s | %5s %10s %10s | %5s %10s %10s | %-22s %s" % (
        "figure", "off n", "median", "mean", "on n", "median", "mean", "on/off [95% interval]", "verdict"))
    for r in rows:
        line = "%-15s |" % r["figure"]
        for m in MODES:
            line += " %5d %10s %10s |" % (r[m]["n"], number(r[m]["median"]), number(r[m]["mean"]))
        if r["cmp"]:
            line += " %.3f [%.3f, %.3f]   %s" % tuple(r["cmp"])
        else:
            line += " %-22s %s" % ("-", "not enough processes")
        print(line)


def print_modes(m):
    """hugezero report's part: the modes' table, when the merged reports
    (merge.merge's m) hold processes of both modes."""
    if all(m.get("modes", {}).get(k) for k in MODES):
        print_table(report_rows(m["modes"]), "over its life up to its report")

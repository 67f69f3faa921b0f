"""The background zeroer's benchmark: bench/idle_bench's request loop
(calloc + a write to every page of SIZE bytes, then free, keep, or free
and malloc_trim (fresh memory every time, the process not growing), then
an idle gap) under glibc, jemalloc, mimalloc, tcmalloc, and hugezero without
its zeroer (HUGEZERO_BACKGROUND=0, "hz-nobg") and with it ("hugezero"),
one process per (case, allocator), in a new random order in every case of
every repetition, as the suite runs. Medians over the repetitions of each
process's median and p99 latency, CPU time (all threads') and peak RSS go
to a table, a CSV and an SVG chart; every run to the raw CSV."""
import os
import subprocess
import time

from . import plot
from .harness import Ctx, alternate, bench_output, fmt, median, ratio, write_csv

ALLOCS = ("glibc", "jemalloc", "mimalloc", "tcmalloc", "hz-nobg", "hugezero")
FIGURES = ("median_us", "p99_us", "cpu_s", "peak_rss_kib")


def requests(size, mode):
    """Enough requests for a p99 while a kept run stays within 1 GiB."""
    mib = int(size[:-1]) << (10 if size[-1] == "G" else 0)
    return max(4, min(50, 1024 // mib)) if mode == "keep" else 50 if mib < 256 else 20


CASES = [(size, mode, gap) for size in ("4M", "32M", "256M") for mode in ("free", "keep", "trim")
         for gap in (0, 1, 2, 5)]


def case_name(c):
    return "%s %s %dms" % c


def run_one(ctx, alloc, case):
    size, mode, gap = case
    env = ctx.env("hugezero" if alloc == "hz-nobg" else alloc)
    if alloc == "hz-nobg":
        env["HUGEZERO_BACKGROUND"] = "0"
    cmd = [os.path.join(ctx.bench, "idle_bench"), size, mode, str(gap), str(requests(size, mode))]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError("exit %d: %s" % (p.returncode, p.stderr.strip()[-200:]))
    kv = bench_output(p.stdout, ctx, "hugezero" if alloc == "hz-nobg" else alloc)
    return {k: float(kv[k][1]) for k in FIGURES}


def run_idle(lib, reps, out_dir, only=None):
    ctx = Ctx(lib)
    cases = [c for c in CASES if not only or any(case_name(c).startswith(o) for o in only)]
    os.makedirs(out_dir, exist_ok=True)
    start = time.time()
    try:
        runs = alternate(cases, reps, lambda c, a: run_one(ctx, a, c), case_name, ALLOCS)
    finally:
        ctx.close()
    raw = [dict(rep=rep, case=case_name(c), allocator=a, error=err, **(res or {})) for rep, c, a, res, err in runs]
    write_csv(os.path.join(out_dir, "idle.raw.csv"), ("rep", "case", "allocator") + FIGURES + ("error",), raw, "%r")
    return summarize(raw, cases, reps, time.time() - start, out_dir)


def summarize(raw, cases, reps, seconds, out_dir):
    rows = []
    for c in cases:
        name = case_name(c)
        row = {"case": name}
        for a in ALLOCS:
            for k in FIGURES:
                row["%s_%s" % (a, k)] = median([r[k] for r in raw if r["case"] == name and
                                                r["allocator"] == a and not r["error"]])
            row[a] = row[a + "_median_us"]  # the chart's figure
        q = lambda a, b, k="median_us": (row["%s_%s" % (a, k)] / row["%s_%s" % (b, k)]
                                        if row["%s_%s" % (a, k)] and row["%s_%s" % (b, k)] else None)
        row["hz_over_tcmalloc"] = q("hugezero", "tcmalloc")
        row["hz_over_glibc"] = q("hugezero", "glibc")
        row["hz_over_nobg"] = q("hugezero", "hz-nobg")
        row["hz_p99_over_nobg"] = q("hugezero", "hz-nobg", "p99_us")
        row["hz_cpu_over_nobg"] = q("hugezero", "hz-nobg", "cpu_s")
        a, b = row["hugezero_peak_rss_kib"], row["hz-nobg_peak_rss_kib"]
        row["hz_rss_over_nobg_mib"] = (a - b) / 1024 if a and b else None
        rows.append(row)
    fields = list(rows[0].keys()) if rows else ["case"]
    write_csv(os.path.join(out_dir, "idle.csv"), fields, rows)
    plot.alloc([{k: ("" if v is None else v) for k, v in r.items()} for r in rows],
               os.path.join(out_dir, "idle.svg"), ALLOCS)
    print("medians of %d repetitions; %.0f s. calloc + touch latency in us (median of each run's median, "
          "then of its p99); CPU s; peak RSS MiB" % (reps, seconds))
    print("\n%-16s" % "median us" + "".join(" %9s" % a for a in ALLOCS) +
          " %6s %6s %6s" % ("hz/tc", "hz/gl", "hz/nobg"))
    for r in rows:
        print("%-16s" % r["case"] + "".join(" %9s" % fmt(r[a + "_median_us"]) for a in ALLOCS) +
              " %6s %6s %6s" % (ratio(r["hz_over_tcmalloc"]), ratio(r["hz_over_glibc"]), ratio(r["hz_over_nobg"])))
    for k, title, extra in (("p99_us", "p99 us", "hz_p99_over_nobg"), ("cpu_s", "CPU s", "hz_cpu_over_nobg"),
                            ("peak_rss_kib", "peak RSS MiB", "hz_rss_over_nobg_mib")):
        print("\n%-16s" % title + "".join(" %9s" % a for a in ALLOCS) + " %8s" %
              ("hz/nobg" if k != "peak_rss_kib" else "hz-nobg"))
        for r in rows:
            v = lambda a: r["%s_%s" % (a, k)]
            print("%-16s" % r["case"] + "".join(
                " %9s" % fmt(v(a) / 1024 if k == "peak_rss_kib" and v(a) else v(a)) for a in ALLOCS) +
                " %8s" % (ratio(r[extra]) if k != "peak_rss_kib" else fmt(r[extra])))
    print("\nCSV: %s, every run: %s, chart: %s" % (os.path.join(out_dir, "idle.csv"),
                                                  os.path.join(out_dir, "idle.raw.csv"),
                                                  os.path.join(out_dir, "idle.svg")))
    return rows

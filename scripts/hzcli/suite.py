"""The workload suite: every case under glibc (no preload), jemalloc,
mimalloc, tcmalloc and hugezero (LD_PRELOAD of Debian's packages and the
built library), and hugezero over mimalloc (HUGEZERO_SMALL=next, mimalloc
preloaded after it: its memset and large blocks, mimalloc's small ones), one process per (case, allocator), the allocators in a new
random order in every case of every repetition (this machine is shared
and noisy). Medians over the repetitions go to a table on stdout, a CSV and
an SVG chart; every single run to the raw CSV beside it.

Every case's figure is a time, lower is better: the benchmarks' own (ns or
us per operation), a real program's wall time, or a server's time per
request (1 / requests per second). Peak RSS is the process's (the
server's, for redis and PostgreSQL). Each case checks that its allocator
served it: the benchmarks print whose malloc they call."""
import os
import re
import subprocess
import sys
import time

from . import plot
from .harness import (ALLOCS, HZ_OVER_MI, PEERS, Ctx, alternate, bench_output, fmt, initdb, median, peak_rss_of, pg_dir,
                      postgres_server, ratio, redis_server, run_program, sort_input, write_csv)


def run_timed(cmd, env):
    """Runs cmd; returns (wall seconds, stdout). Raises on failure."""
    t0 = time.perf_counter()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError("%s: exit %d: %s" % (cmd[0], p.returncode, p.stderr.strip()[-300:]))
    return time.perf_counter() - t0, p.stdout


def bench_case(prog, mode, *args, key=None, env=None):
    """A benchmark of bench/ printing 'malloc_from', 'MODE ... VALUE' (or
    'KEY ... VALUE') and 'peak_rss_kib'; env: settings added to each
    allocator's environment (the library's HUGEZERO_ ones, which only it
    reads)."""
    def run(ctx, alloc):
        _, out = run_timed([os.path.join(ctx.bench, prog), mode] + list(args), dict(ctx.env(alloc), **(env or {})))
        kv = bench_output(out, ctx, alloc)
        return float(kv[key or mode][-1]), int(kv["peak_rss_kib"][1])
    return run


def program_case(argv, stdin_path=None):
    """A real program's wall time (s), and its peak RSS as GNU time reports
    it."""
    def run(ctx, alloc):
        stdin = open(stdin_path(ctx)) if stdin_path else None
        try:
            wall, _, rss, _ = run_program(argv, ctx.env(alloc), stdin=stdin, stdout=subprocess.DEVNULL)
        finally:
            if stdin:
                stdin.close()
        return wall, rss
    return run


def redis_case(size, op):
    """redis-server under the allocator, redis-benchmark (not preloaded)
    against it: us per request for op (SET or GET) with size-byte values.
    Debian's redis-server links jemalloc: its "glibc" run is jemalloc's."""
    n = {100: 200000, 4096: 100000, 50000: 20000}[size]

    def run(ctx, alloc):
        with redis_server(ctx, alloc) as (srv, port, _):
            out = subprocess.run(["redis-benchmark", "-p", str(port), "-q", "--csv", "-t", op.lower(),
                                  "-d", str(size), "-n", str(n), "-r", "100000"],
                                 capture_output=True, text=True, timeout=300).stdout
            m = re.search(r'^"%s","([0-9.]+)"' % op, out, re.M)
            if not m:
                raise RuntimeError("redis-benchmark: %s" % out[-300:])
            rss = peak_rss_of(srv.pid)
            return 1e6 / float(m.group(1)), rss
    return run


def pgbench_case(ctx, alloc):
    """PostgreSQL under the allocator (as the postgres user, which may need
    a copy of the library), pgbench's TPC-B-like load, 4 clients for 5 s:
    ms per transaction; the largest peak RSS of its processes."""
    d = pg_dir(ctx)
    initdb(d + "/data")
    with postgres_server(ctx, alloc, d + "/data") as pg:
        subprocess.run(pg.client("pgbench") + ["-i", "-s", "5", "-q", "postgres"], check=True, capture_output=True)
        bench = subprocess.Popen(pg.client("pgbench") + ["-c", "4", "-j", "2", "-T", "5", "postgres"],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        time.sleep(4.5)  # the backends' peak, while they run
        rss = peak_rss_of(pg.pid)
        out = bench.communicate()[0]
        tps = float(re.search(r"tps = ([0-9.]+)", out).group(1))
        return 1e3 / tps, rss


SQL = ("create table t(id integer primary key, k integer, v blob);"
       "insert into t(k, v) select abs(random()) % 100000, randomblob(200) "
       "from (with recursive c(x) as (select 1 union all select x + 1 from c where x < 300000) select x from c);"
       "create index tk on t(k); select count(*), sum(length(v)) from t where k < 50000;")
NUMPY = ("import numpy as np\n"
         "for i in range(60):\n"
         "    a = np.zeros((2048, 2048)); a += i; b = np.ones(3 << 20) * a.sum(); c = [np.arange(i, i + 64) for _ in range(2000)]\n")

# (name, unit, runner): the figure's unit as the runner returns it.
CASES = [
    ("small 1", "ns", bench_case("alloc_bench", "small", "1")),
    ("small 2", "ns", bench_case("alloc_bench", "small", "2")),
    ("prodcons", "ns", bench_case("churn_bench", "prodcons", "2000000")),
    ("sweep", "ns", bench_case("churn_bench", "sweep", "100000")),
    ("scatter", "ns", bench_case("churn_bench", "scatter", "10000000")),
    ("realloc", "ns", bench_case("churn_bench", "realloc", "2000000")),
    ("large", "us", bench_case("churn_bench", "large", "2000")),
    ("server", "ns", bench_case("threads_bench", "server", "4000000")),
    ("scratch", "ns", bench_case("threads_bench", "scratch", "200000")),
    ("grow", "ns", bench_case("threads_bench", "grow", "2000000")),
    ("leak", "ns", bench_case("threads_bench", "leak", "4000000")),
    # After mimalloc-bench's xmalloc-test, mleak/mstress and glibc-bench's
    # simple case: every block freed by another thread, threads that live
    # for a block, bursts of one size.
    ("batches", "ns", bench_case("threads_bench", "batches", "20000000")),
    ("threads", "ns", bench_case("threads_bench", "threads", "20000")),
    ("bursts", "ns", bench_case("threads_bench", "bursts", "50000000")),
    # 4 threads, 8 B to 4 MiB, most blocks freed by another thread.
    ("mixed", "ns", bench_case("threads_bench", "mixed", "400000")),
    ("memset 0", "ns", bench_case("churn_bench", "memset0", "20000000")),
    ("memset varying", "ns", bench_case("churn_bench", "memsetv", "20000000")),
    # Fresh memory: a first touch of every page, of 1% of them, and a
    # malloc the program clears itself; beside them the populate floors of
    # the same sizes (MADV_POPULATE_WRITE of a fresh mapping, huge pages
    # asked for; small pages and a touch of each after), measured in each
    # allocator's process; and hugezero without huge pages (HUGEZERO_THP=0,
    # which the others do not read).
    ("calloc fresh 32M", "ns", bench_case("alloc_bench", "fresh", "32M")),
    ("floor 32M", "ns", bench_case("alloc_bench", "floor", "32M", "16")),
    ("calloc fresh 256M", "ns", bench_case("alloc_bench", "fresh", "256M")),
    ("floor 256M", "ns", bench_case("alloc_bench", "floor", "256M", "3")),
    ("floor4k+touch 256M", "ns", bench_case("alloc_bench", "floor", "256M", "3", key="floor4k_touch")),
    ("calloc fresh 256M 4K", "ns", bench_case("alloc_bench", "fresh", "256M", env={"HUGEZERO_THP": "0"})),
    ("calloc fresh 1G", "ns", bench_case("alloc_bench", "fresh", "1G", "3")),
    ("floor 1G", "ns", bench_case("alloc_bench", "floor", "1G", "3")),
    ("calloc sparse 256M", "ns", bench_case("alloc_bench", "sparse", "256M")),
    ("malloc+memset 256M", "ns", bench_case("alloc_bench", "zeroes", "256M")),
    ("calloc loop 32M", "ns", bench_case("alloc_bench", "loop", "32M")),
    ("calloc loop 256M", "ns", bench_case("alloc_bench", "loop", "256M")),
    ("sort", "s", program_case(["sort", "-n", "-o", "/dev/null"], sort_input)),
    ("sqlite3", "s", program_case(["sqlite3", ":memory:", SQL])),
    ("numpy", "s", program_case(["/usr/bin/python3", "-c", NUMPY])),
    ("redis 100B SET", "us/req", redis_case(100, "SET")),
    ("redis 100B GET", "us/req", redis_case(100, "GET")),
    ("redis 4KB SET", "us/req", redis_case(4096, "SET")),
    ("redis 4KB GET", "us/req", redis_case(4096, "GET")),
    ("redis 50KB SET", "us/req", redis_case(50000, "SET")),
    ("redis 50KB GET", "us/req", redis_case(50000, "GET")),
    ("pgbench", "ms/tx", pgbench_case),
]


SUITE_ALLOCS = ALLOCS + (HZ_OVER_MI,)


def run_suite(lib, reps, out_dir, only=None):
    ctx = Ctx(lib)
    missing = ctx.missing()
    if missing:
        sys.exit("hugezero suite: not installed: %s (scripts/deps.sh installs them)" % ", ".join(missing))
    cases = [c for c in CASES if not only or any(c[0].startswith(o) for o in only)]
    os.makedirs(out_dir, exist_ok=True)
    start = time.time()
    try:
        runs = alternate(cases, reps, lambda c, a: c[2](ctx, a), allocs=SUITE_ALLOCS)
    finally:
        ctx.close()
    raw = [(rep, c[0], c[1], a) + (res if res else ("", "")) + (err,) for rep, c, a, res, err in runs]
    write_csv(os.path.join(out_dir, "suite.raw.csv"),
              ("rep", "case", "unit", "allocator", "value", "peak_rss_kib", "error"), raw, "%r")
    return summarize(raw, cases, reps, time.time() - start, out_dir)


def summarize(raw, cases, reps, seconds, out_dir):
    rows = []
    for name, unit, _ in cases:
        row = {"case": name, "unit": unit}
        for a in SUITE_ALLOCS:
            vals = [r[4] for r in raw if r[1] == name and r[3] == a and r[4] != ""]
            rss = [r[5] for r in raw if r[1] == name and r[3] == a and r[5] != ""]
            row[a] = median(vals)
            row[a + "_rss_kib"] = median(rss)
            row[a + "_failed"] = sum(1 for r in raw if r[1] == name and r[3] == a and r[4] == "")
        others = [(row[a], a) for a in PEERS if row[a] is not None]
        best = min(others) if others else (None, "")
        hz = row["hugezero"]
        row["fastest_other"] = best[1]
        row["hugezero_over_fastest"] = hz / best[0] if hz and best[0] else None
        row["hugezero_over_glibc"] = hz / row["glibc"] if hz and row["glibc"] else None
        row["hugezero_over_jemalloc"] = hz / row["jemalloc"] if hz and row["jemalloc"] else None
        hm = row[HZ_OVER_MI]
        row["hz_mimalloc_over_mimalloc"] = hm / row["mimalloc"] if hm and row["mimalloc"] else None
        rs = sorted(row[a + "_rss_kib"] for a in PEERS if row[a + "_rss_kib"])
        row["rss_over_median"] = (row["hugezero_rss_kib"] / median(rs)
                                  if rs and row["hugezero_rss_kib"] else None)
        rows.append(row)
    fields = (["case", "unit"] + list(SUITE_ALLOCS) + ["fastest_other", "hugezero_over_fastest",
              "hugezero_over_glibc", "hugezero_over_jemalloc", "hz_mimalloc_over_mimalloc"] +
              [a + "_rss_kib" for a in SUITE_ALLOCS] + ["rss_over_median"] + [a + "_failed" for a in SUITE_ALLOCS])
    write_csv(os.path.join(out_dir, "suite.csv"), fields, rows)
    plot.alloc([{k: ("" if v is None else v) for k, v in r.items()} for r in rows],
               os.path.join(out_dir, "suite.svg"), SUITE_ALLOCS)
    print("medians of %d repetitions, allocators in random order each time; %.0f s" % (reps, seconds))
    print("times (lower is better); hz/x: hugezero's time over x's; RSS: peak, MiB\n")
    print("%-17s %-6s" % ("case", "unit") + "".join(" %9s" % a[:9] for a in SUITE_ALLOCS) +
          " %10s %7s %7s %7s %7s" % ("hz/fastest", "hz/glib", "hz/jem", "hzmi/mi", "rss/med"))
    for r in rows:
        print("%-17s %-6s" % (r["case"], r["unit"]) + "".join(" %9s" % fmt(r[a]) for a in SUITE_ALLOCS) +
              " %10s %7s %7s %7s %7s" % (ratio(r["hugezero_over_fastest"]) + " " + r["fastest_other"][:2],
                                         ratio(r["hugezero_over_glibc"]), ratio(r["hugezero_over_jemalloc"]),
                                         ratio(r["hz_mimalloc_over_mimalloc"]), ratio(r["rss_over_median"])))
    print("\npeak RSS, MiB")
    for r in rows:
        print("%-17s %-6s" % (r["case"], "MiB") + "".join(
            " %9s" % ("-" if r[a + "_rss_kib"] is None else "%.1f" % (r[a + "_rss_kib"] / 1024)) for a in SUITE_ALLOCS))
    print("\nCSV: %s, every run: %s, chart: %s" % (os.path.join(out_dir, "suite.csv"),
                                                  os.path.join(out_dir, "suite.raw.csv"),
                                                  os.path.join(out_dir, "suite.svg")))
    return rows

"""hugezero figures: the figures table of README.md and docs/measurements.md,
written from the CSVs in docs/data.

FIGURES below is the table's definition: a row per figure, each naming its
CSV, how its rows are picked and how the figure is computed from them. The
table goes between the lines MARK_BEGIN and MARK_END of both files:
`figures` prints it, `figures --write` writes it there, `figures --check`
fails (exit 1) where either file differs from what the CSVs give, naming
the rows that differ, or where either file names a CSV of docs/data that
is not there. It needs Python's standard library only."""
import csv
import difflib
import os
import re
import sys

MARK_BEGIN = "<!-- figures:begin -->"
MARK_END = "<!-- figures:end -->"
FILES = ("README.md", os.path.join("docs", "measurements.md"))
DATA = os.path.join("docs", "data")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))

PEERS = ("glibc", "jemalloc", "mimalloc", "tcmalloc")
# hugezero's speed over another's, rounded to 2 decimals, below which a row
# says behind and above which ahead
BEHIND, AHEAD = 0.98, 1.02
RSS_OVER = 1.10  # peak RSS over glibc's from which the summary names the row

# The machine of each day's CSVs.
MACHINES = {
    "2026-12-05": "the 2-core AMD EPYC (Zen 5) VM, Linux 6.18",
    "2026-12-06": "a 2-core Intel Xeon VM (AVX-512; slow memory: 9 GB/s for a `rep stosb` of 128 MiB)",
    "2026-12-07": "the 2-core AMD EPYC VM, Linux 6.18, whose CPUID that day showed no AVX-512 (AVX2, ERMS, "
                  "FSRM, CLZERO): memset's small sizes ran the AVX2 front end",
}

# Each CSV the table reads: what it measured, and a command that measures
# it again (the benchmarks built with -DHZ_BENCH=ON).
SOURCES = {
    "real-2026-12-06d.csv": ("the real-program suite, 3 runs", 'scripts/hugezero suite --real --reps 3 --cases numpy '
                             'redis pgbench calloc "new[]" java mariadb --compress-mb 30'),
    "real-2026-12-06c.csv": ("the real-program suite, 3 runs, zstd and xz of 30 MiB",
                             "scripts/hugezero suite --real --reps 3 --compress-mb 30"),
    "suite-2026-12-05.csv": ("the workload suite, 3 runs", "scripts/hugezero suite --reps 3"),
    "suite-2026-12-07.csv": ("the workload suite's cases of the table, 5 runs",
                             'scripts/hugezero suite --reps 5 --cases small prodcons realloc large "memset 0"'),
    "suite-memset-2026-12-07.csv": ("the workload suite's small memset case, 15 runs",
                                    'scripts/hugezero suite --reps 15 --cases "memset 0"'),
    "suite-fresh-2026-12-05b.csv": ("the workload suite's fresh-memory cases",
                                    'scripts/hugezero suite --reps 3 --cases "calloc fresh 256M" malloc+memset'),
    "memset-learn-2026-12-06.csv": ("memset_bench: each figure the median of 5 runs alternating glibc, "
                                    "every kernel and hugezero, on a prefaulted buffer",
                                    "build/bench/memset_bench --reps 5"),
    "block-memset-2026-12-06.csv": ("block_memset: memset of a malloc'd block, glibc and hugezero alternated; "
                                    "the rows of the learnt configuration, median of its 3 rounds",
                                    "build/bench/block_memset --reps 5"),
    "calloc-learnt-2026-12-06.csv": ("calloc_bench: glibc's calloc and the library's large path in one process, "
                                     "alternated; the rows of this library, median of 3 rounds",
                                     "build/bench/calloc_bench --reps 9"),
}


class Figure:
    """A row of the table. read(rows) gives {allocator: (figure, faults,
    peak RSS KiB)} from the CSV's rows; others: the allocators that can
    be the best other; note: a mark after glibc's figure."""

    def __init__(self, label, unit, csv_name, higher, read, others=PEERS, note=""):
        self.label, self.unit, self.csv, self.higher = label, unit, csv_name, higher
        self.read, self.others, self.note = read, others, note


def median(v, what):
    v = sorted(v)
    n = len(v)
    if not n:
        raise ValueError("%s: no rows" % what)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def number(s):
    return float(s) if s not in ("", None) else None


def only(rows, **where):
    """The rows whose columns hold these values."""
    return [r for r in rows if all(r[k] == v for k, v in where.items())]


def one(rows, what, **where):
    got = only(rows, **where)
    if len(got) != 1:
        raise ValueError("%s: %d rows where %s, not 1" % (what, len(got), where))
    return got[0]


def real(case, label, unit, higher, csv_name, note=""):
    """A case of the real-program suite's CSV (one row per case: each
    allocator's median figure, faults and peak RSS in KiB)."""
    def read(rows):
        r = one(rows, case, case=case)
        return {a: (number(r[a]), number(r[a + "_faults"]), number(r[a + "_rss_kib"])) for a in PEERS + ("hugezero",)}
    f = Figure(label, unit, csv_name, higher, read, note=note)
    f.case = case
    return f


def kind(s):
    return "behind" if behind(s) else "ahead" if round(s, 2) > AHEAD else "level"


def disagree(root, f, sg):
    """For a real-program row: its speed over glibc in the other
    real-program suite CSVs of its day that have its case, when one of
    them says the opposite of sg (ahead against behind): [(CSV, speed)]."""
    got = []
    for name in sorted(os.listdir(os.path.join(root, DATA))):
        if not (name.startswith("real-") and name.endswith(".csv") and not name.endswith(".raw.csv")) or \
                name == f.csv or day(name) != day(f.csv):
            continue
        for r in only(read_csv(root, name), case=f.case):
            g, h = number(r.get("glibc")), number(r.get("hugezero"))
            if g and h:
                got.append((name, h / g if f.higher else g / h))
    kinds = {kind(sg)} | {kind(v) for _, v in got}
    return got if {"ahead", "behind"} <= kinds else []


def workload(case, scale=1.0):
    """A case of the workload suite's CSV (one row per case: each
    allocator's median time, its peak RSS in KiB; no faults)."""
    def read(rows):
        r = one(rows, case, case=case)
        return {a: (number(r[a]) * scale, None, number(r[a + "_rss_kib"])) for a in PEERS + ("hugezero",)}
    return read


def memset_bench(size, glibc, hugezero):
    """memset_bench's CSV: one row per (size, variant), its figure in the
    gbps column (ns for the random sizes' rows)."""
    def read(rows):
        return {a: (float(one(rows, size, size=size, variant=v)["gbps"]), None, None)
                for a, v in (("glibc", glibc), ("hugezero", hugezero))}
    return read


def block_memset(size):
    """block_memset's CSV: per configuration, round and size, glibc's and
    hugezero's GB/s (its 'learning' rows are the untimed fills' ms)."""
    def read(rows):
        runs = [r for r in only(rows, config="learnt", size=size) if r["glibc_gbps_or_learning"] != "learning"]
        return {"glibc": (median([float(r["glibc_gbps_or_learning"]) for r in runs], size), None, None),
                "hugezero": (median([float(r["hugezero_gbps_or_ms"]) for r in runs], size), None, None)}
    return read


def calloc_bench(case, size):
    """calloc_bench's CSV: per library, round, case and size, glibc's ms
    (first) and the library's (second)."""
    def read(rows):
        runs = only(rows, library="after", case=case, size=size)
        return {"glibc": (median([float(r["first_ms"]) for r in runs], case), None, None),
                "hugezero": (median([float(r["second_ms"]) for r in runs], case), None, None)}
    return read


REDIS = "\u2020"  # a dagger after Redis's glibc figure: see the note under the table
R6D, R6C = "real-2026-12-06d.csv", "real-2026-12-06c.csv"
SUITE, FRESH = "suite-2026-12-07.csv", "suite-fresh-2026-12-05b.csv"
SMALL_MEMSET = "suite-memset-2026-12-07.csv"
MEMSET, BLOCK, CALLOC = "memset-learn-2026-12-06.csv", "block-memset-2026-12-06.csv", "calloc-learnt-2026-12-06.csv"
ONLY_GLIBC = ("glibc",)
FIGURES = (
    [real("redis %s %s" % (op, size), "Redis %s, %s values" % (op, size.replace("KB", " KB")), "req/s", True, R6D,
          REDIS) for size in ("1KB", "50KB", "500KB") for op in ("SET", "GET", "LPUSH", "LRANGE_100")] + [
        real("pgbench", "PostgreSQL pgbench, TPC-B-like, 4 clients", "tps", True, R6D),
        real("pg ORDER BY 2M", "PostgreSQL ORDER BY of 2 M rows", "s", False, R6C),
        real("mariadb oltp_read_write", "MariaDB sysbench oltp_read_write, 4 threads", "tps", True, R6D),
        real("mariadb sort", "MariaDB ORDER BY of 2 M rows, 3 times", "s", False, R6D),
        real("sqlite3 zeroblob", "sqlite3, 400 zeroblobs of 1 MiB, VACUUM", "s", False, R6C),
        real("numpy 20x128M", "numpy, 20 arrays of 128 MiB zeroed, filled and summed", "s", False, R6D),
        real("python dicts", "Python, large dicts and lists", "s", False, R6C),
        real("java direct 8M", "Java, 8 MiB direct buffers, 4 threads", "s", False, R6D),
        real("new[] 5-25 MiB", "C++ `new char[n]()`, 5-25 MiB, 20 live", "s", False, R6D),
        real("calloc+touch 32M", "calloc+touch+free of a recycled 32 MiB block (alloc_bench)", "ms", False, R6D),
        real("sort -n 2M", "GNU sort -n of 2 M lines", "s", False, R6C),
        real("zstd -19", "zstd -19 of 30 MiB", "s", False, R6C),
        real("xz -9", "xz -9 of 30 MiB", "s", False, R6C),
        Figure("small blocks, 8 B-1 MiB, malloc+free, 1 thread", "ns", SUITE, False, workload("small 1")),
        Figure("small blocks, 8 B-1 MiB, malloc+free, 2 threads", "ns", SUITE, False, workload("small 2")),
        Figure("small blocks freed by another thread", "ns", SUITE, False, workload("prodcons")),
        Figure("realloc growth to 64 KiB (1 in 64 to 16 MiB)", "ns", SUITE, False, workload("realloc")),
        Figure("malloc+memset 0 of 5-25 MiB, 20 live", "us", SUITE, False, workload("large")),
        Figure("fresh calloc+touch of 256 MiB", "ms", FRESH, False, workload("calloc fresh 256M", 1e-6)),
        Figure("fresh malloc+memset of 256 MiB", "ms", FRESH, False, workload("malloc+memset 256M", 1e-6)),
        Figure("memset of 1-256 B at random offsets, through the PLT (churn_bench)", "ns", SMALL_MEMSET, False,
               workload("memset 0"), ONLY_GLIBC),
        Figure("memset of 1-256 B at random offsets, called directly (memset_bench)", "ns", MEMSET, False,
               memset_bench("random1-256", "glibc_ns", "hugezero_ns"), ONLY_GLIBC),
        Figure("memset of 32 MiB, prefaulted", "GB/s", MEMSET, True, memset_bench("33554432", "glibc", "hugezero"),
               ONLY_GLIBC),
        Figure("memset of 64 MiB, prefaulted", "GB/s", MEMSET, True, memset_bench("67108864", "glibc", "hugezero"),
               ONLY_GLIBC),
        Figure("memset of 256 MiB, prefaulted", "GB/s", MEMSET, True, memset_bench("268435456", "glibc", "hugezero"),
               ONLY_GLIBC),
        Figure("memset of a malloc'd 64 MiB block", "GB/s", BLOCK, True, block_memset("67108864"), ONLY_GLIBC),
        Figure("memset of a malloc'd 256 MiB block", "GB/s", BLOCK, True, block_memset("268435456"), ONLY_GLIBC),
        Figure("calloc+touch+free of a recycled 4 MiB block, in one process (calloc_bench)", "ms", CALLOC, False,
               calloc_bench("calloc+touch+free loop", "4194304"), ONLY_GLIBC),
        Figure("calloc+touch+free of a recycled 32 MiB block, in one process (calloc_bench)", "ms", CALLOC, False,
               calloc_bench("calloc+touch+free loop", "33554432"), ONLY_GLIBC),
        Figure("calloc+touch+free of a recycled 256 MiB block, in one process (calloc_bench)", "ms", CALLOC, False,
               calloc_bench("calloc+touch+free loop", "268435456"), ONLY_GLIBC),
    ])


def fmt(v):
    """3 significant digits, whole from 100, thousands separated from 10000."""
    if v is None:
        return "-"
    a = abs(v)
    return ("{:,.0f}".format(v) if a >= 10000 else "%.0f" % v if a >= 100 else "%.1f" % v if a >= 10 else
            "%.2f" % v if a >= 1 else "%.3f" % v if a >= 0.1 else "%.3g" % v)


def day(csv_name):
    m = re.search(r"\d{4}-\d{2}-\d{2}", csv_name)
    return m.group(0) if m else "?"


def read_csv(root, name):
    with open(os.path.join(root, DATA, name), newline="") as f:
        return list(csv.DictReader(f))


def compute(root):
    """[(figure, {allocator: (figure, faults, rss_kib)}, best other or
    None, speed over glibc, speed over the best other)]."""
    cache, out = {}, []
    for f in FIGURES:
        if f.csv not in cache:
            cache[f.csv] = read_csv(root, f.csv)
        vals = f.read(cache[f.csv])
        speed = lambda a: (vals["hugezero"][0] / vals[a][0] if f.higher else vals[a][0] / vals["hugezero"][0])
        others = [a for a in f.others if vals.get(a) and vals[a][0] is not None]
        best = (max if f.higher else min)(others, key=lambda a: vals[a][0]) if f.others != ONLY_GLIBC else None
        out.append((f, vals, best, speed("glibc"), speed(best) if best else None))
    return out


def behind(s):
    return s is not None and round(s, 2) < BEHIND


def verdict(s):
    if s is None:
        return "-"
    return "**%.2f behind**" % s if behind(s) else "%.2f ahead" % s if round(s, 2) > AHEAD else "%.2f level" % s


def three(vals, best, i, scale):
    """glibc / best other / hugezero of column i (1 faults, 2 peak RSS),
    divided by scale."""
    got = [vals[a][i] if a else None for a in ("glibc", best, "hugezero")]
    return "-" if got[0] is None or got[2] is None else " / ".join(fmt(v if v is None else v / scale) for v in got)


def table(root):
    """The text between the marks: the table, the rows where hugezero is
    behind, the machines and the commands."""
    rows = compute(root)
    lines = [
        "<!-- written by `scripts/hugezero figures --write` from docs/data; "
        "`scripts/hugezero figures --check` compares -->",
        "Each figure is a median of runs that alternate the allocators in a new random order, "
        "from the CSV the row names (in `docs/data/`), of the day the row gives. "
        "\"vs glibc\" and \"vs best other\" are hugezero's speed over the other's: its requests/s, tps or GB/s "
        "over the other's, or the other's time over its own; above 1 hugezero is faster. "
        "Rounded to 2 decimals, below %.2f is **behind**, above %.2f ahead, between level. "
        "The best other is the fastest, in the same run, of glibc and Debian 12's jemalloc, mimalloc and tcmalloc "
        "(each preloaded); where a row names none, its benchmark compares hugezero with glibc alone. "
        "Faults: the minor page faults of the measured processes, in thousands; "
        "peak RSS: the CSV's KiB / 1024, in MiB." % (BEHIND, AHEAD),
        "",
        "| case | unit | glibc | best other | hugezero | vs glibc | vs best other "
        "| faults, K: glibc / best other / hugezero | peak RSS, MiB: glibc / best other / hugezero | day | CSV |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for f, vals, best, sg, sb in rows:
        lines.append("| %s | %s | %s%s | %s | %s | %s | %s | %s | %s | %s | `%s` |" % (
            f.label, f.unit, fmt(vals["glibc"][0]), " " + f.note if f.note else "",
            "%s %s" % (fmt(vals[best][0]), best) if best else "-", fmt(vals["hugezero"][0]),
            verdict(sg), verdict(sb), three(vals, best, 1, 1000), three(vals, best, 2, 1024), day(f.csv), f.csv))
    lines += ["", "%s Redis: Debian's `redis-server` is linked with Debian's `libjemalloc.so.2` (jemalloc 5.3.0), "
              "so its glibc column is Redis on that jemalloc, the library its jemalloc column preloads; "
              "the other allocators, preloaded, take its place." % REDIS]
    slow_glibc = ["%s: %.2f" % (f.label, sg) for f, _, _, sg, _ in rows if behind(sg)]
    slow_best = ["%s: %.2f (%s)" % (f.label, sb, best) for f, _, best, _, sb in rows if behind(sb)]
    fat = ["%s: %.2fx" % (f.label, v["hugezero"][2] / v["glibc"][2]) for f, v, _, _, _ in rows
           if v["glibc"][2] and v["hugezero"][2] and v["hugezero"][2] > RSS_OVER * v["glibc"][2]]
    lines += ["", "Where hugezero is behind:", "",
              "- slower than glibc (for Redis, the jemalloc it is linked with): %s;"
              % ("; ".join(slow_glibc) or "none"),
              "- slower than the best other: %s;" % ("; ".join(slow_best) or "none"),
              "- peak RSS above %.2fx glibc's: %s." % (RSS_OVER, "; ".join(fat) or "none"),
              "", "Rows that another real-program suite run of the same day contradicts (one ahead of glibc, "
              "another behind; hugezero over glibc in each): read them as within this machine's noise:", ""]
    flips = [(f, sg, disagree(root, f, sg)) for f, _, _, sg, _ in rows if getattr(f, "case", None)]
    lines += ["- %s: %.2f here; %s." % (f.label, sg, ", ".join("%.2f in `%s`" % (v, n) for n, v in got))
              for f, sg, got in flips if got] or ["- none"]
    lines += ["", "The machines, and the commands that measure again (the benchmarks built with `-DHZ_BENCH=ON`):", ""]
    for d in sorted({day(f.csv) for f in FIGURES}):
        lines.append("- %s: %s." % (d, MACHINES.get(d, "not recorded")))
    for name in sorted({f.csv for f in FIGURES}, key=lambda n: (day(n), n)):
        what, command = SOURCES[name]
        lines.append("- `%s`: %s; `%s`." % (name, what, command))
    return "\n".join(lines)


def region(text, path):
    """(before, the text between the marks, after) of a file's text."""
    b, e = text.find(MARK_BEGIN), text.find(MARK_END)
    if b < 0 or e < b:
        raise ValueError("%s: no %s ... %s" % (path, MARK_BEGIN, MARK_END))
    b += len(MARK_BEGIN)
    return text[:b], text[b:e].strip("\n"), text[e:]


def named_data(text):
    """The docs/data files a text names: data/NAME, or a dated NAME.csv
    (the suites' own outputs, real.csv and the like, are not in docs/data)."""
    names = set(re.findall(r"(?:^|[^\w/.-])data/([\w.+-]+\.(?:csv|txt))", text))
    names |= set(re.findall(r"([\w+-]*\d{4}-\d{2}-\d{2}[\w.+-]*\.(?:csv|txt))", text))
    return names


def check(root):
    """The problems: rows that differ, files named and missing, comment
    lines in CSVs."""
    want = table(root).split("\n")
    problems = []
    for rel in FILES:
        path = os.path.join(root, rel)
        with open(path) as f:
            text = f.read()
        have = region(text, rel)[1].split("\n")
        if have != want:
            diff = list(difflib.unified_diff(want, have, "from docs/data", rel, lineterm="", n=0))
            rows = sorted({l[1:].split("|")[1].strip() for l in diff[2:]
                           if l[:1] in "+-" and l[1:].startswith("| ") and not l[1:].startswith("| ---")})
            problems.append("%s: the figures differ from docs/data%s:\n%s" % (
                rel, " in the rows " + "; ".join("'%s'" % r for r in rows) if rows else "", "\n".join(diff)))
        for name in sorted(named_data(text)):
            if not os.path.exists(os.path.join(root, DATA, name)):
                problems.append("%s names %s, which is not in docs/data" % (rel, name))
    for name in sorted(os.listdir(os.path.join(root, DATA))):
        if name.endswith(".csv"):
            with open(os.path.join(root, DATA, name)) as f:
                if any(l.startswith("#") for l in f):
                    problems.append("docs/data/%s has a comment line" % name)
    return problems


def write(root):
    text = table(root)
    for rel in FILES:
        path = os.path.join(root, rel)
        with open(path) as f:
            before, _, after = region(f.read(), rel)
        with open(path, "w") as f:
            f.write(before + "\n" + text + "\n" + after)
        print("written: %s" % path)


def cmd_figures(args):
    root = args.root or ROOT
    if not os.path.isdir(os.path.join(root, DATA)):
        sys.exit("hugezero figures: no %s under %s (--root: the source tree)" % (DATA, root))
    try:
        if args.write:
            write(root)
            return 0
        if not args.check:
            print(table(root))
            return 0
        problems = check(root)
    except (OSError, ValueError, KeyError, TypeError, ZeroDivisionError) as e:
        sys.exit("hugezero figures: %s: %s" % (type(e).__name__, e))
    for p in problems:
        print(p)
    if problems:
        print("hugezero figures --check: %d problem(s); `scripts/hugezero figures --write` rewrites the tables"
              % len(problems))
        sys.exit(1)
    print("hugezero figures --check: %s agree with docs/data" % " and ".join(FILES))
    return 0


def add_arguments(sub):
    p = sub.add_parser("figures", help="the figures table of README.md and docs/measurements.md, from docs/data")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--write", action="store_true", help="write the table between the marks of both files")
    g.add_argument("--check", action="store_true",
                   help="exit 1 where either file differs from docs/data or names a CSV docs/data lacks")
    p.add_argument("--root", help="the source tree (default: the one this command is in)")
    p.set_defaults(func=cmd_figures)

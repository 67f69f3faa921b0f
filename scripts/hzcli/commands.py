"""The hugezero command's subcommands (scripts/hugezero): run a program
under libhugezero.so, merge its reports, describe this machine, run the
benchmarks."""
import csv
import glob
import os
import platform
import subprocess
import sys

from . import idle, modes, plot, real, resolve, suite
from .merge import merge
from .stats import compare, quantile
from .units import size_name

HERE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))  # scripts/
ROOT = os.path.dirname(HERE)

# The counters the report's summary lists, in the library's names
# (tests/programs/cli.sh checks that a library report has them all).
SUMMARY = ("memset.large.calls", "malloc.large.calls", "calloc.large.calls", "calloc.large.bytes",
           "calloc.large.known_zero_bytes", "purge.batches", "purge.bytes", "purge.fallbacks",
           "hugetlb.chunks", "hugetlb.fallbacks", "malloc.small.calls", "process.peak_rss_bytes")


# Set by the installed command: the library installed with it, and the
# version both were built as.
INSTALLED_LIB = None
VERSION = None


def library(required=True):
    """$HUGEZERO_LIB, the installed library, or the source tree's build."""
    for path in (os.environ.get("HUGEZERO_LIB"), INSTALLED_LIB, os.path.join(ROOT, "build", "libhugezero.so")):
        if path and os.path.isfile(path):
            # The installed one by its SONAME path, as a systemd unit names
            # it; a build by its real file.
            return path if path == INSTALLED_LIB else os.path.realpath(path)
    if required:
        sys.exit("hugezero: libhugezero.so not found (build it with scripts/build.sh, "
                 "or set HUGEZERO_LIB)")
    return None


def library_version(lib):
    """The version the library says it is (its HUGEZERO_VERBOSE line)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HUGEZERO_")}
    env.update(LD_PRELOAD=lib, HUGEZERO_VERBOSE="1")
    r = subprocess.run(["/bin/true"], env=env, capture_output=True, text=True)
    for line in r.stderr.splitlines():
        words = line.replace(";", " ").split()
        if words[:2] == ["hugezero:", "hugezero"] and len(words) > 2:
            return words[2], r.stderr
    return "?", r.stderr


def source_version():
    """The project's version from CMakeLists.txt, for the source tree's command."""
    for line in read(os.path.join(ROOT, "CMakeLists.txt"), "").splitlines():
        if line.startswith("project(hugezero VERSION "):
            return line.split()[2]
    return "?"


def cmd_version(args):
    lib = library(required=False)
    print("hugezero %s" % (VERSION or source_version()))
    if lib:
        print("library: %s (hugezero %s)" % (lib, library_version(lib)[0]))
    else:
        print("library: not found")


# ---- run ----

def cmd_run(args):
    cmd = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not cmd:
        sys.exit("hugezero run: no command (hugezero run [options] -- CMD ARGS...)")
    env = dict(os.environ)
    lib = library()
    # The library first, what was preloaded after it; but a sanitizer's
    # runtime must be the first object of all (ASan aborts otherwise).
    exe = resolve.executable(cmd[0])
    preload = resolve.sanitizer_first(exe, [lib] + env.get("LD_PRELOAD", "").replace(":", " ").split())
    env["LD_PRELOAD"] = ":".join(preload)
    if exe and not args.quiet:
        for line in resolve.describe(cmd[0], lib, preload):
            print("hugezero run: " + line, file=sys.stderr)
    env["HUGEZERO_STATS"] = args.stats
    env["HUGEZERO_STATS_FORMAT"] = args.format
    if args.ab is not None:
        if not 0 <= args.ab <= 1:
            sys.exit("hugezero run: --ab takes a fraction from 0 to 1")
        env["HUGEZERO_AB"] = repr(args.ab)
    if args.process_ab is not None:
        if not 0 <= args.process_ab <= 1:
            sys.exit("hugezero run: --process-ab takes a fraction from 0 to 1")
        env["HUGEZERO_PROCESS_AB"] = repr(args.process_ab)
    if args.callsites:
        env["HUGEZERO_CALLSITES"] = str(args.callsites)
    try:
        os.execvpe(cmd[0], cmd, env)
    except OSError as e:
        sys.exit("hugezero run: %s: %s" % (cmd[0], e.strerror))


# ---- report ----

def ab_rows(ab):
    """The A/B table's rows from merged arms {(op, lo): {arm: {calls, bytes,
    ns, ns2, hist}}}: percentiles from the histograms, the B/A ratio, its
    interval and verdict from the raw sums (stats.py)."""
    rows = []
    for (op, lo), arms in sorted(ab.items()):
        row = {"op": op, "lo": lo, "cmp": compare(arms["A"], arms["B"])}
        for arm in "AB":
            a = arms[arm]
            row[arm] = {"calls": a["calls"], "mean": a["ns"] / a["calls"] if a["calls"] else 0,
                        "p": [quantile(a["hist"], q) for q in (.5, .9, .99)],
                        "gbps": a["bytes"] / a["ns"] if a["ns"] else 0}
        rows.append(row)
    return rows


def print_ab_table(rows):
    """The A/B table: per operation and size class, each arm's calls, mean
    and percentiles (us) and throughput, then B/A [95% interval] and the
    verdict ("not enough calls" below 2 calls an arm). `hugezero fleet`
    prints the same table from Prometheus's recorded series."""
    print("\nA/B arms (A: glibc's way, B: hugezero's); times in microseconds")
    print("%-7s %9s | %7s %9s %9s %9s %9s %6s | %7s %9s %9s %9s %9s %6s | %-22s %s" % (
        "op", "from", "A calls", "mean", "p50", "p90", "p99", "GB/s", "B calls", "mean", "p50",
        "p90", "p99", "GB/s", "B/A [95% interval]", "verdict"))
    for r in rows:
        line = "%-7s %9s |" % (r["op"], size_name(r["lo"]))
        for arm in "AB":
            a = r[arm]
            line += " %7d %9.1f %9.1f %9.1f %9.1f %6.1f |" % (
                a["calls"], a["mean"] / 1e3, a["p"][0] / 1e3, a["p"][1] / 1e3, a["p"][2] / 1e3, a["gbps"])
        if r["cmp"]:
            line += " %.3f [%.3f, %.3f]   %s" % tuple(r["cmp"])
        else:
            line += " %-22s %s" % ("-", "not enough calls")
        print(line)


def print_report(m):
    print("%d process report(s)" % m["processes"])
    c = m["counters"]
    print("\ncalls by size class (all processes)")
    print("%-8s %12s %14s %14s" % ("op", "from", "calls", "bytes"))
    for (op, lo), (calls, nbytes) in sorted(m["classes"].items()):
        print("%-8s %12s %14d %14d" % (op, size_name(lo), calls, nbytes))
    print("\ncounters")
    for k in SUMMARY:
        if k in c:
            print("  %-32s %d" % (k, c[k]))
    modes.print_modes(m)
    if m["ab"]:
        print_ab_table(ab_rows(m["ab"]))
    if m["callsites"]:
        print("\ntop call sites by bytes cleared")
        for key, (calls, nbytes, frames) in sorted(m["callsites"].items(), key=lambda kv: -kv[1][1])[:10]:
            f = frames[0] if frames else {"module": "?", "module_offset": 0, "build_id": ""}
            print("  %14d bytes %9d calls  %s  (%s +0x%x %s)" % (
                nbytes, calls, key, f["module"], f["module_offset"], f["build_id"]))


def cmd_report(args):
    files = [f for pattern in args.files for f in (glob.glob(pattern) or [pattern])]
    m = merge(files)
    if not m["processes"]:
        sys.exit("hugezero report: no readable JSON report (run with --format json)")
    print_report(m)
    if args.svg:
        plot.ab_chart(m, args.svg)
        print("\nchart: %s" % args.svg)


# ---- info ----

def read(path, default="?"):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return default


def info_pid(pid):
    """Whether the library is loaded in process pid, and where its malloc
    and memset go."""
    try:
        exe = os.readlink("/proc/%d/exe" % pid)
        with open("/proc/%d/maps" % pid) as f:
            libs = {l.split()[-1] for l in f if len(l.split()) >= 6}
    except OSError as e:
        sys.exit("hugezero info: process %d: %s" % (pid, e.strerror))
    try:
        with open("/proc/%d/environ" % pid, "rb") as f:
            env = dict(kv.split(b"=", 1) for kv in f.read().split(b"\0") if b"=" in kv)
        preload = env.get(b"LD_PRELOAD", b"").decode(errors="replace").replace(":", " ").split()
    except OSError:
        preload = None
    ours = sorted(l for l in libs if os.path.basename(l).startswith("libhugezero.so"))
    print("process %d: %s" % (pid, exe))
    if not ours:
        print("  hugezero is not loaded (not in its memory map); LD_PRELOAD at its start: %s" % (
            "unreadable" if preload is None else " ".join(preload) or "(none)"))
    else:
        print("  hugezero is loaded: %s" % ", ".join(ours))
    if not ours:
        print("  were it preloaded:")
    for line in resolve.describe(exe, ours[0] if ours else library(), preload if ours and preload else None):
        print(("    " if not ours else "  ") + line)


def cmd_info(args):
    if args.pid is not None:
        return info_pid(args.pid)
    lib = library()
    version, stderr = library_version(lib)
    print("hugezero %s, library: %s" % (version, lib))
    for line in stderr.splitlines():
        print("  " + line.replace("hugezero: ", "", 1))
    meminfo = dict(l.split(":", 1) for l in read("/proc/meminfo", "").splitlines() if ":" in l)
    print("kernel: %s %s" % (platform.system(), platform.release()))
    print("glibc: %s" % " ".join(platform.libc_ver()))
    print("transparent huge pages: %s (defrag %s)" % (
        read("/sys/kernel/mm/transparent_hugepage/enabled"),
        read("/sys/kernel/mm/transparent_hugepage/defrag")))
    print("hugetlb pages: %s total, %s free, size %s" % (
        meminfo.get("HugePages_Total", "?").strip(), meminfo.get("HugePages_Free", "?").strip(),
        meminfo.get("Hugepagesize", "?").strip()))


# ---- bench ----

def cmd_bench(args):
    build = os.path.dirname(library())
    for b in ("memset_bench", "calloc_bench", "release_bench", "alloc_bench", "churn_bench"):
        if not os.access(os.path.join(build, "bench", b), os.X_OK):
            sys.exit("hugezero bench: %s not built (scripts/build.sh build -DHZ_BENCH=ON)"
                     % os.path.join(build, "bench", b))
    os.makedirs(args.out, exist_ok=True)
    runs = [
        ([os.path.join(build, "bench", "memset_bench"), "--reps", str(args.reps),
          "--csv", os.path.join(args.out, "memset_bench.csv")], "the memset kernels against glibc"),
        ([os.path.join(build, "bench", "calloc_bench"), "--reps", str(args.reps),
          "--csv", os.path.join(args.out, "calloc_bench.csv")], "the large-block path against glibc's calloc"),
        ([os.path.join(build, "bench", "release_bench"), "--reps", str(args.reps),
          "--csv", os.path.join(args.out, "release_bench.csv")], "batched release against a madvise loop"),
    ]
    for cmd, what in runs:
        print("== %s: %s" % (what, " ".join(cmd)), flush=True)
        if subprocess.run(cmd).returncode:
            sys.exit("hugezero bench: %s failed" % cmd[0])
    with open(os.path.join(args.out, "memset_bench.csv")) as f:
        rows = list(csv.DictReader(f))
    series = sorted({r["variant"] for r in rows}, key=lambda s: (s != "glibc", s != "hugezero", s))
    plot.lines(rows, "size", "gbps", "variant", series, os.path.join(args.out, "memset_bench.svg"),
               "memset throughput by size (GB/s, median)", "GB/s")
    print("== the workload suite, every allocator", flush=True)
    suite.run_suite(library(), args.reps, args.out)
    print("\nCSV and SVG in %s" % args.out)


# ---- suite ----

def cmd_suite(args):
    reps = args.reps if args.reps is not None else 3 if args.real else 5
    if reps < 1 or args.compress_mb < 1:
        sys.exit("hugezero suite: --reps and --compress-mb need a positive number")
    if args.lib and not os.path.isfile(args.lib):
        sys.exit("hugezero suite: %s: no such library" % args.lib)
    lib = os.path.realpath(args.lib) if args.lib else library()
    if args.real:
        sys.exit(real.run_real(lib, reps, args.out or "hugezero-real", args.cases, args.compress_mb,
                               args.hardened, args.allocators))
    for b in ("alloc_bench", "churn_bench"):
        if not os.access(os.path.join(os.path.dirname(lib), "bench", b), os.X_OK):
            sys.exit("hugezero suite: %s not built (scripts/build.sh build -DHZ_BENCH=ON)" % b)
    suite.run_suite(lib, reps, args.out or "hugezero-suite", args.cases)


# ---- idle: the background zeroer's request loop ----

def cmd_idle(args):
    if args.reps < 1:
        sys.exit("hugezero idle: --reps needs a positive number")
    lib = library()
    if not os.access(os.path.join(os.path.dirname(lib), "bench", "idle_bench"), os.X_OK):
        sys.exit("hugezero idle: idle_bench not built (scripts/build.sh build -DHZ_BENCH=ON)")
    idle.run_idle(lib, args.reps, args.out, args.cases)

"""hugezero compare: a user's own A/B of whole processes. The user's
command (or server and its load) runs under every allocator found on the
system, reps times, the allocators in a new random order each repetition;
each figure's medians and spread, hugezero's ratio to glibc's and to the
best other allocator's with a 95% bootstrap interval, and a verdict.

Program form: each run goes through GNU time (a process of its own, so the
rusage is the command's and its waited-for descendants', not this
interpreter's): wall and CPU seconds, minor faults, peak RSS, exit status;
its standard output must be the same under every allocator.

Server form: the server starts preloaded on a free port ({port} in the
commands; {dir}, a new directory for the run), the ready command (not
preloaded) is polled until it succeeds, the load (not preloaded) runs and
its output gives the metric; the server's minor faults and CPU seconds
during the load and its peak RSS during the load come from /proc (its
processes', alive or reaped); then SIGTERM, and SIGKILL to its whole
session after a bound."""
import hashlib
import itertools
import math
import os
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from . import plot, resolve
from .harness import ALLOCS, Ctx, Load, children, cpu_of, free_port, median, timed, write_csv

BOOT = 4000  # bootstrap resamples
SEED = 1  # the bootstrap's: the same runs give the same interval
SAME = 0.02  # an interval within 1 -+ SAME: the same, whichever side of 1
ALPHA = 0.05  # the rank test's level
SPLITS = 200000  # splits of the pooled runs the test enumerates at most


class RunError(Exception):
    pass


# ---- one run ----

def run_program(argv, env, timeout):
    """argv under env through GNU time: {wall_s, cpu_s, faults, rss_mib,
    status, out} (status: GNU time's own, the command's exit status or 128
    and its signal; out: the hash of standard output)."""
    try:
        wall, figures, out, err, status = timed(argv, env, "%U %S %R %M", timeout=timeout)
    except RuntimeError as e:
        raise RunError(str(e))
    if b"cannot be preloaded" in err:  # ld.so's words for a preload it could not load
        raise RunError(err.decode(errors="replace").strip()[-300:])
    try:
        user, system, faults, rss = figures
    except ValueError:
        raise RunError("no figures from GNU time: %s" % err.decode(errors="replace").strip()[-300:])
    return dict(wall_s=wall, cpu_s=float(user) + float(system), faults=int(faults), rss_mib=int(rss) / 1024,
                status=status, out=hashlib.sha256(out).hexdigest()[:16])


def words(s, port, d):
    """A command string's words, {port} and {dir} replaced."""
    return [w.replace("{port}", str(port)).replace("{dir}", d) for w in shlex.split(s)]


def session_pids(pid):
    """pid and its live descendants."""
    out = [pid]
    for k in children(pid):
        out += session_pids(k)
    return out


def run_server(a, env, plain_env, lib_names, before=None, after=None):
    """One server run (a: the parsed arguments, or anything with their
    server, ready, load, metric, timeout, ready_timeout, stop_timeout,
    pidfile and stop_signal; a.dir, when it has one, is {dir} instead of a
    new directory, kept): {metric, load_s, cpu_s, faults, rss_mib}. The
    server measured and stopped is the process started, or the one whose
    pid the pidfile names (a server started through a wrapper, or one
    that goes to the background). The real-program suite's redis and
    pgbench cases run through it too: before(port), once the server is
    ready, fills it; after(port, output), before it is stopped, checks its
    answers (raising RunError)."""
    own = getattr(a, "dir", None)
    d = own or tempfile.mkdtemp(prefix="hz-compare-")
    port = free_port()
    srv = pid = None
    try:
        with open(os.path.join(d, "server.log"), "wb") as log:
            srv = subprocess.Popen(words(a.server, port, d), env=env, stdin=subprocess.DEVNULL, stdout=log,
                                   stderr=subprocess.STDOUT, start_new_session=True, cwd=d)
        deadline = time.time() + a.ready_timeout
        while True:
            # A server that goes to the background may exit, with 0.
            if srv.poll() is not None and (not a.pidfile or srv.returncode):
                raise RunError("the server exited (%d) before it was ready: %s" % (srv.returncode, tail(d)))
            try:
                r = subprocess.run(words(a.ready, port, d), env=plain_env, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=d,
                                   timeout=max(0.5, deadline - time.time()))
                up = r.returncode == 0
            except subprocess.TimeoutExpired:
                up = False
            pid = pid_in(words(a.pidfile, port, d)[0]) if a.pidfile else srv.pid
            # (a server may be between its exec and its preload's mapping)
            mapped = pid and (not lib_names or any(mapping(p, lib_names) for p in session_pids(pid)))
            if up and mapped:
                break
            if time.time() > deadline:
                if up and pid:
                    raise RunError("the server does not map %s: the preload did not reach it" %
                                   " or ".join(lib_names))
                raise RunError("the server was not ready in %g s%s: %s" % (
                    a.ready_timeout, "" if pid else " (no pid in %s)" % a.pidfile, tail(d)))
            time.sleep(0.1)
        if before:
            before(port)
        cpu0 = cpu_of(pid)
        t0 = time.perf_counter()
        # settle: the time a server takes to reap the workers of the
        # load's connections, whose faults count once reaped
        with Load(pid, settle=0.5) as load:
            p = subprocess.run(words(a.load, port, d), env=plain_env, stdin=subprocess.DEVNULL,
                               capture_output=True, text=True, timeout=a.timeout, cwd=d)
            load_s = time.perf_counter() - t0
        cpu = cpu_of(pid) - cpu0
        if p.returncode:
            raise RunError("the load exited %d: %s" % (p.returncode, (p.stdout + p.stderr).strip()[-300:]))
        m = re.search(a.metric, p.stdout + p.stderr, re.M)
        if not m:
            raise RunError("the metric %r is not in the load's output: %s" % (a.metric, p.stdout.strip()[-300:]))
        try:
            value = float((m.group(1) if m.groups() else m.group(0)).replace(",", ""))
        except (ValueError, TypeError):
            raise RunError("the metric's match %r is not a number" % m.group(0))
        if after:
            after(port, p.stdout)
        return dict(metric=value, load_s=load_s, cpu_s=cpu, faults=load.faults, rss_mib=load.rss_kib / 1024)
    finally:
        if srv:
            stop_session(srv, pid, getattr(signal, "SIG" + a.stop_signal), a.stop_timeout)
        if not own:
            shutil.rmtree(d, ignore_errors=True)


def pid_in(path):
    """The pid on the first line of path, if that process is alive; None
    otherwise."""
    try:
        with open(path) as f:
            pid = int(f.readline())
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError):
        return None


def tail(d):
    try:
        with open(os.path.join(d, "server.log"), "rb") as f:
            return f.read()[-300:].decode(errors="replace").strip() or "(no output)"
    except OSError:
        return "(no output)"


def mapping(pid, names):
    try:
        with open("/proc/%d/maps" % pid) as f:
            maps = f.read()
    except OSError:
        return False
    return any(n in maps for n in names)


def stop_session(srv, pid, sig, grace):
    """sig to the server (pid, or the process started), then SIGKILL to the
    session started after grace seconds, unless the process started has
    exited and the server's pid is gone; waits for it."""
    deadline = time.time() + grace
    try:
        os.kill(pid or srv.pid, sig)
    except OSError:
        pass
    while time.time() < deadline:
        if srv.poll() is not None and (not pid or not alive(pid)):
            break
        time.sleep(0.05)
    try:
        os.killpg(srv.pid, signal.SIGKILL)  # what is left of its session
    except OSError:
        pass
    if pid and alive(pid):
        try:
            os.kill(pid, signal.SIGKILL)  # a server that left the session
        except OSError:
            pass
    srv.wait()


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False


# ---- statistics ----

def bootstrap_ratio(x, y, rng):
    """median(x) / median(y) and its 95% percentile bootstrap interval
    (both samples resampled with replacement; with few runs it is wider or
    narrower than 95%, which is why the verdict is the rank test's); None
    when a sample has fewer than 3 runs or y's median is 0."""
    if len(x) < 3 or len(y) < 3 or not median(y):
        return None
    r = median(x) / median(y)
    got = []
    for _ in range(BOOT):
        my = median([rng.choice(y) for _ in y])
        if my:
            got.append(median([rng.choice(x) for _ in x]) / my)
    got.sort()
    return r, got[int(0.025 * (len(got) - 1))], got[int(0.975 * (len(got) - 1))]


def mann_whitney_p(x, y, rng):
    """The two-sided p of the Mann-Whitney test of x against y: the rank
    sum of x (ties at their mean rank) at least as far from its mean as
    observed, over every way of splitting the pooled runs (exact up to
    SPLITS ways, else SPLITS random ones)."""
    pooled = x + y
    order = sorted(range(len(pooled)), key=pooled.__getitem__)
    ranks = [0.0] * len(pooled)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and pooled[order[j + 1]] == pooled[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    n, total = len(x), len(pooled)
    mean = n * (total + 1) / 2
    seen = abs(sum(ranks[:n]) - mean) - 1e-9
    if math.comb(total, n) <= SPLITS:
        splits, count = itertools.combinations(range(total), n), math.comb(total, n)
    else:
        splits, count = (rng.sample(range(total), n) for _ in range(SPLITS)), SPLITS
    return sum(1 for c in splits if abs(sum(ranks[k] for k in c) - mean) >= seen) / count


def enough(n, m):
    """Whether n runs against m can give the test's p below ALPHA at all:
    complete separation's p, 2 / C(n + m, n), is below it (4 a side)."""
    return n >= 1 and m >= 1 and 2 / math.comb(n + m, n) < ALPHA


# figure key: (label, unit scale label, lower is better, words for lower and higher)
FIGURES = {
    "wall_s": ("wall time", "s", True, ("faster", "slower")),
    "cpu_s": ("CPU time", "s", True, ("less", "more")),
    "faults": ("minor faults", "", True, ("fewer", "more")),
    "rss_mib": ("peak RSS", "MiB", True, ("less", "more")),
    "metric": ("metric", "", False, ("worse", "better")),
    "load_s": ("load time", "s", True, ("faster", "slower")),
}


def verdict(p, cmp, key, lower_better, n, m):
    """The verdict on a figure, n runs of hugezero against m of another:
    the Mann-Whitney test's (p below ALPHA: lower or higher, by the ratio
    of medians), the same when the test finds no difference and the
    interval of the ratio lies within 1 -+ SAME, else no difference at
    this noise; too few runs where no outcome could reach ALPHA."""
    if not enough(n, m):
        return "too few runs for a verdict (4 a side)"
    low, high = FIGURES[key][3]
    if key == "metric":
        low, high = ("better", "worse") if lower_better else ("worse", "better")
    if p < ALPHA and cmp:
        return low if cmp[0] < 1 else high
    if cmp and cmp[1] >= 1 - SAME and cmp[2] <= 1 + SAME:
        return "the same within %d%%" % round(SAME * 100)
    return "no difference at this noise"


def summarize(runs, allocs, keys, lower_metric):
    """A row per (figure, allocator): n, median, min, max; hugezero's rows
    with its ratio to glibc and to the best other allocator, their
    intervals and verdicts."""
    rng = random.Random(SEED)
    rows = []
    for k in keys:
        lower = lower_metric if k == "metric" else FIGURES[k][2]
        vals = {a: [r[k] for _, aa, r, _ in runs if aa == a and r] for a in allocs}
        others = [(median(vals[a]), a) for a in allocs if a != "hugezero" and vals[a]]
        best = (min if lower else max)(others)[1] if others else None
        for a in allocs:
            v = vals[a]
            row = dict(figure=k, allocator=a, n=len(v), median=median(v), min=min(v, default=None),
                       max=max(v, default=None))
            if a == "hugezero" and v:
                for base, tag in (("glibc", "glibc"), (best, "best")):
                    if base and base != "hugezero" and base in vals:
                        w = vals[base]
                        c = bootstrap_ratio(v, w, rng)
                        row[tag] = base
                        row[tag + "_ratio"], row[tag + "_lo"], row[tag + "_hi"] = c or (
                            (median(v) / median(w) if w and median(w) else None), None, None)
                        row[tag + "_p"] = mann_whitney_p(v, w, rng) if w else None
                        row[tag + "_verdict"] = "both 0" if not median(w) and not median(v) else verdict(
                            row[tag + "_p"], c, k, lower, len(v), len(w))
            rows.append(row)
    return rows


# ---- the command ----

def add_arguments(sub):
    c = sub.add_parser(
        "compare", help="your own A/B: a command, or a server and its load, under every allocator found",
        description="Runs a command (or a server under its load) under glibc, jemalloc, mimalloc and tcmalloc "
                    "where installed, and hugezero, alternated in a new random order each repetition; prints "
                    "medians with their spread, hugezero's ratios to glibc and to the best other allocator with "
                    "95%% bootstrap intervals, and a verdict per figure.",
        usage="hugezero compare [options] -- CMD ARGS...\n"
              "       hugezero compare [options] --server 'CMD {port}' --ready 'CMD {port}' "
              "--load 'CMD {port}' --metric REGEX")
    c.add_argument("--reps", type=int, default=5, help="repetitions (default 5; 3 at least for a verdict)")
    c.add_argument("--allocators", nargs="+", metavar="NAME",
                   help="only these, of %s (comma or space separated; default: those installed)" % ", ".join(ALLOCS))
    c.add_argument("--env", action="append", default=[], metavar="K=V",
                   help="an environment variable for every run (repeatable)")
    c.add_argument("--csv", help="the summary as CSV; every run beside it, in NAME.raw.csv")
    c.add_argument("--svg", help="a chart of each figure relative to glibc's")
    c.add_argument("--no-check", action="store_true",
                   help="program form: do not require the same output and exit status under every allocator")
    c.add_argument("--timeout", type=float, default=3600, help="seconds a run (or a load) may take (default 3600)")
    c.add_argument("--server", help="the server's command line; {port}: a free TCP port, {dir}: a new directory")
    c.add_argument("--ready", help="a command that succeeds once the server is ready (polled every 0.1 s)")
    c.add_argument("--load", help="the load's command line (not preloaded)")
    c.add_argument("--metric", help="a regular expression over the load's output: its first group (or match) "
                                    "is the figure")
    c.add_argument("--lower", action="store_true", help="a lower metric is better (a latency; default higher)")
    c.add_argument("--ready-timeout", type=float, default=60, help="seconds the server may take to be ready")
    c.add_argument("--stop-timeout", type=float, default=10,
                   help="seconds from the stop signal to SIGKILL when the server is stopped (default 10)")
    c.add_argument("--stop-signal", default="TERM", metavar="NAME",
                   help="the signal that stops the server (default TERM; INT for PostgreSQL's fast shutdown)")
    c.add_argument("--pidfile", help="the file the server writes its pid to ({dir} allowed): that process is "
                                     "measured and stopped (a server started by a wrapper, or daemonized)")
    c.add_argument("command", nargs="*")
    c.set_defaults(func=cmd_compare)


def allocators(ctx, asked):
    """The allocators to run: those asked (or every one installed)."""
    names = [n for a in asked or () for n in a.replace(",", " ").split()]
    unknown = [n for n in names if n not in ALLOCS]
    if unknown:
        sys.exit("hugezero compare: unknown allocator %s (of %s)" % (", ".join(unknown), ", ".join(ALLOCS)))
    missing = set(ctx.missing())
    if names:
        gone = [n for n in names if n in missing]
        if gone:
            sys.exit("hugezero compare: not installed: %s" % ", ".join(gone))
        return [a for a in ALLOCS if a in names]
    return [a for a in ALLOCS if a not in missing]


def cmd_compare(args):
    from .commands import library
    cmd = args.command[1:] if args.command[:1] == ["--"] else args.command
    server = [x is not None for x in (args.server, args.ready, args.load, args.metric)]
    if any(server) and not all(server):
        sys.exit("hugezero compare: the server form needs --server, --ready, --load and --metric")
    if all(server) == bool(cmd):
        sys.exit("hugezero compare: give a command (-- CMD ARGS...) or the server form, one of them")
    if args.reps < 1:
        sys.exit("hugezero compare: --reps needs a positive number")
    if all(server):
        try:
            re.compile(args.metric)
        except re.error as e:
            sys.exit("hugezero compare: --metric: %s" % e)
    if not isinstance(getattr(signal, "SIG" + args.stop_signal, None), signal.Signals):
        sys.exit("hugezero compare: --stop-signal: no signal SIG%s" % args.stop_signal)
    extra = {}
    for kv in args.env:
        k, eq, v = kv.partition("=")
        if not eq or not k:
            sys.exit("hugezero compare: --env takes K=V, not %r" % kv)
        if k == "LD_PRELOAD":
            sys.exit("hugezero compare: --env cannot set LD_PRELOAD: it is the allocator under test")
        extra[k] = v
    for name in ("server", "ready", "load", "pidfile"):
        try:
            if getattr(args, name) is not None and not shlex.split(getattr(args, name)):
                sys.exit("hugezero compare: --%s is empty" % name)
        except ValueError as e:
            sys.exit("hugezero compare: --%s: %s" % (name, e))
    if cmd and not os.access("/usr/bin/time", os.X_OK):
        sys.exit("hugezero compare: GNU time (/usr/bin/time, Debian's package time) is not installed")
    if cmd and not shutil.which(cmd[0]):
        sys.exit("hugezero compare: %s: command not found" % cmd[0])
    lib = library()
    ctx = Ctx(lib)
    try:
        allocs = allocators(ctx, args.allocators)
        if "hugezero" not in allocs:
            sys.exit("hugezero compare: hugezero must be one of the allocators")
        for line in resolve.describe(cmd[0] if cmd else words(args.server, 0, "")[0], ctx.preload["hugezero"]):
            print("hugezero compare: %s" % line, file=sys.stderr)
        return compare(args, cmd, ctx, allocs, extra)
    finally:
        ctx.close()


def compare(args, cmd, ctx, allocs, extra):
    plain = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    runs = []  # (rep, allocator, figures or None, error)
    total, done, start = args.reps * len(allocs), 0, time.time()
    what = " ".join(cmd) if cmd else args.server
    print("hugezero compare: %s; %d repetitions of %s" % (what, args.reps, ", ".join(allocs)), file=sys.stderr)
    for rep in range(1, args.reps + 1):
        order = list(allocs)
        random.shuffle(order)
        for a in order:
            env = dict(ctx.env(a), **extra)
            t0 = time.time()
            try:
                if cmd:
                    res = run_program(cmd, env, args.timeout)
                else:
                    names = [os.path.basename(p) for p in (ctx.preload[a] or "").split()]
                    res = run_server(args, env, plain, names)
                runs.append((rep, a, res, ""))
                err = ""
            except (RunError, OSError, subprocess.SubprocessError) as e:
                runs.append((rep, a, None, str(e)[:300]))
                err = ": failed: %s" % e
            done += 1
            print("[%d/%d] repetition %d, %s: %.1f s%s (%.0f s in all)" % (
                done, total, rep, a, time.time() - t0, err, time.time() - start), file=sys.stderr, flush=True)
    problems = [("%s, repetition %d: %s" % (a, rep, e)) for rep, a, res, e in runs if e]
    if cmd and not args.no_check:
        problems += check_same(runs)
    keys = ["wall_s", "cpu_s", "faults", "rss_mib"] if cmd else ["metric", "load_s", "cpu_s", "faults", "rss_mib"]
    rows = summarize(runs, allocs, keys, args.lower)
    print_table(rows, allocs, keys, args, cmd)
    if args.csv:
        fields = ["figure", "allocator", "n", "median", "min", "max"] + [
            t + s for t in ("glibc", "best") for s in ("", "_ratio", "_lo", "_hi", "_p", "_verdict")]
        write_csv(args.csv, fields, rows)
        raw = args.csv[:-4] + ".raw.csv" if args.csv.endswith(".csv") else args.csv + ".raw.csv"
        rfields = ["rep", "allocator"] + keys + (["status", "out"] if cmd else []) + ["error"]
        write_csv(raw, rfields, [dict(res or {}, rep=rep, allocator=a, error=e) for rep, a, res, e in runs], "%r")
        print("\nCSV: %s, every run: %s" % (args.csv, raw))
    if args.svg:
        chart(rows, allocs, keys, args.svg)
        print("chart: %s" % args.svg)
    if problems:
        print("\nproblems:\n  " + "\n  ".join(problems))
    return 1 if problems else 0


def check_same(runs):
    """The runs whose output or exit status differs from the first run's."""
    ok = [(rep, a, r) for rep, a, r, _ in runs if r]
    if not ok:
        return []
    rep0, a0, r0 = min(ok, key=lambda x: (x[1] != "glibc", x[0]))
    return ["%s, repetition %d: %s differs from %s's (repetition %d)" % (
        a, rep, "exit status %d" % r["status"] if r["status"] != r0["status"] else "standard output",
        a0, rep0) for rep, a, r in ok if (r["status"], r["out"]) != (r0["status"], r0["out"])]


def num(v):
    return "-" if v is None else "%.0f" % v if abs(v) >= 1000 else "%.4g" % v


def print_table(rows, allocs, keys, args, cmd):
    print("\nmedians [min-max] of %d repetition(s), the allocators in a new random order each time" % args.reps)
    w = 22
    print("%-14s" % "figure" + "".join(" %*s" % (w, a) for a in allocs))
    for k in keys:
        label, unit = FIGURES[k][:2]
        name = "%s%s" % (label, " (%s)" % unit if unit else "")
        line = "%-14s" % name[:14]
        for a in allocs:
            r = next(x for x in rows if x["figure"] == k and x["allocator"] == a)
            cell = "%s [%s-%s]" % (num(r["median"]), num(r["min"]), num(r["max"])) if r["n"] else "failed"
            line += " %*s" % (w, cell)
        print(line)
    print("\nhugezero's median over the others' [95%% bootstrap interval, %d resamples], the Mann-Whitney "
          "test's p; verdict at p < %g" % (BOOT, ALPHA))
    for k in keys:
        r = next(x for x in rows if x["figure"] == k and x["allocator"] == "hugezero")
        parts = []
        for tag in ("glibc", "best"):
            if not r.get(tag + "_verdict") or (tag == "best" and r.get("best") == r.get("glibc")):
                continue
            name = "glibc" if tag == "glibc" else "the best other, %s" % r[tag]
            if r.get(tag + "_ratio") is None:
                parts.append("over %s: %s" % (name, r[tag + "_verdict"]))
                continue
            iv = "[%.3f, %.3f]" % (r[tag + "_lo"], r[tag + "_hi"]) if r.get(tag + "_lo") is not None else "[-]"
            pv = " p=%.3g" % r[tag + "_p"] if r.get(tag + "_p") is not None else ""
            parts.append("over %s: %.3f %s%s %s" % (name, r[tag + "_ratio"], iv, pv, r[tag + "_verdict"]))
        print("  %-14s %s" % (FIGURES[k][0], "; ".join(parts) or "no figure"))
    if not cmd:
        print("  (metric: %s is better)" % ("lower" if args.lower else "higher"))


def chart(rows, allocs, keys, path):
    def rel(k, a):
        r = next(x for x in rows if x["figure"] == k and x["allocator"] == a)
        g = next((x for x in rows if x["figure"] == k and x["allocator"] == "glibc"), None)
        return plot.ratio_of(r["median"], g and g["median"])
    W, H, pad = max(700, 140 * len(keys)), 440, 60
    out = []
    plot.bars(out, [(FIGURES[k][0], {a: rel(k, a) for a in allocs}) for k in keys], allocs,
              (pad, W - 120, pad, H - pad), 4.0, "each figure's median relative to glibc's (log scale)")
    plot.legend(out, allocs, W - 100, 44)
    plot.svg(path, W, H, out)

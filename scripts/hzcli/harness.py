"""What the suites share (suite.py, the workload suite; real.py, the
real-program suite; idle.py, the idle-gap benchmark): the allocators and
their preloads, a scratch directory, programs run with their minor faults
and peak RSS, servers (redis on a free local port, PostgreSQL and MariaDB
on unix sockets) started and always stopped, the faults and peak RSS of a
server's load, the alternated rounds, medians, and the CSV and table
formats."""
import contextlib
import csv
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

ALLOCS = ("glibc", "jemalloc", "mimalloc", "tcmalloc", "hugezero")
PEERS = ALLOCS[:-1]
# hugezero's memset, large blocks and arms over mimalloc's small blocks
# (HUGEZERO_SMALL=next, mimalloc preloaded after the library).
HZ_OVER_MI = "hz+mimalloc"
# hugezero in its hardened mode (HUGEZERO_HARDENED=1), measured beside the others
HZ_HARDENED = "hz-hardened"
SONAMES = {"jemalloc": "libjemalloc.so.2", "mimalloc": "libmimalloc.so.2",
           "tcmalloc": "libtcmalloc_minimal.so.4"}


def multiarch_libdir():
    """Where Debian puts the other allocators' libraries."""
    try:
        arch = subprocess.run(["gcc", "-print-multiarch"], capture_output=True, text=True).stdout.strip()
    except OSError:
        arch = ""
    return "/usr/lib/" + (arch or os.uname().machine + "-linux-gnu")


class Ctx:
    """What the cases share: the preloads, the benchmarks' directory, a
    scratch directory, and what is made once per suite (inputs, compiled
    programs)."""

    def __init__(self, lib):
        libdir = multiarch_libdir()
        self.preload = {"glibc": None, "hugezero": lib}
        for a, so in SONAMES.items():
            self.preload[a] = os.path.join(libdir, so)
        self.preload[HZ_OVER_MI] = lib + " " + self.preload["mimalloc"]
        self.preload[HZ_HARDENED] = lib
        self.bench = os.path.join(os.path.dirname(lib), "bench")
        self.tmp = tempfile.mkdtemp(prefix="hz-suite-")
        os.chmod(self.tmp, 0o755)  # the postgres user works below it
        self.made = {}

    def env(self, alloc):
        """The environment of a process under alloc: LD_PRELOAD its library
        (none for glibc), no HUGEZERO_ or MALLOC_CONF settings."""
        env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD" and not k.startswith("HUGEZERO_")}
        env.pop("MALLOC_CONF", None)
        if self.preload[alloc]:
            env["LD_PRELOAD"] = self.preload[alloc]
        if alloc == HZ_OVER_MI:
            env["HUGEZERO_SMALL"] = "next"
        if alloc == HZ_HARDENED:
            env["HUGEZERO_HARDENED"] = "1"
        return env

    def missing(self):
        """The allocators whose library is not installed."""
        return [a for a, p in self.preload.items() if p and not all(os.path.isfile(f) for f in p.split())]

    def once(self, key, make):
        """make(self)'s result, made at the first call for key."""
        if key not in self.made:
            self.made[key] = make(self)
        return self.made[key]

    def close(self):
        shutil.rmtree(self.tmp, ignore_errors=True)


def median(v):
    v = sorted(v)
    n = len(v)
    return None if not n else v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def free_port():
    """A TCP port of 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sort_input(ctx):
    """2 million random numbers below 10^9, one a line (fixed seed), made
    once per suite; returns the file's path."""
    path = os.path.join(ctx.tmp, "numbers")
    if not os.path.exists(path):
        rng = random.Random(1)
        with open(path, "w") as f:
            f.write("".join("%d\n" % rng.randrange(10 ** 9) for _ in range(2000000)))
    return path


def bench_output(out, ctx, alloc):
    """A benchmark's output ("key value..." lines) as {key: [key, value...]};
    raises unless its malloc_from line names alloc's library (libc's for
    glibc)."""
    kv = {l.split()[0]: l.split() for l in out.splitlines() if l.strip()}
    want = os.path.basename(ctx.preload[alloc].split()[0]) if ctx.preload[alloc] else "libc.so.6"
    if os.path.basename(kv.get("malloc_from", ["", "?"])[1]) != want:
        raise RuntimeError("malloc from %s, not %s" % (kv.get("malloc_from"), want))
    return kv


# ---- processes: faults and peak RSS ----

def timed(argv, env, figures, stdin=None, stdout=None, timeout=3600):
    """Runs argv through GNU time (a process of its own from fork to exit:
    the rusage of a child forked from this one would count this one's
    pages), in a session of its own, killed whole at a timeout or an
    interrupt; returns (wall seconds, GNU time's figures (its format
    figures, split), stdout bytes (b"" when it goes to the file object
    given), stderr bytes, exit status)."""
    fd, stats = tempfile.mkstemp(prefix="hz-time-")
    os.close(fd)
    try:
        t0 = time.perf_counter()
        p = subprocess.Popen(["/usr/bin/time", "-f", figures, "-o", stats] + argv, env=env,
                             stdin=stdin or subprocess.DEVNULL, stdout=stdout or subprocess.PIPE,
                             stderr=subprocess.PIPE, start_new_session=True)
        try:
            out, err = p.communicate(timeout=timeout)
        except BaseException as e:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
            if isinstance(e, subprocess.TimeoutExpired):
                raise RuntimeError("%s: timed out after %d s" % (os.path.basename(argv[0]), timeout))
            raise
        wall = time.perf_counter() - t0
        with open(stats) as f:
            last = f.read().strip().splitlines()[-1:]
    finally:
        os.unlink(stats)
    return wall, (last[0].split() if last else []), out or b"", err, p.returncode


def run_program(argv, env, stdin=None, stdout=None, timeout=3600):
    """Runs argv through GNU time (timed); returns (wall seconds, minor
    faults, peak RSS KiB, stdout) of the program and the descendants it
    waited for (stdout "" when it goes to the file object given). Raises on
    a failure, or if the preload could not be loaded."""
    wall, figures, out, err, status = timed(argv, env, "%R %M", stdin, stdout, timeout)
    if status or b"cannot be preloaded" in err:  # ld.so's words for a preload it could not load
        raise RuntimeError("%s: exit %d: %s" % (os.path.basename(argv[0]), status,
                                                err.decode(errors="replace").strip()[-300:]))
    faults, rss = figures[-2:]
    return wall, int(faults), int(rss), out.decode(errors="replace")


def children(pid):
    """pid's live children (its main thread's)."""
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(k) for k in f.read().split()]
    except OSError:
        return []


def peak_rss_of(pid):
    """The largest VmHWM of pid and its descendants (a server's workers),
    KiB."""
    try:
        with open("/proc/%d/status" % pid) as f:
            own = next((int(l.split()[1]) for l in f if l.startswith("VmHWM:")), 0)
    except OSError:
        return 0
    return max([own] + [peak_rss_of(k) for k in children(pid)])


def faults_of(pid):
    """The minor faults of pid and its descendants: its own (stat field 10),
    those of its children it has reaped (field 11), and its live
    children's, recursively; 0 for a process gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()  # after the name, field 3 on
    except OSError:
        return 0
    return int(fields[7]) + int(fields[8]) + sum(faults_of(k) for k in children(pid))


def cpu_of(pid):
    """The CPU seconds (user and system) of pid and its descendants: its
    own (stat fields 14-15), its reaped children's (16-17), and its live
    children's, recursively; 0 for a process gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    ticks = sum(int(x) for x in fields[11:15])
    return ticks / os.sysconf("SC_CLK_TCK") + sum(cpu_of(k) for k in children(pid))


def reset_peak_rss(pid):
    """Makes VmHWM of pid and its descendants their current RSS
    (/proc/PID/clear_refs 5), so that a peak read later is the load's own."""
    try:
        with open("/proc/%d/clear_refs" % pid, "w") as f:
            f.write("5")
    except OSError:
        pass
    for k in children(pid):
        reset_peak_rss(k)


class Load:
    """A server's load, measured: with Load(pid) as m, the block's minor
    faults of pid and its descendants (m.faults, read after `settle`
    seconds, the time the server takes to reap its short-lived workers) and
    their peak RSS in KiB (m.rss_kib: peaks reset at the start, sampled
    every 50 ms while the block runs, a worker's before it exits)."""

    def __init__(self, pid, settle=0.0):
        self.pid, self.settle = pid, settle
        self.faults = self.rss_kib = None

    def _sample(self):
        while not self._stop.wait(0.05):
            self._peak = max(self._peak, peak_rss_of(self.pid))

    def __enter__(self):
        reset_peak_rss(self.pid)
        self._peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._f0 = faults_of(self.pid)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        time.sleep(self.settle)
        self.faults = faults_of(self.pid) - self._f0
        self.rss_kib = max(self._peak, peak_rss_of(self.pid))
        return False


def stop(proc, pid=None, sig=signal.SIGTERM, grace=30):
    """Stops a server: sig to pid (default: the process started), then
    SIGKILL after grace seconds; waits for proc."""
    pid = pid or proc.pid
    for s, wait in ((sig, grace), (signal.SIGKILL, 10)):
        if proc.poll() is not None:
            break
        with contextlib.suppress(OSError):
            os.kill(pid, s)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(wait)
    if proc.poll() is None:
        proc.kill()
        proc.wait()


# ---- redis ----

class RedisError(Exception):
    pass


class Redis:
    """A client of a redis server on 127.0.0.1 (RESP2): call sends one
    command and returns its reply; pipeline sends many, then reads their
    replies."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=60)
        self.f = self.sock.makefile("rb")

    def close(self):
        self.f.close()
        self.sock.close()

    @staticmethod
    def encode(args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out += [b"$%d\r\n" % len(a), a, b"\r\n"]
        return b"".join(out)

    def reply(self):
        """The next reply: bytes, int, str (a status), a list, or None."""
        line = self.f.readline()
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise RedisError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            return None if int(rest) < 0 else self.f.read(int(rest) + 2)[:-2]
        if kind == b"*":
            return None if int(rest) < 0 else [self.reply() for _ in range(int(rest))]
        raise RedisError("bad reply %r" % line[:80])

    def call(self, *args):
        self.sock.sendall(self.encode(args))
        return self.reply()

    def pipeline(self, commands, batch=64):
        """The replies to commands, sent batch at a time."""
        out = []
        for i in range(0, len(commands), batch):
            part = commands[i:i + batch]
            self.sock.sendall(b"".join(self.encode(c) for c in part))
            out += [self.reply() for _ in part]
        return out


def ready(srv, name, check, seconds=30):
    """check()'s first true result, polled while the server srv starts;
    raises if srv exits first or after seconds."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        if srv.poll() is not None:
            raise RuntimeError("%s exited: %d" % (name, srv.returncode))
        got = check()
        if got:
            return got
        time.sleep(0.05)
    raise RuntimeError("%s did not start in %d s" % (name, seconds))


def redis_ping(port):
    """A client of the redis server on port if it answers PING, else None."""
    try:
        client = Redis(port)
    except OSError:
        return None
    with contextlib.suppress(OSError, RedisError):
        if client.call("PING") == "PONG":
            return client
    client.close()
    return None


@contextlib.contextmanager
def redis_server(ctx, alloc):
    """A redis-server under alloc on a free port of 127.0.0.1, without
    persistence; yields (process, port, client). Always stopped."""
    port = free_port()
    srv = subprocess.Popen(["redis-server", "--port", str(port), "--save", "", "--appendonly", "no",
                            "--bind", "127.0.0.1", "--dir", ctx.tmp], env=ctx.env(alloc),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client = None
    try:
        client = ready(srv, "redis-server", lambda: redis_ping(port))
        yield srv, port, client
    finally:
        if client:
            client.close()
        stop(srv)


# ---- PostgreSQL, run as the postgres user when this is root ----

AS_PG = ["runuser", "-u", "postgres", "--"] if os.getuid() == 0 else []


def pg_bin():
    """The newest installed PostgreSQL's bin directory."""
    return sorted(d for d in (os.path.join("/usr/lib/postgresql", v, "bin")
                              for v in os.listdir("/usr/lib/postgresql")) if os.path.isdir(d))[-1]


def pg_dir(ctx):
    """A new directory below the scratch one that the postgres user owns."""
    d = tempfile.mkdtemp(dir=ctx.tmp)
    if AS_PG:
        shutil.chown(d, "postgres")
    return d


def initdb(data):
    subprocess.run(AS_PG + [pg_bin() + "/initdb", "-D", data, "-A", "trust", "-U", "postgres"],
                   check=True, capture_output=True)


class Pg:
    """A running PostgreSQL server: its postmaster's pid, and the command
    lines of its clients (psql, pgbench), which run as the postgres user,
    not preloaded."""

    def __init__(self, sock_dir, port, pid):
        self.sock_dir, self.port, self.pid = sock_dir, port, pid

    def client(self, prog):
        return AS_PG + [pg_bin() + "/" + prog, "-h", self.sock_dir, "-p", self.port, "-U", "postgres"]

    def query(self, sql):
        """sql's rows as lists of strings (psql's unaligned output)."""
        out = subprocess.run(self.client("psql") + ["-X", "-q", "-A", "-t", "-F", "|", "-c", sql, "postgres"],
                             check=True, capture_output=True, text=True).stdout
        return [l.split("|") for l in out.splitlines() if l]


def postgres_command(ctx, alloc, data, port, options=()):
    """(argv, env) of postgres under alloc on the cluster in data, as the
    postgres user, listening on port on a unix socket in data's directory
    only, fsync off: a copy of the allocator's library beside data, where
    the postgres user can read it, preloaded after runuser (which would
    not pass LD_PRELOAD on), with the allocator's own settings
    (hz-hardened's, hz-over-mi's); the environment is the allocator's, as
    every other case's (no HUGEZERO_ or MALLOC_CONF setting of the
    caller's), without LD_PRELOAD."""
    d = os.path.dirname(data)
    env = ctx.env(alloc)
    preload = []
    if env.get("LD_PRELOAD"):
        copies = []
        for lib in env["LD_PRELOAD"].split():
            copies.append(os.path.join(d, os.path.basename(lib)))
            shutil.copy(lib, copies[-1])
        preload = ["env", "LD_PRELOAD=" + " ".join(copies)] + sorted(
            "%s=%s" % (k, v) for k, v in env.items() if k.startswith("HUGEZERO_"))
    argv = AS_PG + preload + [pg_bin() + "/postgres", "-D", data, "-k", d, "-p", str(port),
                              "-c", "listen_addresses=", "-c", "fsync=off", "-c", "shared_buffers=128MB"]
    return argv + list(options), {k: v for k, v in env.items() if k != "LD_PRELOAD"}


@contextlib.contextmanager
def postgres_server(ctx, alloc, data, options=()):
    """postgres under alloc on the cluster in data (postgres_command);
    yields a Pg. Always stopped (fast shutdown, then killed)."""
    d = os.path.dirname(data)
    port = str(free_port())
    argv, env = postgres_command(ctx, alloc, data, port, options)
    srv = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def postmaster():
        with open(os.path.join(data, "postmaster.pid")) as f:
            return int(f.readline())

    isready = AS_PG + [pg_bin() + "/pg_isready", "-h", d, "-p", port]
    pid = None
    try:
        pid = ready(srv, "postgres", lambda: subprocess.run(isready, capture_output=True).returncode == 0 and
                    postmaster())
        yield Pg(d, port, pid)
    finally:
        with contextlib.suppress(OSError, ValueError):
            pid = pid or postmaster()
        stop(srv, pid, signal.SIGINT)  # SIGINT: the postmaster's fast shutdown


# ---- MariaDB, as root (its --user=root) ----

MARIADBD = "/usr/sbin/mariadbd"


def mariadb_install_db(data):
    """A new MariaDB data directory in data, its system tables only (no
    test database); root connects without a password."""
    subprocess.run(["mariadb-install-db", "--no-defaults", "--datadir=" + data, "--user=root",
                    "--auth-root-authentication-method=normal", "--skip-test-db"],
                   check=True, capture_output=True)


class Maria:
    """A running MariaDB server: its pid, and the command lines of its
    clients (mariadb, mariadb-admin, sysbench's options), which run as
    root, not preloaded."""

    def __init__(self, sock, pid):
        self.sock, self.pid = sock, pid

    def client(self, prog="mariadb"):
        return [prog, "--no-defaults", "--socket=" + self.sock, "--user=root"]

    def sysbench(self, db="sbtest"):
        """sysbench's options for a connection to the database db."""
        return ["--db-driver=mysql", "--mysql-socket=" + self.sock, "--mysql-user=root", "--mysql-db=" + db]

    def query(self, sql, db=""):
        """sql's rows as lists of strings (the client's batch output, no
        column names)."""
        out = subprocess.run(self.client() + ["--batch", "--skip-column-names", "-e", sql] + ([db] if db else []),
                             check=True, capture_output=True, text=True, timeout=600).stdout
        return [l.split("\t") for l in out.splitlines() if l]

    def status(self, name):
        """The server's global status variable name, an int."""
        rows = self.query("show global status like '%s'" % name)
        if len(rows) != 1:
            raise RuntimeError("no status variable %s" % name)
        return int(rows[0][1])


@contextlib.contextmanager
def mariadb_server(ctx, alloc, data, options=()):
    """mariadbd under alloc on the data directory data, on a unix socket
    in data's directory only (no TCP), its pid file and error log there
    too: a 256 MiB sort buffer, a 128 MiB buffer pool neither loaded at
    start nor saved at shutdown (every run starts on the same cold pool),
    the redo log not flushed at each commit (no disk in the figures, as
    PostgreSQL's fsync=off); options added. Yields a Maria. Always stopped
    (mariadb-admin shutdown, then killed)."""
    d = os.path.dirname(data)
    sock = os.path.join(d, "mariadb.sock")
    srv = subprocess.Popen([MARIADBD, "--no-defaults", "--datadir=" + data, "--socket=" + sock,
                            "--skip-networking", "--user=root", "--pid-file=" + os.path.join(d, "mariadb.pid"),
                            "--log-error=" + os.path.join(d, "mariadb.err"), "--sort-buffer-size=256M",
                            "--innodb-buffer-pool-size=128M", "--innodb-buffer-pool-load-at-startup=0",
                            "--innodb-buffer-pool-dump-at-shutdown=0", "--innodb-flush-log-at-trx-commit=0"]
                           + list(options), env=ctx.env(alloc), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    db = Maria(sock, srv.pid)
    ping = db.client("mariadb-admin") + ["ping"]
    try:
        ready(srv, "mariadbd", lambda: subprocess.run(ping, capture_output=True).returncode == 0)
        yield db
    finally:
        if srv.poll() is None:  # mariadb-admin waits for the server's pid file to go
            with contextlib.suppress(OSError, subprocess.SubprocessError):
                subprocess.run(db.client("mariadb-admin") + ["--shutdown-timeout=30", "shutdown"],
                               capture_output=True, timeout=60)
        stop(srv, grace=10)


# ---- the rounds ----

def alternate(cases, reps, run, name=lambda c: c[0], allocs=ALLOCS, progress=False):
    """Runs run(case, alloc) for every case under every allocator, reps
    times, the allocators in a new random order for every case of every
    repetition (a shared, noisy machine); a run that raises is recorded
    with its error, not fatal; with progress, every run's time is printed.
    Returns [(rep, case, alloc, result or None, error)]."""
    raw = []
    start = time.time()
    for rep in range(1, reps + 1):
        print("repetition %d/%d (%.0f s)" % (rep, reps, time.time() - start), file=sys.stderr, flush=True)
        for c in cases:
            order = list(allocs)
            random.shuffle(order)
            for a in order:
                t0 = time.time()
                try:
                    raw.append((rep, c, a, run(c, a), ""))
                    if progress:
                        print("  %s under %s: %.1f s" % (name(c), a, time.time() - t0), file=sys.stderr, flush=True)
                except Exception as e:  # a failed run is recorded, not fatal
                    print("  %s under %s failed: %s" % (name(c), a, e), file=sys.stderr, flush=True)
                    raw.append((rep, c, a, None, str(e)[:200] or type(e).__name__))
    return raw


# ---- output ----

def write_csv(path, fields, rows, number="%.4g"):
    """rows (dicts, or sequences in the order of fields) as CSV: floats in
    the format number, None empty."""
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for r in rows:
            r = r if isinstance(r, dict) else dict(zip(fields, r))
            w.writerow({k: "" if r.get(k) is None else number % r[k] if isinstance(r[k], float) else r[k]
                        for k in fields})


def fmt(v):
    """A figure for a table: 3 significant digits, or whole above 100."""
    return "-" if v is None else "%.0f" % v if abs(v) >= 100 else "%.1f" % v if abs(v) >= 10 else "%.3g" % v


def ratio(v):
    return "-" if v is None else "%.2f" % v

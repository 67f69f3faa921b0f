"""The real-program suite (hugezero suite --real): real programs and
servers under glibc (or the program's own allocator: Debian's redis-server
links jemalloc), jemalloc, mimalloc, tcmalloc and hugezero, one process or
server per run, the allocators in a new random order in every case of
every repetition.

Each case reports the program's own figure in its natural unit (requests
per second, transactions per second, seconds; higher or lower is better as
the case says), the minor page faults of the processes it measures and
their peak RSS, and checks the program's answer: a wrong one fails the run,
which the raw CSV records (the suite goes on, and exits 1 at the end).
A server (redis, PostgreSQL, MariaDB) is started for every run (the
databases on a copy of a data directory made once per suite) and always
stopped; its clients (redis-benchmark, pgbench, psql, sysbench, mariadb)
run without the preload.
A program runs through GNU time: its faults and peak RSS are its own and
those of the descendants it waited for. A server's faults are those of the
load only (its processes', alive or reaped, read from /proc before and
after), its peak RSS the largest of its processes' during the load.
Medians go to a table on stdout, a CSV (with hugezero's ratios to the best
of the others and to each) and an SVG chart; every run to the raw CSV."""
import argparse
import collections
import hashlib
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

from . import compare, plot
from .harness import (ALLOCS, AS_PG, HZ_HARDENED, MARIADBD, Ctx, Load, Pg, Redis, alternate, bench_output, fmt,
                      initdb, mariadb_install_db, mariadb_server, median, pg_bin, pg_dir, postgres_command,
                      postgres_server, ratio, run_program, sort_input, write_csv)

PEERS = ALLOCS[:-1]
HERE = os.path.dirname(os.path.realpath(__file__))
BENCH_SRC = os.path.join(os.path.dirname(os.path.dirname(HERE)), "bench")
PYTHON = "/usr/bin/python3"  # Debian's, with numpy
M64 = (1 << 64) - 1

# name; unit; higher: whether a higher figure is better; run(ctx, alloc):
# {value, faults, rss_kib[, ref]}; native: what the glibc column runs;
# needs: the programs it runs ("bench/..." in the build's bench directory).
Case = collections.namedtuple("Case", "name unit higher run native needs")


def checked(cond, what):
    """Raises RuntimeError(what) unless cond."""
    if not cond:
        raise RuntimeError(what)


def mapped(pid, ctx, alloc):
    """Raises unless the process maps alloc's library (glibc: nothing to
    see)."""
    lib = ctx.preload[alloc] and ctx.preload[alloc].split()[0]
    if lib:
        with open("/proc/%d/maps" % pid) as f:
            maps = f.read()
        checked(os.path.basename(lib) in maps, "%s not mapped in pid %d" % (os.path.basename(lib), pid))


def program(ctx, alloc, argv, **kw):
    """run_program under alloc: (wall s, faults, peak RSS KiB, stdout)."""
    return run_program(argv, ctx.env(alloc), **kw)


# ---- redis: one server per (op, size, allocator) ----

# -n per (op, value size): about 1-3 s an op under tcmalloc on a 2-core VM;
# LRANGE_100 of 50 and 500 KB values (5 and 50 MB replies) about 10 s, long
# enough for an allocator's decay to act while the load runs.
REDIS_N = {("SET", 1000): 100000, ("GET", 1000): 100000, ("LPUSH", 1000): 80000, ("LRANGE_100", 1000): 20000,
           ("SET", 50000): 40000, ("GET", 50000): 50000, ("LPUSH", 50000): 8000, ("LRANGE_100", 50000): 1500,
           ("SET", 500000): 6000, ("GET", 500000): 8000, ("LPUSH", 500000): 800, ("LRANGE_100", 500000): 50}


def redis_case(op, size):
    """redis-benchmark (not preloaded) against redis-server under the
    allocator: op's requests per second with size-byte values. SET and GET
    on a keyspace of at most 64 MB (GET's filled first), LPUSH onto one
    list, LRANGE_100 (the first 100 elements) of a list of 100 filled
    first, through 4 clients at 500 KB (each reply is 50 MB). Checked
    after: the keys' or the list's values are there, of the right length
    and the same (redis-benchmark's) or the ones written."""
    n = REDIS_N[op, size]
    keys = min(10000, (64 << 20) // size)
    clients = 50 if size < 500000 else 4
    value = b"x" * size  # what GET and LRANGE_100 read (written here)

    load = "redis-benchmark -h 127.0.0.1 -p {port} -q --csv -n %d -c %d " % (n, clients) + {
        "SET": "-t set -d %d -r %d" % (size, keys), "GET": "-t get -r %d" % keys,
        "LPUSH": "-t lpush -d %d" % size, "LRANGE_100": "lrange mylist 0 99"}[op]
    spec = argparse.Namespace(
        server="redis-server --port {port} --save '' --appendonly no --bind 127.0.0.1 --dir {dir}",
        ready="redis-cli -h 127.0.0.1 -p {port} ping", load=load, timeout=900, ready_timeout=30, stop_timeout=30,
        pidfile=None, stop_signal="TERM",
        metric=r'^"(?:SET|GET|LPUSH|lrange mylist 0 99)","([0-9.]+)"')

    def fill(port):
        r = Redis(port)
        try:
            if op == "GET":
                r.pipeline([("SET", "key:%012d" % i, value) for i in range(keys)], 16)
            elif op == "LRANGE_100":
                r.pipeline([("RPUSH", "mylist", value)] * 100, 16)
        finally:
            r.close()

    def check(port, out):
        r = Redis(port)
        try:
            if op in ("SET", "GET"):
                dbsize = r.call("DBSIZE")
                checked(0 < dbsize <= keys and (op == "SET" or dbsize == keys), "%d keys of %d" % (dbsize, keys))
                got = [r.call("GET", r.call("RANDOMKEY")) for _ in range(3)]
            else:
                checked(r.call("LLEN", "mylist") == (n if op == "LPUSH" else 100), "mylist's length")
                got = r.call("LRANGE", "mylist", 0, 99)
        finally:
            r.close()
        # redis-benchmark writes one value (random bytes, a fixed seed) every time
        mine = op in ("GET", "LRANGE_100")
        checked(len(got) in (3, 100) and len(set(got)) == 1 and len(got[0]) == size and
                (got[0] == value or not mine), "the values read back are not all the same %d bytes%s"
                % (size, " written" if mine else ""))

    def run(ctx, alloc):
        names = [os.path.basename(ctx.preload[alloc].split()[0])] if ctx.preload[alloc] else []
        plain = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
        try:
            res = compare.run_server(spec, ctx.env(alloc), plain, names, fill, check)
        except compare.RunError as e:
            raise RuntimeError(str(e))
        return dict(value=res["metric"], faults=res["faults"], rss_kib=round(res["rss_mib"] * 1024))
    return run


# ---- programs of the build's bench/ ----

def large_blocks_bytes(steps):
    """What large_blocks prints as bytes: its sizes (xorshift64, its seed)
    summed, modulo 2^64."""
    rng, total, lo, hi = 0x853C49E6748FEA9B, 0, 5 << 20, 25 << 20
    for _ in range(steps):
        rng ^= (rng << 13) & M64
        rng ^= rng >> 7
        rng ^= (rng << 17) & M64
        total += lo + (rng >> 32) % (hi - lo + 1)
    return total & M64


def large_blocks(ctx, alloc):
    """bench/large_blocks: 2000 new char[n]() of 5-25 MiB, 20 live; seconds
    of its steps. Checked: its allocator, the sizes' sum; it checks the
    blocks read as zero."""
    _, faults, rss, out = program(ctx, alloc, [os.path.join(ctx.bench, "large_blocks"), "2000"])
    kv = bench_output(out, ctx, alloc)
    checked(int(kv["bytes"][1]) == large_blocks_bytes(2000), "large_blocks: bytes %s" % kv["bytes"][1])
    return dict(value=float(kv["seconds"][1]), faults=faults, rss_kib=rss)


def calloc_touch(ctx, alloc):
    """bench/alloc_bench clear 32M: ms of one calloc + touch of every page
    + free of a recycled 32 MiB block (median of 32), and as the reference
    the ms of one memset 0 of a prefaulted 32 MiB block in the same process.
    Checked: its allocator; it checks calloc's memory is zero."""
    _, faults, rss, out = program(ctx, alloc, [os.path.join(ctx.bench, "alloc_bench"), "clear", "32M"])
    kv = bench_output(out, ctx, alloc)
    return dict(value=float(kv["loop"][2]) / 1e6, ref=float(kv["clear"][2]) / 1e6, faults=faults, rss_kib=rss)


# ---- PostgreSQL: a copy of one template cluster per run ----

def pg_template(ctx):
    """A cluster made once per suite (no preload): pgbench's tables at
    scale 5 and t, 2 million rows of a random int k and an md5 text v."""
    data = pg_dir(ctx) + "/data"
    initdb(data)
    with postgres_server(ctx, "glibc", data) as pg:
        subprocess.run(pg.client("pgbench") + ["-i", "-s", "5", "-q", "postgres"], check=True, capture_output=True)
        pg.query("select setseed(0.25); create table t as select (random() * 1e9)::int k, md5(i::text) v "
                 "from generate_series(1, 2000000) i")
        pg.query("vacuum analyze")
    return data


def on_copy(ctx, alloc, key, make, new_dir, server, load):
    """load(srv, dir)'s result, srv the server that server(dir + "/data")
    starts under alloc (its library checked mapped) on a copy of the
    template make(ctx), made once per suite under key, in the directory
    new_dir(ctx); the copy removed after."""
    template = ctx.once(key, make)
    d = new_dir(ctx)
    try:
        subprocess.run(["cp", "-a", template, d + "/data"], check=True)
        with server(d + "/data") as srv:
            mapped(srv.pid, ctx, alloc)
            return load(srv, d)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def pg_case(load, options=()):
    """PostgreSQL under the allocator on a copy of the template cluster
    (server options added), started for this run: load(pg, dir)'s
    result."""
    def run(ctx, alloc):
        return on_copy(ctx, alloc, "pg", pg_template, pg_dir,
                       lambda data: postgres_server(ctx, alloc, data, options), load)
    return run


def pgbench(ctx, alloc):
    """pgbench's TPC-B-like load, 4 clients, 2 threads, 8 s, against
    PostgreSQL under the allocator on a copy of the template cluster,
    through hugezero compare's server form (the postmaster measured, by
    its pid file; fast shutdown): tps. Checked: no failed transaction, and
    the invariants (the balances of accounts, branches and tellers each
    sum to the history's deltas, one history row per transaction)."""
    template = ctx.once("pg", pg_template)
    d = pg_dir(ctx)
    data = d + "/data"
    quote = lambda argv: " ".join(shlex.quote(w) for w in argv)
    client = lambda prog: AS_PG + [pg_bin() + "/" + prog, "-h", d, "-p", "{port}", "-U", "postgres"]

    def check(port, out):
        done = re.search(r"number of transactions actually processed: (\d+)", out)
        failed = re.search(r"number of failed transactions: (\d+)", out)
        checked(done and int(done.group(1)) > 0 and (not failed or failed.group(1) == "0"),
                "pgbench: %s" % out[-300:])
        sums = Pg(d, str(port), None).query(
            "select (select sum(abalance) from pgbench_accounts), (select sum(bbalance) from "
            "pgbench_branches), (select sum(tbalance) from pgbench_tellers), (select sum(delta) from "
            "pgbench_history), (select count(*) from pgbench_history)")[0]
        checked(len(set(sums[:4])) == 1 and sums[4] == done.group(1),
                "pgbench: balances %s, %s history rows for %s transactions" % (sums[:4], sums[4], done.group(1)))

    try:
        subprocess.run(["cp", "-a", template, data], check=True)
        argv, env = postgres_command(ctx, alloc, data, "{port}")
        spec = argparse.Namespace(
            server=quote(argv), ready=quote(client("pg_isready")),
            load=quote(client("pgbench") + ["-c", "4", "-j", "2", "-T", "8", "postgres"]),
            metric=r"tps = ([0-9.]+) \(without initial connection time\)", timeout=120, ready_timeout=60,
            stop_timeout=30, pidfile=data + "/postmaster.pid", stop_signal="INT", dir=d)
        names = [os.path.basename(p) for p in (ctx.preload[alloc] or "").split()]
        plain = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
        try:
            res = compare.run_server(spec, env, plain, names, after=check)
        except compare.RunError as e:
            raise RuntimeError(str(e))
        return dict(value=res["metric"], faults=res["faults"], rss_kib=round(res["rss_mib"] * 1024))
    finally:
        shutil.rmtree(d, ignore_errors=True)


def order_by(pg, d):
    """psql (not preloaded) fetching t's 2 million k ordered (work_mem 256MB:
    one in-memory sort in the backend) into a file: seconds. Checked: the
    file has every row, in order, and their sum."""
    out = os.path.join(d, "sorted")
    with Load(pg.pid, settle=0.5) as load:
        t0 = time.perf_counter()
        subprocess.run(pg.client("psql") + ["-X", "-q", "-A", "-t", "-o", out, "-c", "select k from t order by k",
                                            "postgres"], check=True, capture_output=True, timeout=600)
        seconds = time.perf_counter() - t0
    count, total = (int(v) for v in pg.query("select count(*), sum(k::bigint) from t")[0])
    check_sorted(out, count, total)
    return dict(value=seconds, faults=load.faults, rss_kib=load.rss_kib)


def check_sorted(path, count, total):
    """Raises unless path holds count integers, one a line, in order,
    summing to total."""
    with open(path) as f:
        v = [int(l) for l in f]
    checked(len(v) == count and sum(v) == total, "%d rows summing to %d, not %d summing to %d"
            % (len(v), sum(v), count, total))
    checked(all(a <= b for a, b in zip(v, v[1:])), "rows out of order")


# ---- MariaDB: a copy of one template data directory per run ----

# sysbench's tables: 4 of 50000 rows, 22 MiB each with their index, all in
# the 128 MiB buffer pool during the oltp load (as t's 60 MiB in the sort's)
SYSBENCH_TABLES = ["--tables=4", "--table-size=50000"]
# the queries of the sort case: each sorts t in a buffer of its own
MARIA_SORTS = 3


def maria_template(ctx):
    """A data directory made once per suite (no preload): in the database
    sbtest, sysbench's oltp tables (SYSBENCH_TABLES, prepared without
    prewarm) and t, 2 million rows of an id and a random int k."""
    data = tempfile.mkdtemp(dir=ctx.tmp) + "/data"
    mariadb_install_db(data)
    with mariadb_server(ctx, "glibc", data) as db:
        db.query("create database sbtest")
        subprocess.run(["sysbench", "oltp_read_write"] + db.sysbench() + SYSBENCH_TABLES + ["prepare"],
                       check=True, capture_output=True, timeout=600)
        # seq_1_to_N: MariaDB's sequence engine; rand(25): the same k every suite
        db.query("create table t (id int primary key, k int not null) "
                 "select seq id, floor(rand(25) * 1e9) k from seq_1_to_2000000", "sbtest")
        db.query("analyze table t", "sbtest")
    return data


def maria_case(load):
    """MariaDB under the allocator on a copy of the template data
    directory, started for this run: load(db, dir)'s result."""
    def run(ctx, alloc):
        return on_copy(ctx, alloc, "mariadb", maria_template, lambda c: tempfile.mkdtemp(dir=c.tmp),
                       lambda data: mariadb_server(ctx, alloc, data), load)
    return run


def sysbench_rw(db, d):
    """sysbench (not preloaded) oltp_read_write, 4 threads, 10 s, its
    random numbers seeded the same every run: tps. Checked: transactions
    done, no error ignored, and every table still has its rows (each
    transaction deletes one row and inserts it back)."""
    with Load(db.pid) as load:
        p = subprocess.run(["sysbench", "oltp_read_write"] + db.sysbench() + SYSBENCH_TABLES +
                           ["--threads=4", "--time=10", "--rand-seed=1", "run"],
                           capture_output=True, text=True, timeout=120)
    checked(p.returncode == 0, "sysbench: exit %d: %s" % (p.returncode, (p.stdout + p.stderr)[-300:]))
    done = re.search(r"^\s*transactions:\s+(\d+)\s+\(([0-9.]+) per sec\.\)", p.stdout, re.M)
    errors = re.search(r"^\s*ignored errors:\s+(\d+)", p.stdout, re.M)
    checked(done and int(done.group(1)) > 0 and errors and errors.group(1) == "0", "sysbench: %s" % p.stdout[-400:])
    rows = db.query("select " + ", ".join("(select count(*) from sbtest%d)" % i for i in range(1, 5)), "sbtest")[0]
    checked(rows == ["50000"] * 4, "sysbench: the tables have %s rows, not 50000 each" % rows)
    return dict(value=float(done.group(2)), faults=load.faults, rss_kib=load.rss_kib)


def maria_order_by(db, d):
    """The mariadb client (not preloaded) fetching t's 2 million k ordered
    into a file, MARIA_SORTS times in a row: seconds of them all. Each
    query is one sort in the server, in a sort buffer of about 84 MiB (of
    the 256 MiB allowed) allocated for it and freed after it, so that the
    later ones show what the allocator does with a large block given back.
    Checked: each file has every row, in order, and their sum; the server
    made no merge pass (every sort stayed in its buffer)."""
    merges = db.status("Sort_merge_passes")
    outs = [os.path.join(d, "sorted%d" % i) for i in range(MARIA_SORTS)]
    with Load(db.pid) as load:
        t0 = time.perf_counter()
        for out in outs:
            with open(out, "w") as f:
                subprocess.run(db.client() + ["--batch", "--skip-column-names", "--quick", "-e",
                                              "select k from t order by k", "sbtest"],
                               stdout=f, stderr=subprocess.PIPE, check=True, timeout=600)
        seconds = time.perf_counter() - t0
    count, total = (int(v) for v in db.query("select count(*), sum(k) from t", "sbtest")[0])
    for out in outs:
        check_sorted(out, count, total)
    checked(db.status("Sort_merge_passes") == merges, "mariadb: a sort merged, it did not fit its buffer")
    return dict(value=seconds, faults=load.faults, rss_kib=load.rss_kib)


# ---- other programs ----

NUMPY = ("import time\nimport numpy as np\nt0 = time.perf_counter()\ns = 0.0\n"
         "for i in range(20):\n    a = np.zeros((4096, 4096))\n    a += i + 1\n    s += a.sum()\n"
         "print('seconds %.4f' % (time.perf_counter() - t0))\nprint('sum %r' % s)\n")

DICTS = ("import time\nt0 = time.perf_counter()\ncheck = 0\n"
         "for r in range(3):\n"
         "    d = {i: i * 3 for i in range(1000000 + r)}\n"
         "    keys = list(d)\n"
         "    floats = [k * 0.5 for k in keys]\n"
         "    nested = [list(range(i % 50)) for i in range(200000)]\n"
         "    d2 = dict(zip(keys[::2], floats[::2]))\n"
         "    check += len(d) + sum(d.values()) + int(sum(floats)) + sum(map(len, nested)) + len(d2)\n"
         "    del d, keys, floats, nested, d2\n"
         "print('seconds %.4f' % (time.perf_counter() - t0))\nprint('checksum %d' % check)\n")


def dicts_checksum():
    """DICTS' checksum, from the sums' closed forms."""
    total = 0
    for r in range(3):
        n = 1000000 + r
        total += n + 3 * n * (n - 1) // 2 + n * (n - 1) // 4 + 200000 // 50 * 1225 + (n + 1) // 2
    return total


def printed(out, key):
    """The value of the line 'key value' of a program's output (None if
    missing)."""
    m = re.search(r"^%s (\S+)$" % key, out, re.M)
    return m and m.group(1)


def numpy_case(ctx, alloc):
    """numpy: 20 arrays of 4096 x 4096 doubles (128 MiB), zeros, then
    filled by a += i + 1, then summed: the loop's seconds. Checked: the
    sum."""
    _, faults, rss, out = program(ctx, alloc, [PYTHON, "-c", NUMPY])
    checked(printed(out, "sum") == repr(float(sum(range(1, 21)) * 4096 * 4096)), "numpy: sum %s" % printed(out, "sum"))
    return dict(value=float(printed(out, "seconds")), faults=faults, rss_kib=rss)


def dicts_case(ctx, alloc):
    """Python: dicts of a million int keys, lists of a million ints and
    floats and 200000 small lists, built and dropped 3 times: the loop's
    seconds. Checked: the checksum."""
    _, faults, rss, out = program(ctx, alloc, [PYTHON, "-c", DICTS])
    checked(printed(out, "checksum") == str(dicts_checksum()), "python: checksum %s" % printed(out, "checksum"))
    return dict(value=float(printed(out, "seconds")), faults=faults, rss_kib=rss)


SQLITE = ("pragma journal_mode=off; pragma synchronous=off; pragma temp_store=memory; pragma cache_size=-262144;"
          "create table t(id integer primary key, b blob);"
          "with recursive c(x) as (select 1 union all select x + 1 from c where x < 400) "
          "insert into t(b) select zeroblob(1048576) from c;"
          "delete from t where id % 2 = 0; vacuum;"
          "select count(*), sum(length(b)), sum(b = zeroblob(1048576)) from t;")


def sqlite_case(ctx, alloc):
    """sqlite3 on a file: 400 rows of a 1 MiB zeroblob, half deleted,
    VACUUM (its temporary database in memory, a 256 MiB page cache):
    seconds. Checked: the rows left, their sizes and zeros, the file
    shrunk to them."""
    d = tempfile.mkdtemp(dir=ctx.tmp)
    try:
        wall, faults, rss, out = program(ctx, alloc, ["sqlite3", os.path.join(d, "z.db"), SQLITE])
        size = os.path.getsize(os.path.join(d, "z.db"))
    finally:
        shutil.rmtree(d, ignore_errors=True)
    checked(out.split() and out.split()[-1] == "200|209715200|200", "sqlite3: %s" % out[-200:])
    checked(200 << 20 < size < 210 << 20, "sqlite3: the file is %d bytes after VACUUM" % size)
    return dict(value=wall, faults=faults, rss_kib=rss)


def compress_input(ctx):
    """A deterministic text of ctx.compress_mb MiB (numbered lines of words
    drawn from 20000 with Zipf's weights: about 3.6x by xz -9), written
    once per suite; returns (path, its sha256)."""
    rng = random.Random(7)
    vocab = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 10)))
             for _ in range(20000)]
    weights, acc = [], 0.0
    for i in range(len(vocab)):
        acc += 1.0 / (i + 1)
        weights.append(acc)
    path, left, line, h = os.path.join(ctx.tmp, "text"), ctx.compress_mb << 20, 0, hashlib.sha256()
    with open(path, "wb") as f:
        while left > 0:
            words = rng.choices(vocab, cum_weights=weights, k=12000)
            chunk = "".join("%d %s\n" % (line + i, " ".join(words[i * 12:i * 12 + 12]))
                            for i in range(1000)).encode()[:left]
            f.write(chunk)
            h.update(chunk)
            left -= len(chunk)
            line += 1000
    return path, h.hexdigest()


def compress_case(prog, level):
    """prog level of the suite's text to a file: seconds. Checked (not
    timed): prog -d gives the text back."""
    def run(ctx, alloc):
        src, digest = ctx.once("text", compress_input)
        dst = os.path.join(ctx.tmp, prog + ".out")
        try:
            with open(dst, "wb") as f:
                wall, faults, rss, _ = program(ctx, alloc, [prog, level, "-c", src], stdout=f)
            h = hashlib.sha256()
            with subprocess.Popen([prog, "-d", "-c", dst], stdout=subprocess.PIPE) as p:
                for chunk in iter(lambda: p.stdout.read(1 << 20), b""):
                    h.update(chunk)
            checked(p.returncode == 0 and h.hexdigest() == digest, "%s -d does not give the input back" % prog)
        finally:
            if os.path.exists(dst):
                os.unlink(dst)
        return dict(value=wall, faults=faults, rss_kib=rss)
    return run


JAVA_BUFFERS = 300


def java_classes(ctx):
    """bench/DirectBuffers.java compiled into the scratch directory."""
    d = os.path.join(ctx.tmp, "java")
    subprocess.run(["javac", "-d", d, os.path.join(BENCH_SRC, "DirectBuffers.java")], check=True, capture_output=True)
    return d


def java_checksum(buffers):
    """DirectBuffers' checksum, from its closed form."""
    words, total = (8 << 20) // 8, 0
    for t in range(4):
        for i in range(buffers):
            base = (t * 1000003 + i) * 0x9E3779B97F4A7C15
            total += words * base + words * (words - 1) // 2
    return total & M64


def java_case(ctx, alloc):
    """A JVM (heap and direct memory 256 MiB) whose 4 threads each
    allocate, fill, checksum and drop 300 direct buffers of 8 MiB:
    seconds of the threads. Checked: the checksum (it checks each buffer
    arrives zero and reads back what it wrote)."""
    classes = ctx.once("java", java_classes)
    _, faults, rss, out = program(ctx, alloc, ["java", "-Xmx256m", "-XX:MaxDirectMemorySize=256m", "-cp", classes,
                                               "DirectBuffers", str(JAVA_BUFFERS)])
    checked("\nok" in out and printed(out, "checksum") == str(java_checksum(JAVA_BUFFERS)),
            "java: %s" % out[-200:])
    return dict(value=float(printed(out, "seconds")), faults=faults, rss_kib=rss)


def sort_sum(ctx):
    """The sort input's (count, sum)."""
    with open(sort_input(ctx)) as f:
        v = [int(l) for l in f]
    return len(v), sum(v)


def sort_case(ctx, alloc):
    """GNU sort -n of 2 million numbers into a file: seconds. Checked (not
    timed): every number, in order."""
    src, (count, total) = sort_input(ctx), ctx.once("sort", sort_sum)
    dst = os.path.join(ctx.tmp, "sorted")
    try:
        wall, faults, rss, _ = program(ctx, alloc, ["sort", "-n", "-o", dst, src])
        check_sorted(dst, count, total)
    finally:
        if os.path.exists(dst):
            os.unlink(dst)
    return dict(value=wall, faults=faults, rss_kib=rss)


# the MariaDB cases' server, its data directory's maker, its clients
MARIADB = (MARIADBD, "mariadb-install-db", "mariadb-admin", "mariadb", "sysbench")


def case(name, unit, higher, run, native="glibc", needs=()):
    return Case(name, unit, higher, run, native, tuple(needs))


CASES = ([case("redis %s %dKB" % (op, size // 1000), "req/s", True, redis_case(op, size), "own jemalloc",
               ("redis-server", "redis-benchmark"))
          for size in (1000, 50000, 500000) for op in ("SET", "GET", "LPUSH", "LRANGE_100")] + [
    case("new[] 5-25 MiB", "s", False, large_blocks, needs=("bench/large_blocks",)),
    case("calloc+touch 32M", "ms", False, calloc_touch, needs=("bench/alloc_bench",)),
    case("pgbench", "tps", True, pgbench, needs=("postgres",)),
    case("pg ORDER BY 2M", "s", False, pg_case(order_by, ("-c", "work_mem=256MB")), needs=("postgres",)),
    case("mariadb oltp_read_write", "tps", True, maria_case(sysbench_rw), needs=MARIADB),
    case("mariadb sort", "s", False, maria_case(maria_order_by), needs=MARIADB),
    case("numpy 20x128M", "s", False, numpy_case, needs=(PYTHON,)),
    case("sqlite3 zeroblob", "s", False, sqlite_case, needs=("sqlite3",)),
    case("zstd -19", "s", False, compress_case("zstd", "-19"), needs=("zstd",)),
    case("xz -9", "s", False, compress_case("xz", "-9"), needs=("xz",)),
    case("java direct 8M", "s", False, java_case,
         needs=("java", "javac", os.path.join(BENCH_SRC, "DirectBuffers.java"))),
    case("sort -n 2M", "s", False, sort_case, needs=("sort",)),
    case("python dicts", "s", False, dicts_case, needs=(PYTHON,)),
])


def have(ctx, need):
    """Whether what a case needs is there: bench/NAME in the build, postgres
    (PostgreSQL's server and clients), a file, or a command on PATH."""
    if need.startswith("bench/"):
        return os.access(os.path.join(ctx.bench, need[6:]), os.X_OK)
    if need == "postgres":
        return os.path.isdir("/usr/lib/postgresql") and bool(shutil.which("runuser") or os.getuid())
    return os.path.exists(need) if os.path.isabs(need) else bool(shutil.which(need))


def run_real(lib, reps, out_dir, only=None, compress_mb=100, hardened=False, allocators=None):
    """Runs the cases whose names start with one of only (default: all),
    writes real.raw.csv, real.csv and real.svg in out_dir and prints the
    table; returns the exit status: 1 if a run failed. hardened adds
    hugezero under HUGEZERO_HARDENED=1 beside the others (not a peer);
    allocators, when given, are the only ones run (the others' columns
    empty)."""
    allocs = ALLOCS + ((HZ_HARDENED,) if hardened else ())
    run_allocs = tuple(a for a in allocs if not allocators or a in allocators)
    ctx = Ctx(lib)
    ctx.compress_mb = compress_mb
    cases = [c for c in CASES if not only or any(c.name.startswith(o) for o in only)]
    missing = ctx.missing() + sorted({n for c in cases for n in c.needs if not have(ctx, n)})
    if not cases or missing:
        ctx.close()
        sys.exit("hugezero suite --real: %s" % ("not installed or built: %s (scripts/deps.sh installs them; "
                                                "scripts/build.sh DIR -DHZ_BENCH=ON builds bench/)" %
                                                ", ".join(missing) if cases else "no case starts so"))
    os.makedirs(out_dir, exist_ok=True)
    start = time.time()
    try:
        runs = alternate(cases, reps, lambda c, a: c.run(ctx, a), lambda c: c.name, run_allocs, progress=True)
    finally:
        ctx.close()
    fields = ("rep", "case", "unit", "allocator", "value", "faults", "peak_rss_kib", "ref", "error")
    write_csv(os.path.join(out_dir, "real.raw.csv"), fields,
              [(rep, c.name, c.unit, a) + ((res["value"], res["faults"], res["rss_kib"], res.get("ref"))
                                           if res else (None,) * 4) + (err,) for rep, c, a, res, err in runs], "%r")
    rows = summarize(runs, cases, allocs)
    report(rows, reps, time.time() - start, out_dir, allocs)
    return 1 if any(err for *_, err in runs) else 0


def summarize(runs, cases, allocs=ALLOCS):
    """A row per case: each allocator's medians (figure, faults, peak RSS,
    figure over the reference), its failed runs; the best of the others
    (by figure) and hugezero's ratios to it and to each."""
    q = lambda x, y: x / y if x is not None and y else None
    rows = []
    for c in cases:
        row = {"case": c.name, "unit": c.unit, "better": "higher" if c.higher else "lower", "glibc_is": c.native}
        for a in allocs:
            ok = [res for _, cc, aa, res, _ in runs if cc is c and aa == a and res]
            row[a] = median([r["value"] for r in ok])
            row[a + "_faults"] = median([r["faults"] for r in ok])
            row[a + "_rss_kib"] = median([r["rss_kib"] for r in ok])
            row[a + "_per_ref"] = median([r["value"] / r["ref"] for r in ok if r.get("ref")])
            row[a + "_failed"] = sum(1 for _, cc, aa, res, _ in runs if cc is c and aa == a and not res)
        peers = [(row[a], a) for a in PEERS if row[a] is not None]
        best = (max if c.higher else min)(peers)[1] if peers else None
        row["best_peer"] = best or ""
        for b, key in [(best, "best")] + [(a, a) for a in PEERS]:
            for fig, suffix in (("", ""), ("_faults", "_faults"), ("_rss_kib", "_rss")):
                row["hz%s_over_%s" % (suffix, key)] = q(row["hugezero" + fig], row[b + fig] if b else None)
        row["hz_faults_over_fewest"] = q(row["hugezero_faults"], min(
            [row[a + "_faults"] for a in PEERS if row[a + "_faults"] is not None], default=None))
        row["hz_rss_over_least"] = q(row["hugezero_rss_kib"], min(
            [row[a + "_rss_kib"] for a in PEERS if row[a + "_rss_kib"] is not None], default=None))
        if HZ_HARDENED in allocs:  # the hardened mode's cost: over hugezero's own
            for fig, suffix in (("", ""), ("_faults", "_faults"), ("_rss_kib", "_rss")):
                row["hardened%s_over_hz" % suffix] = q(row[HZ_HARDENED + fig], row["hugezero" + fig])
        rows.append(row)
    return rows


def report(rows, reps, seconds, out_dir, allocs=ALLOCS):
    """real.csv, real.svg, and the tables on stdout."""
    ratios = ["hz%s_over_%s" % (s, k) for s in ("", "_faults", "_rss") for k in ("best",) + PEERS]
    fields = (["case", "unit", "better", "glibc_is"] + list(allocs) + ["best_peer"] + ratios +
              ["hz_faults_over_fewest", "hz_rss_over_least"] +
              (["hardened_over_hz", "hardened_faults_over_hz", "hardened_rss_over_hz"] if HZ_HARDENED in allocs else []) +
              [a + k for k in ("_faults", "_rss_kib", "_per_ref", "_failed") for a in allocs])
    paths = [os.path.join(out_dir, "real." + x) for x in ("csv", "raw.csv", "svg")]
    write_csv(paths[0], fields, rows)
    plot.relative(rows, paths[2], allocs, PEERS)
    w = max(len(r["case"]) for r in rows)
    head = lambda title: "%-*s %-6s" % (w, title, "") + "".join(" %9s" % a for a in allocs)
    mark = lambda r, a: "*" if a == "glibc" and r["glibc_is"] != "glibc" else " "
    print("medians of %d repetition(s), the allocators in a new random order for every case each time; %.0f s"
          % (reps, seconds))
    print("\nthe program's own figure (better: higher or lower); best: the best of the other four; "
          "hz/x: hugezero's figure over x's")
    print("%-*s %-6s %-6s" % (w, "case", "unit", "better") + "".join(" %9s" % a for a in allocs) +
          "  %-9s %7s" % ("best", "hz/best") + "".join(" %6s" % ("hz/" + a[:2]) for a in PEERS))
    for r in rows:
        print("%-*s %-6s %-6s" % (w, r["case"], r["unit"], r["better"]) +
              "".join(" %8s%s" % (fmt(r[a]), mark(r, a)) for a in allocs) +
              "  %-9s %7s" % (r["best_peer"], ratio(r["hz_over_best"])) +
              "".join(" %6s" % ratio(r["hz_over_" + a]) for a in PEERS))
    for title, key, scale, over in (("minor page faults, thousands", "_faults", 1e3, "fewest"),
                                    ("peak RSS, MiB", "_rss_kib", 1024, "least")):
        extra = "hz_faults" if key == "_faults" else "hz_rss"
        print("\n%s (hz/best: over the best-by-figure's; hz/%s: over the %s of the other four's)"
              % (title, over, over))
        print(head("") + " %7s %7s" % ("hz/best", "hz/" + over))
        for r in rows:
            print("%-*s %-6s" % (w, r["case"], "") + "".join(
                " %8s%s" % (fmt(None if r[a + key] is None else r[a + key] / scale), mark(r, a)) for a in allocs) +
                " %7s %7s" % (ratio(r[extra + "_over_best"]), ratio(r["%s_over_%s" % (extra, over)])))
    for r in rows:
        if any(r[a + "_per_ref"] is not None for a in allocs):
            print("\n%s: one calloc+touch+free over one memset 0 of the same 32 MiB, prefaulted, in the same "
                  "process: %s" % (r["case"], ", ".join("%s %s" % (a, fmt(r[a + "_per_ref"])) for a in allocs)))
    if any(r["glibc_is"] != "glibc" for r in rows):
        print("\n* glibc column: %s" % "; ".join(sorted({"%s's %s" % (r["case"].split()[0], r["glibc_is"])
                                                          for r in rows if r["glibc_is"] != "glibc"})) +
              " (Debian's redis-server links jemalloc itself)")
    if HZ_HARDENED in allocs:
        print("\nHUGEZERO_HARDENED=1 over the default mode (figure, faults, peak RSS): " + "; ".join(
            "%s %s %s %s" % (r["case"], ratio(r["hardened_over_hz"]), ratio(r["hardened_faults_over_hz"]),
                             ratio(r["hardened_rss_over_hz"])) for r in rows))
    failed = ["%s under %s: %d" % (r["case"], a, r[a + "_failed"]) for r in rows for a in allocs if r[a + "_failed"]]
    if failed:
        print("\nfailed runs (errors in the raw CSV): " + "; ".join(failed))
    print("\nCSV: %s, every run: %s, chart: %s" % tuple(paths))

#!/usr/bin/env python3
"""hugezero fleet against a fake Prometheus (no Prometheus binary): an HTTP
server on a free 127.0.0.1 port answers /api/v1/query with canned recorded
series for two services -- redis, one cell with enough calls and a known
ratio, interval and verdict, and processes of both modes with known
figures and comparisons; nginx, one cell whose arm B is empty, and
processes of the on mode only -- and the command's tables, groups, chart
and error paths are checked.
Usage: fleet_fake.py SCRIPTS_DIR (the directory holding hzcli/)"""
import contextlib
import http.server
import io
import json
import os
import re
import sys
import tempfile
import threading
import urllib.parse
import xml.dom.minidom

sys.path.insert(0, sys.argv[1])
from hzcli import fleet  # noqa: E402

W = "5m"
REDIS = {"job": "node", "service": "redis"}
NGINX = {"job": "node", "service": "nginx"}
ZDB = {"job": "node", "service": "zdb"}
SERIES = []  # (name, labels, value)


def arm(user, op, cls, a, calls, nbytes, mean, sd, cum, p):
    """One arm's recorded series: cum {2^k ns: cumulative count}, p the
    p50/p90/p99 in seconds."""
    lab = dict(user, op=op, **{"class": str(cls)}, arm=a)
    squared = calls * (sd * sd + mean * mean)
    for f, v in (("ab_calls:increase", calls), ("ab_bytes:increase", nbytes),
                 ("ab_duration_seconds_sum:increase", calls * mean),
                 ("ab_duration_seconds_squared:increase", squared),
                 ("ab_duration_seconds:mean", mean if calls else float("nan")),
                 ("ab_calls:rate", calls / 300), ("ab_bytes:rate", nbytes / 300)):
        SERIES.append(("hugezero:%s%s" % (f, W), lab, v))
    for q, v in zip(("p50_", "p90_", "p99_"), p):
        SERIES.append(("hugezero:ab_duration_seconds:%s%s" % (q, W), lab, v))
    n = 0
    for k in range(7, 39):
        n = cum.get(2 ** k, n)
        SERIES.append(("hugezero:ab_duration_seconds_bucket:increase" + W, dict(lab, le="%.9g" % (2 ** k / 1e9)), n))
    SERIES.append(("hugezero:ab_duration_seconds_bucket:increase" + W, dict(lab, le="+Inf"), calls))


# redis, memset from 64 KiB: A 1000 calls at 10 us, B 1200 at 8 us; the
# recorded ratio deliberately not what the increases give, to see it is the
# one printed.
arm(REDIS, "memset", 65536, "A", 1000.4, 1000.4 * 65536, 10e-6, 2e-6, {2 ** 13: 300, 2 ** 14: 900, 2 ** 15: 1000.4},
    (9.5e-6, 13e-6, 15e-6))
arm(REDIS, "memset", 65536, "B", 1199.6, 1199.6 * 65536, 8e-6, 2e-6, {2 ** 13: 700, 2 ** 14: 1199.6},
    (7.5e-6, 11e-6, 14e-6))
for f, v in (("ab_ratio", 0.8123), ("ab_ratio_lo95", 0.7891), ("ab_ratio_hi95", 0.8352), ("ab_verdict", -1)):
    SERIES.append(("hugezero:%s:%s" % (f, W), dict(REDIS, op="memset", **{"class": "65536"}), v))
# nginx, calloc from 2 MiB: 5 calls in A, none in B (no ratio recorded).
arm(NGINX, "calloc", 2097152, "A", 5, 5 * 2097152, 100e-6, 10e-6, {2 ** 17: 5}, (98e-6, 120e-6, 120e-6))
arm(NGINX, "calloc", 2097152, "B", 0, 0, 0, 0, {}, (float("nan"),) * 3)



def mode_series(user, figure, per_mode, cmp):
    """A figure's recorded modes' series: per_mode {mode: (count, median,
    mean)}, cmp (ratio, lo95, hi95, verdict) or None."""
    n = "hugezero:process_%s:" % figure
    for mode, values in per_mode.items():
        for f, v in zip(("count", "median", "mean"), values):
            SERIES.append((n + f + W, dict(user, mode=mode), v))
        SERIES.append((n + "relvar" + W, dict(user, mode=mode), 0.01))  # recorded, not shown
    for f, v in zip(("on_off_ratio", "on_off_ratio_lo95_", "on_off_ratio_hi95_", "on_off_verdict"), cmp or ()):
        SERIES.append((n + f + W, dict(user), v))


# redis: 4 processes off, 5 on; faults fewer on, CPU no different, RSS
# higher on, the peak without a recorded comparison.
MIB = 1 << 20
mode_series(REDIS, "minor_faults_per_second", {"off": (4, 1200, 1250), "on": (5, 300, 310.5)},
            (0.2484, 0.2001, 0.2967, -1))
mode_series(REDIS, "cpu_seconds_per_second", {"off": (4, 0.5, 0.52), "on": (5, 0.48, 0.49)},
            (0.9423, 0.85, 1.0346, 0))
mode_series(REDIS, "rss_bytes", {"off": (4, 100 * MIB, 105 * MIB), "on": (5, 110 * MIB, 115 * MIB)},
            (1.0952, 1.02, 1.17, 1))
mode_series(REDIS, "peak_rss_bytes", {"off": (4, 120 * MIB, 121 * MIB), "on": (5, 130 * MIB, 131 * MIB)}, None)
# zdb: processes of both modes, no arms (HUGEZERO_AB unset).
for fig in ("minor_faults_per_second", "cpu_seconds_per_second", "rss_bytes", "peak_rss_bytes"):
    mode_series(ZDB, fig, {"off": (2, 20, 20), "on": (2, 10, 10)}, (0.5, 0.4, 0.6, -1))
# nginx: 3 processes on, none off.
for fig in ("minor_faults_per_second", "cpu_seconds_per_second", "rss_bytes", "peak_rss_bytes"):
    mode_series(NGINX, fig, {"on": (3, 10, 10)}, None)

QUERIES = []  # (path, query, time) as received


class Fake(http.server.BaseHTTPRequestHandler):
    """/api/v1/query: the canned series of the queried name whose labels
    equal the query's matchers; under /empty, none; under /bad, an error."""

    def do_GET(self):
        u = urllib.parse.urlparse(self.path)
        qs = urllib.parse.parse_qs(u.query)
        q = qs.get("query", [""])[0]
        QUERIES.append((u.path, q, qs.get("time", [None])[0]))
        if u.path.startswith("/bad"):
            return self.send(400, {"status": "error", "errorType": "bad_data", "error": "parse error"})
        if not u.path.endswith("/api/v1/query"):
            return self.send(404, {"status": "error", "errorType": "not_found", "error": "no such path"})
        name = q.split("{")[0]
        want = dict(re.findall(r'(\w+)="([^"]*)"', q[len(name):]))
        result = [] if u.path.startswith("/empty") else [
            {"metric": dict(lab, __name__=n), "value": [1700000000, repr(v)]}
            for n, lab, v in SERIES if n == name and all(lab.get(k) == x for k, x in want.items())]
        self.send(200, {"status": "success", "data": {"resultType": "vector", "result": result}})

    def send(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *a):
        pass


FAILED = []


def check(cond, what):
    print(("ok - " if cond else "FAIL - ") + what)
    if not cond:
        FAILED.append(what)


class Args:
    def __init__(self, url, **kw):
        self.prometheus, self.window, self.match, self.time, self.svg = url, W, None, None, None
        self.__dict__.update(kw)


def run(args):
    """cmd_fleet's stdout and its exit (None, or SystemExit's code)."""
    out = io.StringIO()
    code = None
    with contextlib.redirect_stdout(out):
        try:
            fleet.cmd_fleet(args)
        except SystemExit as e:
            code = e.code
    return out.getvalue(), code


def table_row(text, heading, op):
    """The fields of op's row under heading: of the arms' table, A's, B's
    and the comparison; of the modes' (op a figure), off's, on's and the
    comparison."""
    part = text.split("\n" + heading + "\n", 1)[1] if "\n" + heading + "\n" in text else ""
    part = re.split(r"\n\n(?=\S+=)", part)[0]
    for line in part.splitlines():
        if line.startswith(op + " ") and line.count("|") == 3:
            f = line.split("|")
            return f[1].split(), f[2].split(), f[3].strip()
    return None, None, None


def main():
    srv = http.server.HTTPServer(("127.0.0.1", 0), Fake)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    url = "http://127.0.0.1:%d" % srv.server_address[1]
    tmp = tempfile.mkdtemp(prefix="hz-fleet.")
    svg = os.path.join(tmp, "fleet.svg")

    text, code = run(Args(url, svg=svg))
    check(code is None, "fleet ran (exit %r)" % (code,))
    queried = set(fleet.series_names(W).values()) | set(fleet.process_series_names(W).values())
    # (the rates and relvars are not asked for)
    check(text.startswith("window 5m, %d series from %s" % (sum(n in queried for n, _, _ in SERIES), url)),
          "the first line names the window, the series and the server: %r" % text.split("\n")[0])
    redis, nginx = 'job="node", service="redis"', 'job="node", service="nginx"'
    check("\n%s\n" % redis in text and "\n%s\n" % nginx in text and text.index(nginx) < text.index(redis),
          "both services' groups printed, by their labels")
    a, b, cmp = table_row(text, redis, "memset")
    check(cmp == "0.812 [0.789, 0.835]   B faster", "redis: the recorded ratio, interval and verdict: %r" % cmp)
    check(a == ["1000", "10.0", "9.5", "13.0", "15.0", "6.6"] and b == ["1200", "8.0", "7.5", "11.0", "14.0", "8.2"],
          "redis: calls (rounded increases), mean, recorded p50/p90/p99 (us), GB/s: A %s, B %s" % (a, b))
    check(text.count("\n%s\n" % redis) == 1, "the modes make no group of their own")
    check(table_row(text, redis, "minor faults/s") ==
          (["4", "1200", "1250"], ["5", "300", "310.5"], "0.248 [0.200, 0.297]   on lower"),
          "redis, faults: each mode's processes, median and mean, the recorded ratio, interval and verdict: %r"
          % (table_row(text, redis, "minor faults/s"),))
    check(table_row(text, redis, "CPU cores")[2] == "0.942 [0.850, 1.035]   no difference" and
          table_row(text, redis, "RSS MiB (mean)") ==
          (["4", "100", "105"], ["5", "110", "115"], "1.095 [1.020, 1.170]   on higher"),
          "redis, CPU and RSS (in MiB): %r, %r" % (table_row(text, redis, "CPU cores"),
                                                   table_row(text, redis, "RSS MiB (mean)")))
    check(table_row(text, redis, "peak RSS MiB")[2] == "-                      not enough processes" and
          table_row(text, nginx, "minor faults/s") == (["0", "-", "-"], ["3", "10", "10"],
                                                      "-                      not enough processes"),
          "no recorded comparison, a mode without processes: 'not enough processes': %r"
          % (table_row(text, nginx, "minor faults/s"),))
    zdb = 'job="node", service="zdb"'
    part = text.split("\n%s\n" % zdb, 1)[-1]
    check(zdb in text and "A/B arms" not in part and table_row(text, zdb, "CPU cores")[2] ==
          "0.500 [0.400, 0.600]   on lower", "a group with processes of both modes and no arms: the modes' table alone")
    a, b, cmp = table_row(text, nginx, "calloc")
    check(cmp is not None and cmp.split() == ["-", "not", "enough", "calls"],
          "nginx: arm B empty, 'not enough calls': %r" % cmp)
    check(a == ["5", "100.0", "98.0", "120.0", "120.0", "21.0"] and b == ["0", "0.0", "0.0", "0.0", "0.0", "0.0"],
          "nginx: calls and mean, B's empty arm zeros: A %s, B %s" % (a, b))
    charts = [os.path.join(tmp, "fleet.%d.svg" % i) for i in (1, 2)]
    try:
        docs = [xml.dom.minidom.parse(c) for c in charts]
        check("chart: %s" % charts[1] in text and len(docs[1].getElementsByTagName("circle")) == 1 and
              len(docs[1].getElementsByTagName("rect")) > 1,
              "one chart per group, valid SVG; redis's with its ratio and histograms")
    except Exception as e:  # unreadable or not XML
        check(False, "charts: %s" % e)
    check(fleet.hist({1.28e-7: 0, 2.048e-6: 0, 4.096e-6: 0, 8.192e-6: 300, 1.6384e-05: 900, 3.2768e-05: 1000, float("inf"): 1000})
          == {4096: 300, 8192: 600, 16384: 100}, "the buckets de-cumulated, keyed by their lower bound in ns")
    check(fleet.group_name(()) == "(all)", "a group without labels is (all)")

    # --match inside every query's braces, --time passed.
    del QUERIES[:]
    text, code = run(Args(url, match='service="nginx"', time="1700000000"))
    check(code is None and redis not in text and nginx in text, "--match selects nginx's series only")
    check(QUERIES and all(q.endswith('{service="nginx"}') and t == "1700000000" for _, q, t in QUERIES),
          "--match inside every query's braces, --time passed (%d queries)" % len(QUERIES))

    # Errors.
    text, code = run(Args(url + "/empty"))
    check(isinstance(code, str) and "rules" in code, "no hugezero: series: exit with a message about the rules: %r"
          % code)
    text, code = run(Args(url + "/bad"))
    check(isinstance(code, str) and "bad_data" in code and "parse error" in code,
          "the server's error answer: exit with its message: %r" % code)
    srv.shutdown()
    srv.server_close()
    text, code = run(Args(url))
    check(isinstance(code, str) and "cannot reach" in code, "server down: exit with a message: %r" % code)

    sys.exit(1 if FAILED else 0)


if __name__ == "__main__":
    main()

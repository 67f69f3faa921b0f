"""hugezero fleet: the A/B table, verdict and chart of a whole fleet, from
the series a Prometheus server records with hugezero's rules (rules.py).

The contract with the rules, for a window W ("5m", "1h"): every series is
summed without (pid, instance), so the scrape job and user labels remain;
per arm, labels op, class (the size class's smallest size in bytes) and arm
("A"|"B"):
  hugezero:ab_calls:increaseW, hugezero:ab_bytes:increaseW,
  hugezero:ab_duration_seconds_sum:increaseW (s),
  hugezero:ab_duration_seconds_squared:increaseW (s^2),
  hugezero:ab_duration_seconds_bucket:increaseW (cumulative, with le),
  hugezero:ab_duration_seconds:meanW, :p50_W, :p90_W, :p99_W (s);
per comparison, labels op and class:
  hugezero:ab_ratio:W, hugezero:ab_ratio_lo95:W, hugezero:ab_ratio_hi95:W,
  hugezero:ab_verdict:W (1 B slower, -1 B faster, 0 no difference; absent
  below 2 calls an arm).
And the modes of HUGEZERO_PROCESS_AB, per process figure F
(rules.PROCESS_FIGURES), per mode (label mode):
  hugezero:process_F:countW, :meanW, :medianW;
per comparison: hugezero:process_F:on_off_ratioW, :on_off_ratio_lo95_W,
  :on_off_ratio_hi95_W, :on_off_verdictW (1 on higher, -1 on lower, 0 no
  difference; absent below 2 processes a mode).
The other labels (job, service, ...) make the groups, each with the modes'
table and the arms' (the arms run in the on mode only, so their mode label
makes no group of its own)."""
import json
import math
import os
import sys
import urllib.error
import urllib.parse
import urllib.request

from . import modes, plot, rules
from .commands import print_ab_table

TIMEOUT = 10  # seconds, per query
CELL_LABELS = ("__name__", "op", "class", "arm", "le", "mode")
VERDICTS = {1: "B slower", -1: "B faster", 0: "no difference"}


def series_names(w):
    """{field: recorded series name} for window w: per-arm fields, then the
    comparison's (ratio, lo95, hi95, verdict)."""
    return {"calls": "hugezero:ab_calls:increase" + w,
            "bytes": "hugezero:ab_bytes:increase" + w,
            "sum": "hugezero:ab_duration_seconds_sum:increase" + w,
            "squared": "hugezero:ab_duration_seconds_squared:increase" + w,
            "bucket": "hugezero:ab_duration_seconds_bucket:increase" + w,
            "mean": "hugezero:ab_duration_seconds:mean" + w,
            "p50": "hugezero:ab_duration_seconds:p50_" + w,
            "p90": "hugezero:ab_duration_seconds:p90_" + w,
            "p99": "hugezero:ab_duration_seconds:p99_" + w,
            "ratio": "hugezero:ab_ratio:" + w,
            "lo95": "hugezero:ab_ratio_lo95:" + w,
            "hi95": "hugezero:ab_ratio_hi95:" + w,
            "verdict": "hugezero:ab_verdict:" + w}


def process_series_names(w):
    """{(figure, field): recorded series name} of the modes' table for
    window w (rules.process_names, less the relative variance)."""
    return {(f, field): name for f, _, _ in modes.FLEET_FIGURES
            for field, name in rules.process_names(f, w).items() if field != "relvar"}


def query(url, q, time=None):
    """The instant vector of PromQL q at the server url: [{metric: labels,
    value: [ts, "number"]}]; exits with a message when the server cannot be
    reached or answers an error."""
    params = {"query": q}
    if time is not None:
        params["time"] = time
    full = url.rstrip("/") + "/api/v1/query?" + urllib.parse.urlencode(params)
    try:
        with urllib.request.urlopen(full, timeout=TIMEOUT) as r:
            body = json.load(r)
    except urllib.error.HTTPError as e:  # Prometheus's errors come with a JSON body
        try:
            body = json.load(e)
        except ValueError:
            sys.exit("hugezero fleet: %s: HTTP %d %s" % (full, e.code, e.reason))
    except (urllib.error.URLError, OSError) as e:
        sys.exit("hugezero fleet: cannot reach the Prometheus server at %s: %s"
                 % (url, getattr(e, "reason", e)))
    except ValueError:
        sys.exit("hugezero fleet: %s: the answer is not JSON (is this a Prometheus server?)" % full)
    if not isinstance(body, dict) or body.get("status") != "success":
        sys.exit("hugezero fleet: query %s: %s: %s" % (
            q, body.get("errorType", "error") if isinstance(body, dict) else "error",
            body.get("error", body) if isinstance(body, dict) else body))
    data = body.get("data") or {}
    if data.get("resultType") != "vector":
        sys.exit("hugezero fleet: query %s: a %s, not a vector" % (q, data.get("resultType")))
    return data.get("result") or []


def group_name(key):
    """A group's labels as PromQL writes them, or (all)."""
    return ", ".join("%s=%s" % (k, json.dumps(v, ensure_ascii=False)) for k, v in key) or "(all)"


def collect(results):
    """{group: {(op, lo): cell}} from {field: vector}; a cell has "A" and
    "B" ({field: value}, bucket: {le seconds: cumulative increase}) and
    "cmp" ({ratio, lo95, hi95, verdict}); a group is its labels other than
    CELL_LABELS as a sorted tuple of pairs."""
    groups = {}
    for field, vector in results.items():
        for s in vector:
            labels = s["metric"]
            key = tuple(sorted((k, v) for k, v in labels.items() if k not in CELL_LABELS))
            cell = groups.setdefault(key, {}).setdefault(
                (labels.get("op", "?"), int(labels.get("class", 0))),
                {"A": {"bucket": {}}, "B": {"bucket": {}}, "cmp": {}})
            v = float(s["value"][1])
            if field in ("ratio", "lo95", "hi95", "verdict"):
                cell["cmp"][field] = v
            elif labels.get("arm") in ("A", "B"):
                if field == "bucket":
                    cell[labels["arm"]]["bucket"][float(labels["le"])] = v
                else:
                    cell[labels["arm"]][field] = v
    return groups


def collect_modes(results, groups):
    """Into groups ({group: {...}}, as collect makes them), each group's
    "modes": {(figure, field): value} per mode ("off", "on") and, for the
    comparison, under "cmp"; from {(figure, field): vector}."""
    for (figure, field), vector in results.items():
        for s in vector:
            labels = s["metric"]
            key = tuple(sorted((k, v) for k, v in labels.items() if k not in CELL_LABELS))
            table = groups.setdefault(key, {}).setdefault("modes", {})
            where = labels.get("mode", "?") if field in ("count", "mean", "median") else "cmp"
            table.setdefault(where, {})[(figure, field)] = float(s["value"][1])


def mode_rows(table):
    """modes.print_table's rows from a group's recorded modes' series."""
    rows = []
    for figure, name, unit in modes.FLEET_FIGURES:
        row = {"figure": name}
        for m in modes.MODES:
            got = table.get(m, {})
            n, median, mean = (got.get((figure, k)) for k in ("count", "median", "mean"))
            row[m] = {"n": int(round(finite(n))),
                      "median": median * unit if n and median is not None and math.isfinite(median) else None,
                      "mean": mean * unit if n and mean is not None and math.isfinite(mean) else None}
        c = [table.get("cmp", {}).get((figure, k), math.nan) for k in ("ratio", "lo95", "hi95", "verdict")]
        row["cmp"] = (c[0], c[1], c[2], modes.VERDICTS.get(int(c[3]), "?")) \
            if all(math.isfinite(x) for x in c) else None
        rows.append(row)
    return rows


def finite(x):
    return x if x is not None and math.isfinite(x) else 0.0


def rows(cells):
    """commands.print_ab_table's rows from a group's cells: calls, mean and
    percentiles (ns) and GB/s per arm from the recorded series, cmp the
    recorded (ratio, lo95, hi95, verdict), None when any is absent."""
    out = []
    for (op, lo), cell in sorted(cells.items()):
        c = cell["cmp"]
        ok = all(math.isfinite(c.get(k, math.nan)) for k in ("ratio", "lo95", "hi95", "verdict"))
        row = {"op": op, "lo": lo,
               "cmp": (c["ratio"], c["lo95"], c["hi95"], VERDICTS.get(int(c["verdict"]), "?")) if ok else None}
        for arm in "AB":
            a = cell[arm]
            calls, ns = finite(a.get("calls")), finite(a.get("sum")) * 1e9
            row[arm] = {"calls": int(round(calls)),
                        "mean": finite(a.get("mean")) * 1e9 if calls else 0,
                        "p": [finite(a.get(q)) * 1e9 for q in ("p50", "p90", "p99")],
                        "gbps": finite(a.get("bytes")) / ns if ns else 0}
        out.append(row)
    return out


def hist(bucket):
    """{lower bound ns: count} from cumulative {le seconds: count}: each
    bucket's lower bound is the previous le (the first's: half its le, as
    le = 2^k ns); negative differences (extrapolation) count 0."""
    out, prev_le, prev_n = {}, None, 0.0
    for le in sorted(bucket):
        lo = prev_le if prev_le is not None else le / 2
        n = bucket[le] - prev_n
        if n > 0 and math.isfinite(lo):
            out[int(round(lo * 1e9))] = n
        prev_le, prev_n = le, max(prev_n, bucket[le])
    return out


def merged(cells):
    """plot.ab_chart's m from a group's cells, as merge.merge builds it."""
    return {"ab": {k: {arm: {"calls": finite(c[arm].get("calls")), "bytes": finite(c[arm].get("bytes")),
                             "ns": finite(c[arm].get("sum")) * 1e9, "ns2": finite(c[arm].get("squared")) * 1e18,
                             "hist": hist(c[arm]["bucket"])} for arm in "AB"}
                   for k, c in cells.items()}}


def cmd_fleet(args):
    match = (args.match or "").strip().strip("{}")

    def ask(names):
        return {f: query(args.prometheus, n + ("{%s}" % match if match else ""), args.time)
                for f, n in names.items()}
    results, process = ask(series_names(args.window)), ask(process_series_names(args.window))
    count = sum(len(v) for v in results.values()) + sum(len(v) for v in process.values())
    if not count:
        sys.exit("hugezero fleet: no hugezero:ab_* or hugezero:process_* series for window %s%s at %s (are "
                 "hugezero's recording rules loaded in that server? see rules.py)"
                 % (args.window, " matching {%s}" % match if match else "", args.prometheus))
    groups = collect(results)
    collect_modes(process, groups)
    print("window %s, %d series from %s%s" % (args.window, count, args.prometheus,
                                              " at %s" % args.time if args.time else ""))
    for i, (key, cells) in enumerate(sorted(groups.items())):
        table = cells.pop("modes", None)
        print("\n" + group_name(key))
        if table:
            modes.print_table(mode_rows(table), "over the last " + args.window)
        if not cells:
            continue
        print_ab_table(rows(cells))
        if args.svg:
            # One group: FILE itself; several: FILE's name with .1, .2, ...
            base, ext = os.path.splitext(args.svg)
            path = args.svg if len(groups) == 1 else "%s.%d%s" % (base, i + 1, ext or ".svg")
            plot.ab_chart(merged(cells), path)
            print("\nchart: %s" % path)


def add_arguments(subparsers):
    """The fleet subcommand on the command's subparsers; func=cmd_fleet."""
    f = subparsers.add_parser("fleet", help="the fleet's A/B from a Prometheus server's recorded series: "
                                            "the modes' table (HUGEZERO_PROCESS_AB), the arms' table, "
                                            "verdicts and chart")
    f.add_argument("--prometheus", required=True, metavar="URL", help="the server, e.g. http://127.0.0.1:9090")
    f.add_argument("--window", default="5m", help="the recorded series' window suffix (default 5m)")
    f.add_argument("--match", help="label matchers added to every query, e.g. 'service=\"redis\",region=\"eu\"'")
    f.add_argument("--time", help="evaluate at this time (unix seconds; default now)")
    f.add_argument("--svg", metavar="FILE", help="write the A/B chart here (several groups: FILE.1.svg, ...)")
    f.set_defaults(func=cmd_fleet)

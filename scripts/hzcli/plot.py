"""The command's SVG charts: the arms' B/A ratios and latency histograms,
the memset benchmark's throughput by size, the allocator benchmark's times
relative to glibc. Plain SVG text, no plotting library."""
import math

from .stats import compare
from .units import size_name


def ab_chart(m, path):
    """B/A ratio by size class with its interval, one row per operation;
    beside it, the latency histograms of both arms for the busiest class."""
    W, H, pad = 960, 420, 50
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="sans-serif" font-size="12">' % (W, H),
           '<rect width="100%" height="100%" fill="white"/>']
    cells = [(k, compare(v["A"], v["B"])) for k, v in sorted(m["ab"].items())]
    cells = [(k, c) for k, c in cells if c]
    # Left: ratios.
    x0, x1, y0, y1 = pad, W // 2 - 20, pad, H - pad
    out.append('<text x="%d" y="20" font-size="14">B/A time by size class, 95%% interval '
               '(below 1: hugezero faster)</text>' % x0)
    if cells:
        hi = max(2.0, max(c[2] for _, c in cells) * 1.1)
        ymap = lambda r: y1 - (y1 - y0) * min(max(r, 0), hi) / hi
        out.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#999" stroke-dasharray="4"/>'
                   % (x0, ymap(1), x1, ymap(1)))
        for t in (0, 0.5, 1, 1.5, 2):
            if t <= hi:
                out.append('<text x="%d" y="%.1f" text-anchor="end">%.1f</text>' % (x0 - 5, ymap(t) + 4, t))
        step = (x1 - x0) / (len(cells) + 1)
        for i, ((op, lo), (r, rlo, rhi, verdict)) in enumerate(cells):
            x = x0 + step * (i + 1)
            color = "#2a7" if verdict == "B faster" else "#c33" if verdict == "B slower" else "#777"
            out.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"/>'
                       % (x, ymap(rlo), x, ymap(rhi), color))
            out.append('<circle cx="%.1f" cy="%.1f" r="4" fill="%s"/>' % (x, ymap(r), color))
            out.append('<text x="%.1f" y="%d" text-anchor="middle">%s from %s</text>' % (x, y1 + 15, op, size_name(lo)))
            out.append('<text x="%.1f" y="%d" text-anchor="middle">%.2f</text>' % (x, y1 + 30, r))
    else:
        out.append('<text x="%d" y="%d">no A/B figures (run with --ab)</text>' % (x0, H // 2))
    # Right: histograms of the busiest class.
    x0, x1, y0 = W // 2 + 40, W - 20, pad + 20
    if m["ab"]:
        key, arms = max(m["ab"].items(), key=lambda kv: kv[1]["A"]["calls"] + kv[1]["B"]["calls"])
        out.append('<text x="%d" y="40" font-size="14">latency, %s from %s: A grey, B green</text>'
                   % (x0, key[0], size_name(key[1])))
        los = sorted(set(arms["A"]["hist"]) | set(arms["B"]["hist"]))
        if los:
            top = max(max(arms[a]["hist"].get(lo, 0) / max(arms[a]["calls"], 1) for lo in los) for a in "AB")
            bw = (x1 - x0) / len(los)
            for i, lo in enumerate(los):
                for j, (arm, color) in enumerate((("A", "#999"), ("B", "#2a7"))):
                    share = arms[arm]["hist"].get(lo, 0) / max(arms[arm]["calls"], 1)
                    h = (y1 - y0) * share / top if top else 0
                    out.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>'
                               % (x0 + i * bw + j * bw / 2, y1 - h, bw / 2, h, color))
                if i % max(1, len(los) // 6) == 0:
                    out.append('<text x="%.1f" y="%d" text-anchor="middle">%.0f us</text>'
                               % (x0 + i * bw, y1 + 15, lo / 1e3))
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def lines(rows, xkey, ykey, series_key, series, path, title, ylabel):
    """A log-x line chart of ykey against xkey, one line per series."""
    W, H, pad, legend = 1000, 420, 60, 120
    rows = [r for r in rows if r[xkey].isdigit()]  # the size sweep, not the extra rows
    pts = {s: sorted((float(r[xkey]), float(r[ykey])) for r in rows if r[series_key] == s) for s in series}
    xs = [x for p in pts.values() for x, _ in p]
    ys = [y for p in pts.values() for _, y in p]
    if not xs:
        return
    lx0, lx1 = math.log2(min(xs)), math.log2(max(xs))
    ymax = max(ys) * 1.1
    X = lambda x: pad + (W - pad - legend) * (math.log2(x) - lx0) / max(lx1 - lx0, 1)
    Y = lambda y: H - pad - (H - 2 * pad) * y / ymax
    colors = ["#777", "#2a7", "#36c", "#c33", "#c90", "#939", "#3aa", "#a63", "#555", "#0a0"]
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" '
           'font-size="12"><rect width="100%%" height="100%%" fill="white"/>' % (W, H),
           '<text x="%d" y="24" font-size="14">%s</text>' % (pad, title),
           '<text x="12" y="%d" transform="rotate(-90 12 %d)">%s</text>' % (H // 2, H // 2, ylabel)]
    for i, s in enumerate(series):
        p = pts[s]
        if p:
            out.append('<polyline fill="none" stroke="%s" stroke-width="%d" points="%s"/>' % (
                colors[i % len(colors)], 3 if s == "hugezero" else 1,
                " ".join("%.1f,%.1f" % (X(x), Y(y)) for x, y in p)))
            out.append('<text x="%d" y="%d" fill="%s">%s</text>' % (W - legend + 10, 40 + 14 * i,
                                                                   colors[i % len(colors)], s))
    for k in range(5):
        y = ymax * k / 4
        out.append('<text x="%d" y="%.1f" text-anchor="end">%.0f</text>' % (pad - 4, Y(y) + 4, y))
    for x in sorted(set(xs))[::3]:
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>' % (X(x), H - pad + 15, size_name(int(x))))
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


PALETTE = {"glibc": "#777", "jemalloc": "#c90", "mimalloc": "#36c", "tcmalloc": "#c33",
           "hz-nobg": "#9d9", "hugezero": "#2a7"}


def bars(out, groups, allocs, box, lim, title, slant=False):
    """Appends to out a panel in box (x0, x1, top, bottom): a group of bars
    per (label, {allocator: ratio}), each bar from 1 to its ratio on a log
    scale clipped to [1/lim, lim]; the title above, the labels below (at a
    slant for many groups)."""
    x0, x1, top, bottom = box
    mid = (top + bottom) / 2
    Y = lambda v: mid - (mid - top) * max(-1, min(1, math.log(v, lim)))
    out.append('<text x="%d" y="%d" font-size="14">%s</text>' % (x0, top - 36, title))
    for t in (1 / lim, lim ** -0.5, 1, lim ** 0.5, lim):
        out.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s"/>' % (
            x0, Y(t), x1, Y(t), "#333" if t == 1 else "#ddd"))
        out.append('<text x="%d" y="%.1f" text-anchor="end">%sx</text>' % (
            x0 - 4, Y(t) + 4, "%g" % t if t >= 1 else "1/%g" % round(1 / t, 2)))
    gw = (x1 - x0) / max(len(groups), 1)
    bw = gw / (len(allocs) + 1)
    for i, (label, vals) in enumerate(groups):
        for j, a in enumerate(allocs):
            v = vals.get(a)
            if not v or v <= 0:
                continue
            y, y1 = sorted((Y(v), Y(1)))
            out.append('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>' % (
                x0 + i * gw + j * bw, y, bw - 1, max(y1 - y, 1), PALETTE.get(a, "#000")))
        x = x0 + i * gw + gw / 2 - bw / 2
        if slant:
            out.append('<text x="%.1f" y="%d" text-anchor="end" transform="rotate(-30 %.1f %d)">%s</text>'
                       % (x, bottom + 14, x, bottom + 14, label))
        else:
            out.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>' % (x, bottom + 50, label))


def legend(out, allocs, x, y):
    for j, a in enumerate(allocs):
        out.append('<text x="%d" y="%d" fill="%s">%s</text>' % (x, y + 14 * j, PALETTE.get(a, "#000"), a))


def svg(path, W, H, out):
    """Writes the elements out in an SVG of W x H, white, to path."""
    with open(path, "w") as f:
        f.write("\n".join(['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" '
                           'font-size="11"><rect width="100%%" height="100%%" fill="white"/>' % (W, H)] + out +
                          ["</svg>"]) + "\n")


def ratio_of(x, base):
    try:
        return float(x) / float(base)
    except (TypeError, ValueError, ZeroDivisionError):
        return None


def alloc(rows, path, allocs=("glibc", "jemalloc", "mimalloc", "tcmalloc", "hugezero")):
    """Each allocator's time relative to glibc's, per case, on a log scale
    (hugezero last, in green)."""
    W, H, pad = 1000, 440, 60
    rows = [r for r in rows if r.get("glibc") not in (None, "", "fail")]
    if not rows:
        return
    out = []
    bars(out, [(r["case"], {a: ratio_of(r.get(a), r["glibc"]) for a in allocs}) for r in rows], allocs,
         (pad, W - 20, pad, H - pad), 64.0,
         "time relative to glibc (log scale; below the line: faster than glibc)")
    legend(out, allocs, W - 100, 44)
    svg(path, W, H, out)


def relative(rows, path, allocs, peers):
    """The real suite's chart, three panels of a group of bars per case
    (log scales): each allocator's speed relative to the best of the peers
    (its figure over the best's, or the best's over its for a lower-better
    figure: above 1, faster than every peer), then its minor faults and its
    peak RSS over the fewest and the least of the peers'."""
    def over_least(key):
        def f(r, a):
            least = min((float(r[p + key]) for p in peers if r[p + key] not in (None, "")), default=None)
            return ratio_of(r[a + key], least)
        return f

    def speed(r, a):
        figures = [float(r[p]) for p in peers if r[p] not in (None, "")]
        if not figures or r[a] in (None, ""):
            return None
        higher = r["better"] == "higher"
        best = max(figures) if higher else min(figures)
        return ratio_of(r[a], best) if higher else ratio_of(best, r[a])

    panels = [("speed relative to the best of the others (log scale; above the line: faster than all of them)",
               speed, 16.0),
              ("minor page faults relative to the fewest of the others' (below the line: fewer)",
               over_least("_faults"), 64.0),
              ("peak RSS relative to the least of the others' (below the line: less)", over_least("_rss_kib"), 4.0)]
    W, ph, pad = max(1000, 80 + 64 * len(rows)), 420, 70
    out = []
    for k, (title, f, lim) in enumerate(panels):
        top = pad + k * ph
        bars(out, [(r["case"], {a: f(r, a) for a in allocs}) for r in rows], allocs,
             (pad, W - 120, top, top + ph - 150), lim, title, slant=True)
    legend(out, allocs, W - 100, pad)
    svg(path, W, pad + len(panels) * ph, out)

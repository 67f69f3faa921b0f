"""The A/B arms' statistics, as the library computes them (obs/ab_stats.c):
the log-linear latency buckets, quantiles of a histogram, and the B/A ratio
of mean times with its 95% interval by the delta method. tests/programs/
cli.sh checks that these give the library's own figures on its report.
And the modes' (HUGEZERO_PROCESS_AB): the on/off ratio of a figure's mean
per process by the same method, as the recording rules compute it
(rules.process_rules)."""
import math

LO, MAJ, SUB = 6, 32, 4  # HZ_AB_H_LO, HZ_AB_H_MAJ, HZ_AB_H_SUB
LAST = 2 ** (LO + MAJ - 1) * (1 + (SUB - 1) / SUB)  # the last bucket's lower bound


def bucket_hi(lo):
    """The upper bound of the bucket whose lower bound is lo (ns)."""
    e = math.floor(math.log2(lo))
    sub = round((lo / 2 ** e - 1) * SUB)
    return 2 ** e * (1 + (sub + 1) / SUB)


def quantile(hist, q):
    """The q-quantile of a histogram {lower bound: count}: the midpoint of
    the bucket it falls in (the last, open bucket: its lower bound); 0 for
    an empty one."""
    total = sum(hist.values())
    if not total:
        return 0.0
    want, seen = math.ceil(q * total), 0
    for lo in sorted(hist):
        seen += hist[lo]
        if seen >= want and seen:
            return lo if lo >= LAST else (lo + bucket_hi(lo)) / 2
    return 0.0


def compare(a, b):
    """(ratio, lo, hi, verdict) of arms a and b ({calls, ns, ns2}), or None
    below 2 calls an arm."""
    if a["calls"] < 2 or b["calls"] < 2:
        return None
    na, nb = a["calls"], b["calls"]
    ma, mb = a["ns"] / na, b["ns"] / nb
    va = max(0.0, (a["ns2"] - na * ma * ma) / (na - 1))
    vb = max(0.0, (b["ns2"] - nb * mb * mb) / (nb - 1))
    r = mb / ma
    half = 1.96 * r * math.sqrt(vb / (nb * mb * mb) + va / (na * ma * ma))
    lo, hi = r - half, r + half
    verdict = "B faster" if hi < 1 else "B slower" if lo > 1 else "no difference"
    return r, lo, hi, verdict


def compare_means(on, off):
    """(ratio, lo, hi, verdict) of the per-process values on and off (the
    modes' processes): the ratio of their means, its 95% interval by the
    delta method, each mean with its own sample variance (Welch's way, as
    compare's arms), and "on lower" (the interval below 1), "on higher"
    (above) or "no difference"; None below 2 processes a mode or where a
    mean is not positive. A large-sample interval: with a handful of
    processes a mode it is narrower than it should be."""
    if len(on) < 2 or len(off) < 2:
        return None
    m_on, m_off = sum(on) / len(on), sum(off) / len(off)
    if m_on <= 0 or m_off <= 0:
        return None

    def relvar(xs, m):  # var / (N mean^2): the mean's squared relative error
        return sum((x - m) ** 2 for x in xs) / (len(xs) - 1) / (len(xs) * m * m)
    r = m_on / m_off
    half = 1.96 * r * math.sqrt(relvar(on, m_on) + relvar(off, m_off))
    lo, hi = r - half, r + half
    return r, lo, hi, "on lower" if hi < 1 else "on higher" if lo > 1 else "no difference"

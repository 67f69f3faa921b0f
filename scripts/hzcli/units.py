"""Sizes as a reader writes them."""


def size_name(n):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return "%d %s" % (n >> shift, unit)
    return "%d B" % n

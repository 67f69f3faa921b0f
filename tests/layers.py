#!/usr/bin/env python3
"""The rooms point one way: every #include and every call between the
library's files runs down the order README.md's Layout section gives, never
up, so there is no circle of files.

The order is the first fenced block of the Layout section: one line per
room, bottom-up, "room/  unit unit ...", the units of a room bottom-up
too ("*": the room's files are not ordered among themselves). A unit is a
file name without its extension: a .c file and the header of the same name
are one unit. A file may include, and its object may call, only its own
unit, units to its left in its room, and files of lower rooms.

Includes are read from the sources; calls from the objects the build made
(nm: an undefined symbol of one object, defined by another: the library's
hz_* functions and data, and its exported ones such as memset). Calls
through a function pointer are not seen: the rooms pass one only where a
layer is optional at link time.

Usage: layers.py SOURCE_DIR BUILD_DIR [--reversed]
--reversed checks against every room's order reversed, and succeeds only
when that finds violations: the check can fail.
"""
import os
import re
import subprocess
import sys


def read_order(readme):
    text = open(readme).read()
    section = text[text.index("\n## Layout"):]
    block = section[section.index("```") + 3:]
    block = block[block.index("\n") + 1:block.index("```")]
    rooms = []
    for line in block.splitlines():
        line = line.split("#")[0].strip()
        if not line:
            continue
        room, *units = line.split()
        rooms.append((room.rstrip("/"), units))
    return rooms


def unit_of(path):
    """The room and unit of a source path relative to the source dir."""
    parts = path.split("/")
    room = parts[0]
    name = os.path.splitext(parts[-1])[0]
    return room, name


class Order:
    def __init__(self, rooms, reverse=False):
        self.room_rank = {r: i for i, (r, _) in enumerate(rooms)}
        self.unit_rank = {}
        self.unordered = set()
        for r, units in rooms:
            if units == ["*"]:
                self.unordered.add(r)
                continue
            seq = list(reversed(units)) if reverse else units
            for i, u in enumerate(seq):
                self.unit_rank[(r, u)] = i

    def known(self, path):
        room, name = unit_of(path)
        return room in self.unordered or (room, name) in self.unit_rank

    def allowed(self, src, dst):
        """Whether file src may include or call file dst."""
        sr, su = unit_of(src)
        dr, du = unit_of(dst)
        if self.room_rank[dr] != self.room_rank[sr]:
            return self.room_rank[dr] < self.room_rank[sr]
        if su == du:
            return True
        a, b = self.unit_rank.get((sr, su)), self.unit_rank.get((dr, du))
        if a is None or b is None:
            return True  # an unordered room ("*")
        return b < a


def sources(src_dir, rooms):
    out = []
    for r, _ in rooms:
        for root, _, files in os.walk(os.path.join(src_dir, r)):
            for f in files:
                if f.endswith((".c", ".h")):
                    out.append(os.path.relpath(os.path.join(root, f), src_dir))
    return sorted(out)


def includes(src_dir, path):
    """The library's files path includes, relative to src_dir."""
    found = []
    arch_dirs = [d for d in os.listdir(os.path.join(src_dir, "arch"))
                 if os.path.isdir(os.path.join(src_dir, "arch", d))]
    for m in re.finditer(r'^\s*#\s*include\s+"([^"]+)"', open(os.path.join(src_dir, path)).read(), re.M):
        inc = m.group(1)
        cands = [os.path.normpath(os.path.join(os.path.dirname(path), inc))]
        cands += [os.path.join("arch", d, inc) for d in arch_dirs]  # the build's -I arch/<cpu>
        for c in cands:
            if os.path.exists(os.path.join(src_dir, c)):
                found.append(c)
                break
        else:
            found.append(None)
    return found


def objects(build_dir, src_dir):
    """Object file -> its source, for the library's rooms."""
    out = {}
    base = os.path.join(build_dir, "CMakeFiles")
    for target in ("hzos", "hzarch", "hzobs", "hzalloc", "hugezero_static", "hugezero"):
        tdir = os.path.join(base, target + ".dir")
        for root, _, files in os.walk(tdir):
            for f in files:
                if f.endswith(".c.o"):
                    obj = os.path.join(root, f)
                    src = os.path.relpath(obj, tdir)[:-2]
                    if os.path.exists(os.path.join(src_dir, src)):
                        out[obj] = src
    return out


def symbols(obj):
    defined, undefined = set(), set()
    res = subprocess.run(["nm", obj], capture_output=True, text=True, check=True)
    for line in res.stdout.splitlines():
        f = line.split()
        if len(f) == 2 and f[0] == "U":
            undefined.add(f[1])
        elif len(f) == 3 and f[1] in "TDBRVWtdbr" and f[1].isupper():
            defined.add(f[2])
    return defined, undefined


def check(src_dir, build_dir, order, rooms, quiet=False):
    bad, edges = [], 0

    def say(msg):
        if not quiet:
            print(msg)

    files = sources(src_dir, rooms)
    for path in files:
        if not order.known(path):
            bad.append(f"{path}: not in README's Layout order")
            continue
        for inc in includes(src_dir, path):
            if inc is None or not order.known(inc):
                continue
            edges += 1
            if not order.allowed(path, inc):
                bad.append(f"{path} includes {inc}: up the order")
    objs = objects(build_dir, src_dir)
    if len([s for s in objs.values() if s.startswith(("allocator/", "preload/"))]) < 20:
        bad.append(f"too few objects found in {build_dir}: {len(objs)}")
    syms = {o: symbols(o) for o in objs}
    owner = {}
    for o, (d, _) in syms.items():
        for s in d:
            owner.setdefault(s, objs[o])
    for o, (_, u) in syms.items():
        src = objs[o]
        for s in sorted(u):
            dst = owner.get(s)
            if not dst or not order.known(src) or not order.known(dst):
                continue
            edges += 1
            if not order.allowed(src, dst):
                bad.append(f"{src} calls {s} of {dst}: up the order")
    for b in bad:
        say("FAIL - " + b)
    say(f"{len(files)} files, {len(objs)} objects, {edges} edges checked, {len(bad)} against the order")
    return bad


def main():
    src_dir, build_dir = sys.argv[1], sys.argv[2]
    reverse = "--reversed" in sys.argv[3:]
    rooms = read_order(os.path.join(src_dir, "README.md"))
    bad = check(src_dir, build_dir, Order(rooms, reverse), rooms, quiet=reverse)
    if reverse:
        print(f"reversed order: {len(bad)} violations found (expected some)")
        sys.exit(0 if len(bad) > 10 else 1)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()

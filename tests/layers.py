#!/usr/bin/env python3
"""The rooms point one way: every #include, every call and every function
handed on between the library's files runs down the order docs/layers.txt
gives, never up, so there is no circle of files.

The order: one line per room, bottom-up, "room/  unit unit ...", the units
of a room bottom-up too ("*": the room's files are not ordered among
themselves). A unit is a file name without its extension: a .c file and
the header of the same name are one unit. A file may include, and its
object may call, only its own unit, units to its left in its room, and
files of lower rooms. "handoff: name ..." lists functions that take a
function only to give it to the C library (a thread's entry).

Includes are read from the sources; calls from the objects the build made
(nm: an undefined symbol of one object, defined by another: the library's
hz_* functions and data, and its exported ones such as memset). Functions
handed on (x86-64 objects, objdump): a function's address loaded (lea, or
a GOT or PC-relative relocation) and then, in the same function, a
direct call, the loaded address its argument; the callee must not lie
below the function's own unit, or it could call up through it. Not seen:
an address stored into a lower room's variable or table and called from
there later, or one loaded through a section symbol (a .cold part).

Usage: layers.py SOURCE_DIR BUILD_DIR [--reversed]
--reversed checks against every room's order reversed, with no handoffs
allowed, and succeeds only when that finds violations of both kinds: the
checks can fail.
"""
import os
import re
import subprocess
import sys


def read_order(path):
    rooms, handoff = [], set()
    for line in open(path):
        line = line.split("#")[0].strip()
        if not line:
            continue
        room, *units = line.split()
        if room == "handoff:":
            handoff.update(units)
        else:
            rooms.append((room.rstrip("/"), units))
    return rooms, handoff


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

    def unordered_room(self, path):
        return unit_of(path)[0] in self.unordered

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


RELOC = re.compile(r"^\s+[0-9a-f]+: (R_X86_64_\w+)\s+([^\s+-]+)")
INSN = re.compile(r"^\s+[0-9a-f]+:\s+(\S+)\s*(.*)$")
TAKE = ("R_X86_64_PC32", "R_X86_64_GOTPCREL", "R_X86_64_GOTPCRELX", "R_X86_64_REX_GOTPCRELX",
        "R_X86_64_32", "R_X86_64_32S", "R_X86_64_64")
FUNC_START = re.compile(r"^[0-9a-f]+ <([\w.]+)>:$")


def handed(obj, functions):
    """(g, h) pairs of an object: function g's address loaded, then a
    direct call to h (g one of its arguments). Local functions resolved
    by the assembler show in the comment of their lea."""
    out = subprocess.run(["objdump", "-dr", "--no-show-raw-insn", obj],
                         capture_output=True, text=True, check=True).stdout
    pairs, pending, last = [], [], ""
    for line in out.splitlines():
        if FUNC_START.match(line):  # an address loaded in one function is not another's argument
            pending, last = [], ""
            continue
        m = RELOC.match(line)
        if m:
            kind, sym = m.groups()
            if last.startswith(("call", "jmp")):
                pairs += [(g, sym) for g in pending]
                pending = []
            elif kind in TAKE and sym in functions:
                pending.append(sym)
            continue
        m = INSN.match(line)
        if not m:
            continue
        last, args = m.groups()
        c = re.search(r"# [0-9a-f]+ <([\w.]+)>$", args)
        if last == "lea" and c and c.group(1) in functions:
            pending.append(c.group(1))
        elif last.startswith("call") and re.search(r"<[\w.]+>$", args):
            pending = []  # a call within the object, to one of its own
    return pairs


def check(src_dir, build_dir, order, rooms, handoff=(), quiet=False):
    bad, edges = [], 0

    def say(msg):
        if not quiet:
            print(msg)

    files = sources(src_dir, rooms)
    for path in files:
        if not order.known(path):
            bad.append(f"{path}: not in docs/layers.txt")
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
    handed_bad = 0
    text = {}
    for o in objs:
        res = subprocess.run(["nm", o], capture_output=True, text=True, check=True).stdout
        text[o] = {f[2]: f[1] for f in (l.split() for l in res.splitlines()) if len(f) == 3 and f[1] in "tT"}
    global_functions = {s for t in text.values() for s, k in t.items() if k == "T"}
    for o in objs:
        src = objs[o]
        local = {s for s, k in text[o].items() if k == "t"}
        functions = local | global_functions
        for g, h in handed(o, functions):
            gsrc = src if g in local else owner.get(g)
            hsrc = owner.get(h)
            if not gsrc or not hsrc or h in handoff or not order.known(gsrc) or not order.known(hsrc):
                continue
            edges += 1
            if unit_of(gsrc) == unit_of(hsrc) or (order.unordered_room(gsrc) and unit_of(gsrc)[0] == unit_of(hsrc)[0]):
                continue
            if order.allowed(gsrc, hsrc):  # h lies below g: it would call up through g
                bad.append(f"{src} hands {g} of {gsrc} to {h} of {hsrc}, below it")
                handed_bad += 1
    check.handed_bad = handed_bad
    for b in bad:
        say("FAIL - " + b)
    say(f"{len(files)} files, {len(objs)} objects, {edges} edges checked, {len(bad)} against the order")
    return bad


def main():
    src_dir, build_dir = sys.argv[1], sys.argv[2]
    reverse = "--reversed" in sys.argv[3:]
    rooms, handoff = read_order(os.path.join(src_dir, "docs", "layers.txt"))
    bad = check(src_dir, build_dir, Order(rooms, reverse), rooms, () if reverse else handoff, quiet=reverse)
    if reverse:
        print(f"reversed order, no handoffs: {len(bad)} violations found, "
              f"{check.handed_bad} of functions handed down (expected some of both)")
        sys.exit(0 if len(bad) > 10 and check.handed_bad > 0 else 1)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()

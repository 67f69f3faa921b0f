"""Whether preloading hugezero reaches a program: where its malloc and
memset resolve, found as the dynamic linker finds them (the first object
in the global scope that defines the symbol: the executable, the
preloads, then the libraries it needs, in the order ld.so's own trace
lists them), and the reasons preloading can do nothing: a statically
linked executable, an allocator linked into the program (jemalloc,
mimalloc, tcmalloc, Go's runtime), a sanitizer runtime that must come
first. Reads ELF files only; runs nothing but ld.so's trace
(LD_TRACE_LOADED_OBJECTS, as ldd does), never the program."""
import os
import re
import shutil
import struct
import subprocess

SANITIZERS = ("libasan.so", "libtsan.so", "libhwasan.so", "liblsan.so", "libmsan.so")
# Symbols an allocator linked into a program defines, by allocator.
LINKED = (("hugezero", ("hz_stat",)), ("jemalloc", ("je_malloc", "je_mallocx", "_rjem_malloc", "_rjem_mallocx", "mallocx")),
          ("mimalloc", ("mi_malloc",)), ("tcmalloc", ("tc_malloc",)))
BANNERS = ((b"<jemalloc>: ", "jemalloc"), (b"mimalloc: option", "mimalloc"))


class Elf:
    """An ELF file's dynamic loader (PT_INTERP), and the symbols it defines:
    those it exports (.dynsym, default or protected visibility) and all it
    has names for (.dynsym and .symtab); ok is False for a file that is
    not ELF."""

    def __init__(self, path):
        self.ok, self.interp, self.exported, self.named, self.sections = False, None, set(), set(), set()
        self.banner = None
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            return
        if data[:4] != b"\x7fELF" or data[4] not in (1, 2) or data[5] not in (1, 2):
            return
        wide, end = data[4] == 2, "<" if data[5] == 1 else ">"
        try:
            self._parse(data, wide, end)
        except (struct.error, IndexError, ValueError):  # a file cut short or corrupt
            return
        self.ok = True
        self.banner = next((name for text, name in BANNERS if text in data), None)

    def _parse(self, data, wide, end):
        if wide:
            phoff, shoff = struct.unpack_from(end + "QQ", data, 32)
            phentsize, phnum, shentsize, shnum, shstrndx = struct.unpack_from(end + "HHHHH", data, 54)
        else:
            phoff, shoff = struct.unpack_from(end + "II", data, 28)
            phentsize, phnum, shentsize, shnum, shstrndx = struct.unpack_from(end + "HHHHH", data, 42)
        for i in range(phnum):
            at = phoff + i * phentsize
            if struct.unpack_from(end + "I", data, at)[0] == 3:  # PT_INTERP: the loader's path
                offset = struct.unpack_from(end + ("Q" if wide else "I"), data, at + (8 if wide else 4))[0]
                self.interp = data[offset:data.index(b"\0", offset)].decode(errors="replace")
        shdr = end + ("IIQQQQIIQQ" if wide else "IIIIIIIIII")
        secs = [struct.unpack_from(shdr, data, shoff + i * shentsize) for i in range(shnum)]
        names = secs[shstrndx] if shstrndx < len(secs) else None

        def cstr(off):
            return data[off:data.index(b"\0", off)].decode(errors="replace")
        for s in secs:
            if names:
                self.sections.add(cstr(names[4] + s[0]))
            kind, link, offset, size, entsize = s[1], s[6], s[4], s[5], s[9]
            if kind not in (2, 11) or not entsize:  # SHT_SYMTAB, SHT_DYNSYM
                continue
            strtab = secs[link][4]
            for k in range(size // entsize):
                at = offset + k * entsize
                if wide:
                    name, info, other, shndx = struct.unpack_from(end + "IBBH", data, at)
                else:
                    name, _, _, info, other, shndx = struct.unpack_from(end + "IIIBBH", data, at)
                if not shndx or not name:
                    continue
                sym = cstr(strtab + name)
                self.named.add(sym)
                if kind == 11 and info >> 4 in (1, 2) and other & 3 in (0, 3):  # global or weak, visible
                    self.exported.add(sym)


def executable(prog):
    """The ELF file that runs for prog (a path or a command on PATH),
    through #! lines (/usr/bin/env NAME too); None if there is none."""
    path = prog if "/" in prog else shutil.which(prog)
    for _ in range(4):
        if not path or not os.path.isfile(path):
            return None
        try:
            with open(path, "rb") as f:
                head = f.read(256)
        except OSError:
            return None
        if not head.startswith(b"#!"):
            return os.path.realpath(path)
        words = head[2:].split(b"\n")[0].decode(errors="replace").split()
        if not words:
            return None
        path = words[0]
        if os.path.basename(path) == "env" and len(words) > 1:
            path = shutil.which(words[1])
    return None


def load_order(exe, preload):
    """The objects of exe's global scope after exe itself, in ld.so's
    order, with preload (a list of paths) preloaded: glibc's loader's list
    (ld.so --list, ldd's way), the program itself never run; [] when it
    cannot be read, or exe's loader is not glibc's (a static program has
    none; musl's would run it)."""
    interp = Elf(exe).interp if exe else None
    if not interp or not os.path.basename(interp).startswith("ld-linux"):
        return []
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    if preload:
        env["LD_PRELOAD"] = ":".join(preload)
    try:
        out = subprocess.run([interp, "--list", exe], env=env, stdin=subprocess.DEVNULL, capture_output=True,
                             text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    order = []
    for line in out.splitlines():
        m = re.match(r"\s*(?:\S+ => )?(/\S+) \(0x", line)
        if m:
            order.append(m.group(1))
    return order


def sanitizer(path):
    return any(os.path.basename(path).startswith(s) for s in SANITIZERS)


def sanitizer_first(exe, preload):
    """The preload list with sanitizer runtimes first: those already
    preloaded, then those exe needs (ld.so's trace without preloads), in
    that order; then the rest as they were."""
    needed = [p for p in load_order(exe, []) if sanitizer(p)]
    first = [p for p in preload if sanitizer(p)]
    first += [p for p in needed if os.path.basename(p) not in map(os.path.basename, first)]
    return first + [p for p in preload if not sanitizer(p)]


def resolution(exe, preload, symbols=("malloc", "memset")):
    """{symbol: (object path, Elf)} of the first object defining each."""
    objs = [exe] + [p for p in load_order(exe, preload) if os.path.realpath(p) != exe]
    got, elfs = {}, {}
    for path in objs:
        if path not in elfs:
            elfs[path] = Elf(path)
        for s in symbols:
            if s not in got and s in elfs[path].exported:
                got[s] = (path, elfs[path])
    return got, elfs


def describe(prog, lib, preload=None):
    """Lines that say where prog's malloc and memset go with lib
    preloaded (preload: the whole LD_PRELOAD list, default [lib]); the
    first says whether preloading reaches it at all."""
    exe = executable(prog)
    path = prog if "/" in prog else shutil.which(prog)
    script = exe and path and os.path.realpath(path) != exe
    if not exe:
        return ["%s: not an ELF program that can be read: cannot tell whether the preload reaches it" % prog]
    e = Elf(exe)
    if not e.ok:
        return ["%s: not an ELF file that can be read: cannot tell whether the preload reaches it" % exe]
    go = ".go.buildinfo" in e.sections or "runtime.mallocgc" in e.named
    if not e.interp:
        return ["%s is statically linked: no dynamic linker runs, so LD_PRELOAD does nothing%s" % (
            exe, " (a Go program)" if go else "")]
    preload = preload or [lib]
    got, elfs = resolution(exe, preload)
    lines = []
    hz = os.path.basename(lib)
    for sym in ("malloc", "memset"):
        where = got.get(sym)
        if not where:
            lines.append("%s: not resolved (ld.so's trace could not be read)" % sym)
        elif os.path.basename(where[0]) == hz:
            lines.append("%s: hugezero (%s)" % (sym, where[0]))
        elif where[0] == exe:
            kind = next((name for name, syms in LINKED if any(s in e.named for s in syms)), None)
            lines.append("%s: the program's own%s: preloading does nothing for it" % (
                sym, " (%s linked in)" % kind if kind else ""))
        elif sanitizer(where[0]):
            lines.append("%s: %s, the sanitizer's%s" % (
                sym, os.path.basename(where[0]), " allocator: hugezero's is not used" if sym == "malloc" else
                " interceptor, which checks and then calls the next one: hugezero's"))
        else:
            lines.append("%s: %s, not hugezero: it comes first in the load order" % (sym, where[0]))
    inside = [name for name, syms in LINKED[1:] if any(s in e.named for s in syms)]
    if e.banner and e.banner not in inside:
        inside.append(e.banner)
    if go:
        lines.append("a Go program: Go's runtime allocates its own memory; only C code's calls (cgo) reach malloc")
    elif inside and not (got.get("malloc") and got["malloc"][0] == exe):
        lines.append("the program links %s itself: what it allocates through it never calls malloc, so "
                     "hugezero does not see those blocks" % " and ".join(inside))
    reached = got.get("malloc", ("",))[0] and os.path.basename(got["malloc"][0]) == hz and not inside and not go
    head = "preloading reaches %s's malloc and memset" % os.path.basename(exe) if reached and \
        os.path.basename(got.get("memset", ("",))[0]) == hz else \
        "preloading does not reach all of %s's allocations and memsets" % os.path.basename(exe)
    if script:
        lines.append("%s is a script run by %s: what it runs in turn is not checked" % (path, exe))
    own = baseline(exe)
    if own:
        lines.append("without a preload, malloc is %s's, not glibc's (hugezero compare's glibc runs are that "
                     "allocator)" % own)
    return [head] + ["  " + l for l in lines]


def baseline(exe):
    """The library (other than glibc's) whose malloc exe takes without a
    preload (Debian's redis-server links jemalloc), or None."""
    where = resolution(exe, [], ("malloc",))[0].get("malloc")
    name = where and os.path.basename(where[0])
    return name if name and where[0] != exe and not name.startswith("libc.so") else None

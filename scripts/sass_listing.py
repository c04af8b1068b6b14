"""The text of `nvdisasm -c` read as functions and opcodes: the parser that
scripts/sass_local_memory.py (make scan-sass) counts local memory with, and lab/scripts/sass_diff.py
compares two builds with. Standard library only; no GPU.
"""
import collections
import re
import shutil
import subprocess

HEADER = re.compile(r"^//-+ \.text\.(\S+) -+$")
INSTRUCTION = re.compile(r"^\s*/\*[0-9a-f]+\*/\s+(.*?)\s*;?\s*$")
PREDICATE = re.compile(r"^@!?U?P[T0-9#]+\s+")  # "#": a register number masked (ignore_registers)
LABEL = re.compile(r"\.L_x_\d+")
REGISTER = re.compile(r"\b(U?R|U?P)(\d+|Z|T)\b")


def functions(listing, ignore_registers=False):
    """{mangled name: [normalised instruction text, ...]} in program order. Normalised: no address,
    branch labels as `L`, no trailing ';'; with ignore_registers, register numbers as `#` (R12 ->
    R#, UP0 -> UP#), so that a listing that only renamed its registers compares equal."""
    out = collections.OrderedDict()
    current = None
    for line in listing.splitlines():
        h = HEADER.match(line.strip())
        if h:
            current = out.setdefault(h.group(1), [])
            continue
        if current is None:
            continue
        m = INSTRUCTION.match(line)
        if m:
            text = LABEL.sub("L", m.group(1)).rstrip(" ;")
            current.append(REGISTER.sub(lambda r: r.group(1) + "#", text) if ignore_registers else text)
    return out


def opcode(instruction):
    """The mnemonic before its first '.', without the predicate: LDGSTS for
    `@!P0 LDGSTS.E.BYPASS.128 [R7], ...`."""
    text = PREDICATE.sub("", instruction.strip())
    return text.split(" ", 1)[0].split(".", 1)[0]


def demangled(names):
    """Readable names through c++filt where it is installed; the mangled ones otherwise."""
    tool = shutil.which("c++filt")
    if not tool or not names:
        return {n: n for n in names}
    run = subprocess.run([tool], input="\n".join(names), capture_output=True, text=True)
    lines = run.stdout.splitlines()
    if run.returncode != 0 or len(lines) != len(names):
        return {n: n for n in names}
    return dict(zip(names, lines))

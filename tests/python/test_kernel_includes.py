"""The device code's include rules (docs/adding-a-variant.md): a variant never includes a sibling
variant's folder, one op never includes another op's folder, and what two of them share lives in
src/kernels/common/ (both ops) or src/kernels/<op>/common/ (the variants of one op)."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / "src" / "kernels"
INCLUDE = re.compile(r'^\s*#\s*include\s+"kernels/([^"]+)"', re.M)
# Folders under src/kernels that are not ops (shared by every op, or the workbench's own kernels).
NOT_OPS = {"common", "workbench"}


def includes():
    """(source path relative to src/kernels, included path relative to src/kernels) pairs."""
    for path in sorted(KERNELS.rglob("*")):
        if path.suffix not in {".h", ".cuh", ".cu", ".cpp"}:
            continue
        rel = path.relative_to(KERNELS)
        for target in INCLUDE.findall(path.read_text()):
            yield rel, Path(target)


def violations(pairs):
    """The include lines that break the rules, as readable strings."""
    bad = []
    for src, target in pairs:
        s, t = src.parts, target.parts
        if s[0] in NOT_OPS:
            if t[0] not in NOT_OPS:
                bad.append(f"{src} (shared by every op) includes {target} of op {t[0]}")
            continue
        if t[0] in NOT_OPS:
            continue
        if t[0] != s[0]:
            bad.append(f"{src} (op {s[0]}) includes {target} of op {t[0]}")
            continue
        # Same op: a variant folder may include its own folder and the op's common/ only.
        if len(s) >= 3 and len(t) >= 3 and t[1] != "common" and t[1] != s[1]:
            bad.append(f"{src} (variant {s[1]}) includes {target} of variant {t[1]}")
        if len(s) >= 3 and s[1] == "common" and len(t) >= 3 and t[1] != "common":
            bad.append(f"{src} ({s[0]}'s common pieces) includes {target} of variant {t[1]}")
    return bad


def test_the_tree_keeps_the_include_rules():
    pairs = list(includes())
    assert pairs, "no #include \"kernels/...\" line found under src/kernels"
    assert violations(pairs) == []


def test_the_rules_catch_each_kind_of_violation():
    P = Path
    assert violations([(P("mla_decode/v1_paged/kernel.cuh"), P("dsa_decode/common/gather_ring.cuh"))])
    assert violations([(P("dsa_decode/v2_fp8/kernel.cuh"), P("dsa_decode/v2_fused/kernel.cuh"))])
    assert violations([(P("dsa_decode/common/h64_cta.cuh"), P("dsa_decode/v2_fused/traits.h"))])
    assert violations([(P("common/consumer_h16.cuh"), P("dsa_decode/v2_fused/traits.h"))])
    assert not violations([(P("dsa_decode/v2_fp8/kernel.cuh"), P("dsa_decode/common/split_merge.cuh")),
                           (P("mla_decode/v1_paged/kernel.cuh"), P("common/consumer_h16.cuh")),
                           (P("dsa_decode/v2_fused/h64.cuh"), P("dsa_decode/v2_fused/kernel.cuh"))])

"""lab/scripts/sass_diff.py: two builds' SASS compared function by function (nvdisasm -c text)."""

import subprocess

import pytest

import sass_diff
from conftest import ROOT

HEAD = "//--------------------- .text.{name} --------------------------"


def listing(functions):
    """nvdisasm -c text for {mangled name: [instruction, ...]}, addresses and a label included."""
    lines = ["\t.headerflags\t@\"EF_CUDA_SM90\""]
    for name, body in functions.items():
        lines += [HEAD.format(name=name), f"\t.section\t.text.{name},\"ax\",@progbits", f".text.{name}:"]
        for i, ins in enumerate(body):
            if i == 2:
                lines.append(".L_x_7:")
            lines.append(f"        /*{16 * i:04x}*/                   {ins} ;")
    return "\n".join(lines) + "\n"


BURST = ["LDG.E R4, desc[UR4][R2.64]", "SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [R6+URZ+0x38020], R7"] + \
        [f"LDGSTS.E.BYPASS.128 [R8+0x{k:x}], desc[UR6][R10.64], P0" for k in range(4)] + \
        ["@!P0 ARRIVES.LDGSTSBAR.64.ARVCNT [UR5+0x38000]", "@P1 BRA `(.L_x_7)"]
SPREAD = BURST[:2] + [BURST[2], BURST[3], "IMAD R9, R4, UR8, RZ", BURST[4], BURST[5]] + BURST[6:]


def write(tmp_path, name, functions):
    path = tmp_path / name
    path.write_text(listing(functions))
    return str(path)


def test_counts_order_and_verdicts(tmp_path, capsys):
    a = write(tmp_path, "a.sass", {"_Z3onev": BURST, "_Z3twov": ["FMUL R1, R2, R3", "EXIT"]})
    b = write(tmp_path, "b.sass", {"_Z3onev": SPREAD, "_Z3twov": ["FMUL R1, R2, R3", "EXIT"], "_Z5threev": ["EXIT"]})
    assert sass_diff.main([a, b, "--order", "LDG,SYNCS,LDGSTS,ARRIVES", "--names", "old,new"]) == 0
    out = capsys.readouterr().out
    one = out.split("== ")[1]
    assert "instructions: old 8, new 9 (+1); 1 lines differ" in one
    assert "IMAD" in one and "LDGSTS" not in one.split("order")[0]  # only the counts that moved
    assert "order old: LDG, SYNCS, LDGSTS x4, ARRIVES" in one
    assert "order new: LDG, SYNCS, LDGSTS x4, ARRIVES" in one  # one other instruction: below --gap 8
    assert "same code" in out.split("== ")[2]
    assert "only in new (1 instructions)" in out.split("== ")[3]
    assert sass_diff.main([a, b, "--order", "LDGSTS", "--gap", "1"]) == 0
    out = capsys.readouterr().out
    assert "order A: LDGSTS x4" in out and "order B: LDGSTS x2, (+1), LDGSTS x2" in out


def test_order_from_and_function_filter(tmp_path, capsys):
    a = write(tmp_path, "a.sass", {"_Z3onev": BURST, "_Z3twov": ["EXIT"]})
    assert sass_diff.main([a, a, "--function", "one", "--order", "LDGSTS,SYNCS", "--from", "TRYWAIT"]) == 0
    out = capsys.readouterr().out
    assert out.count("== ") == 1 and "same code" in out
    assert "order A: SYNCS, LDGSTS x4" in out


def test_ignore_registers_and_labels(tmp_path, capsys):
    renamed = [ins.replace("R8", "R18").replace("R10", "R12") for ins in BURST]
    a = write(tmp_path, "a.sass", {"_Z3onev": BURST})
    b = write(tmp_path, "b.sass", {"_Z3onev": renamed})
    assert sass_diff.main([a, b]) == 0
    assert "same code" not in capsys.readouterr().out
    assert sass_diff.main([a, b, "--ignore-registers"]) == 0
    assert "same code" in capsys.readouterr().out
    text = listing({"_Z3onev": BURST})
    body = sass_diff.functions(text)["_Z3onev"]
    assert body[-1] == "@P1 BRA `(L)"  # the label's number is not compared
    assert sass_diff.opcode("@!P0 LDGSTS.E.BYPASS.128 [R8], desc[UR6][R10.64], P0") == "LDGSTS"


def test_diff_lines(tmp_path, capsys):
    a = write(tmp_path, "a.sass", {"_Z3onev": BURST})
    b = write(tmp_path, "b.sass", {"_Z3onev": SPREAD})
    assert sass_diff.main([a, b, "--diff", "20"]) == 0
    out = capsys.readouterr().out
    assert "+IMAD R9, R4, UR8, RZ" in out


@pytest.mark.parametrize("args, message", [
    (["--diff", "-1"], "--diff must be >= 0"),
    (["--order", "LDG", "--gap", "0"], "--gap must be >= 1"),
    (["--from", "X"], "--from needs --order"),
    (["--function", "("], "bad regex"),
    (["--names", "one"], "--names takes two labels"),
    (["--order", ","], "--order names no opcode"),
    (["--count", ","], "--count names no opcode"),
    (["--region", ",X"], "--region takes FROM or FROM,TO"),
    (["--region", "A,B,C"], "--region takes FROM or FROM,TO"),
    (["--region", "("], "--region: bad regex"),
])
def test_bad_arguments_name_the_option(tmp_path, capsys, args, message):
    a = write(tmp_path, "a.sass", {"_Z3onev": BURST})
    assert sass_diff.main([a, a] + args) == 2
    assert message in capsys.readouterr().err


def test_one_listing_prints_its_order(tmp_path, capsys):
    a = write(tmp_path, "a.sass", {"_Z3onev": SPREAD, "_Z3twov": ["EXIT"]})
    assert sass_diff.main([a, "--order", "LDGSTS", "--gap", "1", "--function", "one"]) == 0
    out = capsys.readouterr().out
    assert out.count("== ") == 1 and "instructions: 9" in out
    assert "order: LDGSTS x2, (+1), LDGSTS x2" in out
    for args, message in [([], "--order or --count is required"), (["--order", "LDG", "--diff", "3"], "give B"),
                          (["--order", "LDG", "--names", "x,y"], "give B")]:
        assert sass_diff.main([a] + args) == 2
        assert message in capsys.readouterr().err
    assert sass_diff.main([str(tmp_path / "missing.cubin"), "--order", "LDG"]) == 2
    assert "no such file" in capsys.readouterr().err


def test_unreadable_inputs(tmp_path, capsys):
    assert sass_diff.main([str(tmp_path / "missing.cubin"), str(tmp_path / "missing.cubin")]) == 2
    assert "no such file" in capsys.readouterr().err
    junk = tmp_path / "junk.txt"
    junk.write_text("not a listing\n")
    assert sass_diff.main([str(junk), str(junk)]) == 2
    assert "no function in either file" in capsys.readouterr().err


def test_cubin_of_names_its_bad_argument(tmp_path):
    script = ROOT / "lab" / "scripts" / "cubin_of.sh"
    run = subprocess.run(["bash", str(script)], capture_output=True, text=True)
    assert run.returncode == 2 and "usage" in run.stderr
    run = subprocess.run(["bash", str(script), str(tmp_path), "x.cu", "y.cubin"], capture_output=True, text=True)
    assert run.returncode == 2 and "BUILD_DIR" in run.stderr
    run = subprocess.run(["bash", str(script), "--rev"], capture_output=True, text=True)
    assert run.returncode == 2 and "--rev needs a revision" in run.stderr


# A warp-specialized function: a prologue, the consumers' branch after TRY_ALLOC (descriptors moved
# to uniform registers before each wgmma in B), the producers' after DEALLOC.
CONSUMERS_A = ["S2R R0, SR_TID.X", "@P0 BRA `(.L_x_7)", "USETMAXREG.TRY_ALLOC.CTAPOOL UP0, 0xd8",
               "UIADD3.64 UR6, UR4, 0x2, URZ", "HGMMA.64x64x16.F32.BF16 R24, gdesc[UR4], RZ",
               "HGMMA.64x64x16.F32.BF16 R24, gdesc[UR6], R24", "EXIT",
               "USETMAXREG.DEALLOC.CTAPOOL 0x48", "LDL R5, [R1+0x8]", "EXIT"]
CONSUMERS_B = CONSUMERS_A[:3] + ["R2UR UR4, R152", "R2UR UR5, R153", "HGMMA.64x64x16.F32.BF16 R24, gdesc[UR4], RZ",
                                 "IADD3 R152, P0, R152, 0x2, RZ", "R2UR UR4, R152", "R2UR UR5, R153",
                                 "@!P1 HGMMA.64x64x16.F32.BF16 R24, gdesc[UR4], R24", "EXIT"] + CONSUMERS_A[7:]


def test_region_and_counts(tmp_path, capsys):
    a = write(tmp_path, "a.sass", {"_Z3onev": CONSUMERS_A, "_Z3twov": ["EXIT"]})
    b = write(tmp_path, "b.sass", {"_Z3onev": CONSUMERS_B, "_Z3twov": ["EXIT"]})
    args = [a, b, "--region", "USETMAXREG.TRY_ALLOC,USETMAXREG.DEALLOC", "--count", "R2UR,HGMMA,LDL"]
    assert sass_diff.main(args) == 0
    out = capsys.readouterr().out
    one, two = out.split("== ")[1:]
    assert "region: from 'USETMAXREG.TRY_ALLOC' to 'USETMAXREG.DEALLOC'" in one
    assert "count A: R2UR 0, HGMMA 2, LDL 0" in one  # the producers' LDL lies outside the region
    assert "count B: R2UR 4, HGMMA 2, LDL 0" in one  # a predicated HGMMA counts as HGMMA
    assert "instructions: A 5, B 9 (+4)" in one
    assert "no instruction matches --region's 'USETMAXREG.TRY_ALLOC' in A and B" in two
    assert sass_diff.main([a, b, "--region", "USETMAXREG.DEALLOC", "--count", "LDL"]) == 0
    out = capsys.readouterr().out.split("== ")[1]
    assert "to the end" in out and "count A: LDL 1" in out and "same code" in out


def test_one_listing_counts_in_a_region(tmp_path, capsys):
    b = write(tmp_path, "b.sass", {"_Z3onev": CONSUMERS_B})
    assert sass_diff.main([b, "--count", "R2UR,LDL", "--region", "TRY_ALLOC,DEALLOC"]) == 0
    out = capsys.readouterr().out
    assert "instructions: 9 (of 14)" in out and "count: R2UR 4, LDL 0" in out and "order:" not in out
    assert sass_diff.main([b, "--count", "LDL"]) == 0
    assert "instructions: 14" in capsys.readouterr().out


def test_masked_predicates_are_not_opcodes(tmp_path, capsys):
    a = write(tmp_path, "a.sass", {"_Z3onev": CONSUMERS_A})
    b = write(tmp_path, "b.sass", {"_Z3onev": CONSUMERS_B})
    assert sass_diff.main([a, b, "--ignore-registers"]) == 0
    out = capsys.readouterr().out
    assert "@" not in out.split("opcode")[1]  # "@!P1 HGMMA" counts as HGMMA with P1 masked too
    assert sass_diff.opcode("@!P# HGMMA.64x64x16.F32.BF16 R#, gdesc[UR#], R#") == "HGMMA"

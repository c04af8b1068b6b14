"""scripts/sass_diff.py: two builds' SASS compared function by function (nvdisasm -c text)."""

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
    for args, message in [([], "--order is required"), (["--order", "LDG", "--diff", "3"], "give B"),
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
    script = ROOT / "scripts" / "cubin_of.sh"
    run = subprocess.run(["bash", str(script)], capture_output=True, text=True)
    assert run.returncode == 2 and "usage" in run.stderr
    run = subprocess.run(["bash", str(script), str(tmp_path), "x.cu", "y.cubin"], capture_output=True, text=True)
    assert run.returncode == 2 and "BUILD_DIR" in run.stderr
    run = subprocess.run(["bash", str(script), "--rev"], capture_output=True, text=True)
    assert run.returncode == 2 and "--rev needs a revision" in run.stderr

"""scripts/sass_listing.py: the text of `nvdisasm -c` read as functions and opcodes."""

import shutil

import pytest

import sass_listing

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


BODY = ["LDG.E R4, desc[UR4][R2.64]", "@!P0 LDGSTS.E.BYPASS.128 [R8], desc[UR6][R10.64], P0", "@P1 BRA `(.L_x_7)"]


def test_functions_in_program_order_without_addresses_and_label_numbers():
    fs = sass_listing.functions(listing({"_Z3onev": BODY, "_Z3twov": ["EXIT"]}))
    assert list(fs) == ["_Z3onev", "_Z3twov"]
    assert fs["_Z3onev"] == BODY[:2] + ["@P1 BRA `(L)"]  # the label's number is not compared
    assert fs["_Z3twov"] == ["EXIT"]
    assert sass_listing.functions("not a listing\n") == {}


def test_ignore_registers_masks_register_numbers():
    renamed = [ins.replace("R8", "R18").replace("R10", "R12") for ins in BODY]
    a = sass_listing.functions(listing({"_Z3onev": BODY}), ignore_registers=True)
    b = sass_listing.functions(listing({"_Z3onev": renamed}), ignore_registers=True)
    assert a == b and a["_Z3onev"][1] == "@!P# LDGSTS.E.BYPASS.128 [R#], desc[UR#][R#.64], P#"


@pytest.mark.parametrize("instruction, op", [
    ("@!P0 LDGSTS.E.BYPASS.128 [R8], desc[UR6][R10.64], P0", "LDGSTS"),
    ("@!P# HGMMA.64x64x16.F32.BF16 R#, gdesc[UR#], R#", "HGMMA"),  # a masked predicate
    ("@UPT LDL R5, [R1+0x8]", "LDL"),
    ("EXIT", "EXIT"),
])
def test_opcode_is_the_mnemonic_without_predicate(instruction, op):
    assert sass_listing.opcode(instruction) == op


def test_demangled_names():
    assert sass_listing.demangled([]) == {}
    names = sass_listing.demangled(["_Z3onev", "plain"])
    assert set(names) == {"_Z3onev", "plain"} and names["plain"] == "plain"
    if shutil.which("c++filt"):
        assert names["_Z3onev"] == "one()"

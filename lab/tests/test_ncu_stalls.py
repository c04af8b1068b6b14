"""lab/scripts/ncu_stalls.py: stall samples per SASS instruction, reason and region, from the CSV of
ncu's source page (the columns as Nsight Compute 2025 writes them)."""

import csv
import io

import pytest

import ncu_stalls

REASONS = ["barrier", "long_sb", "mio", "lg", "wait"]
HEADER = ["Address", "Source", ncu_stalls.ALL, ncu_stalls.NOT_ISSUED, "# Samples", "Instructions Executed"] + \
         [f"stall_{r}" for r in REASONS] + [f"stall_{r} (Not Issued)" for r in REASONS]


def page(kernels):
    """The source page for {kernel name: [(sass, {reason: samples}, {reason: not-issued samples})]}."""
    buf = io.StringIO()
    w = csv.writer(buf, quoting=csv.QUOTE_ALL)
    for name, rows in kernels.items():
        w.writerow(["Kernel Name", name])
        w.writerow(HEADER)
        for i, (sass, all_, not_issued) in enumerate(rows):
            w.writerow([hex(0x7F0000 + 16 * i), "      " + sass, sum(all_.values()), sum(not_issued.values()),
                        sum(all_.values()), 96] + [all_.get(r, 0) for r in REASONS] +
                       [not_issued.get(r, 0) for r in REASONS])
    return buf.getvalue()


KERNEL = [
    ("LDC R1, c[0x0][0x28]", {"wait": 3}, {"wait": 1}),
    ("USETMAXREG.TRY_ALLOC.CTAPOOL UP0, 0xe0", {}, {}),
    ("WARPGROUP.DEPBAR.LE gsb0, 0x0", {"barrier": 40}, {"barrier": 40}),
    ("STS [R3], R4", {"mio": 7, "wait": 1}, {"mio": 7}),
    ("USETMAXREG.DEALLOC.CTAPOOL 0x38", {}, {}),
    ("@!P0 BRA 0x7f00", {"long_sb": 90}, {"long_sb": 90}),
    ("LDGSTS.E.BYPASS.128 [R7], desc[UR6][R22.64], P3", {"lg": 12, "long_sb": 2}, {"lg": 12}),
]


def write(tmp_path, name, kernels):
    path = tmp_path / name
    path.write_text(page(kernels))
    return str(path)


def test_kernel_regions_and_top(tmp_path, capsys):
    a = write(tmp_path, "a.csv", {"void k<0>(P)": KERNEL})
    assert ncu_stalls.main([a, "--top", "2", "--region", "producer=USETMAXREG.DEALLOC..",
                            "--region", "consumer=USETMAXREG.TRY_ALLOC..USETMAXREG.DEALLOC"]) == 0
    out = capsys.readouterr().out
    kernel, producer, consumer = out.split("region ")[0], out.split("region producer")[1], out.split("region consumer")[1]
    assert "kernel: A 155 samples" in kernel
    assert ": A 104 samples" in producer and "long_sb" in producer and "mio" not in producer.split("region")[0]
    assert ": A 48 samples" in consumer.split("top")[0] and "lg" not in consumer.split("top")[0]
    top = out.split("top 2 instructions, A:")[1].splitlines()
    assert "+0x00050" in top[1] and "long_sb 90" in top[1]
    assert "+0x00020" in top[2] and "barrier 40" in top[2]


def test_two_reports_and_not_issued(tmp_path, capsys):
    a = write(tmp_path, "a.csv", {"void k<0>(P)": KERNEL})
    lighter = [(s, {r: n // 2 for r, n in al.items()}, ni) for s, al, ni in KERNEL]
    b = write(tmp_path, "b.csv", {"void k<0>(P)": lighter})
    assert ncu_stalls.main([a, b, "--names", "burst,rows", "--top", "0"]) == 0
    out = capsys.readouterr().out
    assert "kernel: burst 155 samples, rows 76 samples" in out  # each reason halved, rounded down
    assert "top" not in out
    assert ncu_stalls.main([a, "--not-issued", "--top", "0"]) == 0
    assert "kernel: A 150 samples" in capsys.readouterr().out  # wait 1 + barrier 40 + mio 7 + 90 + 12


def test_kernel_filter_and_several_kernels(tmp_path, capsys):
    a = write(tmp_path, "a.csv", {"void k<0>(P)": KERNEL, "void floor(P)": KERNEL[:1]})
    assert ncu_stalls.main([a, "--kernel", "floor", "--top", "1"]) == 0
    out = capsys.readouterr().out
    assert out.count("== ") == 1 and "floor" in out and "kernel: A 3 samples" in out
    assert ncu_stalls.main([a, "--kernel", "nothing"]) == 2
    assert "no kernel with source-level samples matching 'nothing'" in capsys.readouterr().err


def test_a_region_that_matches_nothing_says_so(tmp_path, capsys):
    a = write(tmp_path, "a.csv", {"void k<0>(P)": KERNEL})
    assert ncu_stalls.main([a, "--region", "x=NOSUCH..", "--top", "0"]) == 0
    assert "region x: no instruction matches 'NOSUCH'" in capsys.readouterr().out


@pytest.mark.parametrize("args, message", [
    (["--top", "-1"], "--top must be >= 0"),
    (["--region", "x"], "expected NAME=START..END"),
    (["--region", "x=(..y"], "bad regex"),
    (["--names", "a,b"], "--names needs one label per report"),
])
def test_bad_arguments_name_the_option(tmp_path, capsys, args, message):
    a = write(tmp_path, "a.csv", {"void k<0>(P)": KERNEL})
    assert ncu_stalls.main([a] + args) == 2
    assert message in capsys.readouterr().err


def test_unreadable_reports(tmp_path, capsys):
    assert ncu_stalls.main([str(tmp_path / "none.csv")]) == 2
    assert "no such file" in capsys.readouterr().err
    empty = tmp_path / "empty.csv"
    empty.write_text('"Kernel Name","k"\n')
    assert ncu_stalls.main([str(empty)]) == 2
    assert "no kernel with source-level samples" in capsys.readouterr().err
    a = write(tmp_path, "a.csv", {"void k<0>(P)": KERNEL})
    assert ncu_stalls.main([a, a, a]) == 2
    assert "at most two reports" in capsys.readouterr().err

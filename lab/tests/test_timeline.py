"""lab/scripts/timeline.py: the phases of a MLAKIT_TIMELINE build's per-CTA stamps."""

import re
import subprocess
import sys

import pytest

import timeline
from conftest import ROOT


def test_the_slot_numbers_are_the_headers():
    """The script reads slots by number: they must be the Slot enum of timeline.cuh."""
    header = (ROOT / "src" / "kernels" / "common" / "timeline.cuh").read_text()
    enum = dict((name, int(value)) for name, value in re.findall(r"^\s*k(\w+) = (\d+),", header, re.M))
    camel = {re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower(): value for name, value in enum.items()}
    assert camel == timeline.SLOTS
    assert f"kSlots = {len(enum)}," in header  # every slot is named
    for _, a, b in timeline.PHASES:
        assert a in timeline.SLOTS and b in timeline.SLOTS


def cta(start, **cycles):
    """One CTA's numbers: clock stamps relative to `start`, 1 cycle per ns."""
    row = [0] * len(timeline.SLOTS)
    row[timeline.SLOTS["start"]] = start
    row[timeline.SLOTS["start_ns"]] = start
    for name, value in cycles.items():
        row[timeline.SLOTS[name]] = start + value
    row[timeline.SLOTS["stop_ns"]] = row[timeline.SLOTS["stop"]]
    return row


def write(path, launches, kernel="dsa_decode.v2_fused"):
    with open(path, "w") as f:
        for ctas in launches:
            f.write(f"L {kernel} {len(ctas)}\n")
            for row in ctas:
                f.write(" ".join(str(x) for x in row) + "\n")


def test_phases_are_medians_over_the_ctas_that_worked(tmp_path, capsys):
    worked = [cta(1000, sliced=3000 + 100 * i, stored=9000, stop=9500) for i in range(3)]
    idle = cta(1000, sliced=2500, stop=3000)  # left at once: no store, not in the medians
    path = tmp_path / "tl.txt"
    write(path, [[idle] + worked, [idle] + worked])
    launches = timeline.read(path)
    assert len(launches) == 2 and len(launches[0]["ctas"]) == 4
    s = timeline.summary(launches[1])
    assert (s["ctas"], s["worked"]) == (4, 3)
    assert s["slice"] == 3100  # the median of 3000, 3100, 3200
    assert s["work"] == 5900
    assert s["meet"] is None  # no CTA stamped the meeting: one split
    assert s["span_us"] == pytest.approx(9.5)  # 1000 ns -> 10500 ns
    assert s["ghz"] == pytest.approx(1.0)
    sys.argv = ["timeline.py", str(path), "--group", "2"]
    timeline.main()
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and lines[0].split()[:5] == ["#", "ctas", "work", "span_us", "GHz"]


def test_a_group_that_does_not_divide_the_launches_is_an_error(tmp_path):
    path = tmp_path / "tl.txt"
    write(path, [[cta(0, sliced=1, stored=2, stop=3)]] * 3)
    run = subprocess.run([sys.executable, str(ROOT / "lab" / "scripts" / "timeline.py"), str(path), "--group", "2"],
                         capture_output=True, text=True)
    assert run.returncode != 0 and "3 launches do not split into groups of 2" in run.stderr


@pytest.mark.parametrize("kernel", ["mla_decode.v1_paged", "dsa_decode.v2_fp8.h64"])
def test_every_kernel_gets_the_same_phases(tmp_path, capsys, kernel):
    worked = [cta(1000, sliced=4000, stored=14000, met=14200, merged=21000, stop=21100)]
    path = tmp_path / "tl.txt"
    write(path, [worked], kernel=kernel)
    s = timeline.summary(timeline.read(path)[0])
    assert (s["slice"], s["work"], s["meet"], s["merge"]) == (4000, 10000, 200, 6800)
    sys.argv = ["timeline.py", str(path)]
    timeline.main()
    head = capsys.readouterr().out.splitlines()[0].split()
    assert head[5:] == ["slice", "work", "meet", "merge"]


def test_when_puts_every_stamp_on_the_launch_clock(tmp_path, capsys):
    """--when: a stamp's spread over the CTAs in ns after the first start, at the measured rate
    (here 2 cycles per ns), so that CTAs that started apart line up."""
    def at(start_ns, **ns):  # clock = 2 x ns; stops 3 us after the start (the rate is measured)
        row = cta(0, **{k: 2 * v for k, v in ns.items()}, stop=6000)
        row[timeline.SLOTS["start_ns"]] = start_ns
        row[timeline.SLOTS["stop_ns"]] = start_ns + 3000
        return row
    ctas = [at(100, stored=1000, merged=2000), at(300, stored=1500, merged=1900), at(200, stored=2000)]
    path = tmp_path / "tl.txt"
    write(path, [ctas], kernel="mla_decode.v1_paged")
    rows = {r[0]: r[1:] for r in timeline.when(timeline.read(path)[0])}
    assert rows["start"] == (3, 0, 100, 200, 200)
    assert rows["stored"] == (3, 1000, 1700, 2100, 2100)  # 100 + 1000, 300 + 1500, 200 + 2000, less 100
    assert rows["merged"] == (2, 2000, 2100, 2100, 2100)
    assert rows["stop"] == (3, 3000, 3100, 3200, 3200)
    assert "count" not in rows and "sm" not in rows  # values, not stamps
    sys.argv = ["timeline.py", str(path), "--when"]
    timeline.main()
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("# 0 mla_decode.v1_paged") and out[1].split()[0] == "start" and out[-1].split()[0] == "stop"


def test_by_sm_finds_the_same_sms_late_in_every_launch(tmp_path, capsys):
    """--by-sm: per launch the spread of one stamp over the CTAs, each SM's mean, and the
    correlation of the SMs' order over two halves of the launches (here SM 7 is always last and
    SM 3 always first: correlation 1)."""
    def launch(order):  # CTA c on SM sm stores at 1000 x its rank in `order`
        ctas = []
        for rank, sm in enumerate(order):
            row = cta(100, stored=1000 * (rank + 1), stop=6000)
            row[timeline.SLOTS["sm"]] = sm
            ctas.append(row)
        return ctas
    path = tmp_path / "tl.txt"
    write(path, [launch([3, 5, 7]), launch([3, 5, 7]), launch([3, 5, 7]), launch([3, 5, 7])],
          kernel="mla_decode.v1_paged")
    spreads, means, corr = timeline.by_sm(timeline.read(path), "stored")
    assert spreads == [(1000, 2000, 3000)] * 4
    assert means == {3: 1000, 5: 2000, 7: 3000}
    assert corr == pytest.approx(1.0)
    sys.argv = ["timeline.py", str(path), "--by-sm", "stored"]
    timeline.main()
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("# stored over 4 launches") and "last - median 1.00" in out[1]
    assert "earliest 3: 1.00" in out[5] and out[6].endswith("7: 3.00")
    assert out[7].endswith("correlation 1.00")
    # A value slot, or a stamp no CTA wrote, is an error naming the option.
    run = subprocess.run([sys.executable, str(ROOT / "lab" / "scripts" / "timeline.py"), str(path), "--by-sm", "count"],
                         capture_output=True, text=True)
    assert run.returncode != 0 and "--by-sm: count is not a clock stamp" in run.stderr
    run = subprocess.run([sys.executable, str(ROOT / "lab" / "scripts" / "timeline.py"), str(path), "--by-sm", "merged"],
                         capture_output=True, text=True)
    assert run.returncode != 0 and "--by-sm: no CTA stamped merged" in run.stderr

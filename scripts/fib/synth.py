"""The index synthesis of src/workloads (docs/workloads.md), in Python, output for output.

The same (seed, workload name, problem, valid counts) give the same int32 indices as the C++
generator (src/workloads/synth.cpp): splitmix64, Lemire's unbiased multiply-shift, the unit pool
drawn without replacement, whole short sequences laid out unit by unit and top-k picks of 56..64
slots per unit. tests/cpu/test_fib_traceset.cpp checks it against the C++ suites, so a trace set
written from here holds the workloads `mlakit bench --suite dsa-contest` runs.

Standard library only: the trace set is written on any machine.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

_MASK = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15

ROOT = Path(__file__).resolve().parents[2]
CONTEST_JSON = ROOT / "data" / "workloads" / "dsa_contest.json"

CONTEST_SM_SCALE = 0.1352337788608801
SERVING_NUM_PAGES = 10240  # src/workloads/suites.cpp: room for T = 256 rows of distinct pages
SERVING_TOKENS = (16, 32, 64, 128, 256)


def splitmix64(x: int) -> int:
    x = (x + _GOLDEN) & _MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
    return x ^ (x >> 31)


def hash_string(s: str) -> int:
    """FNV-1a over the bytes, then mixed (synth::hash_string)."""
    h = 0xCBF29CE484222325
    for byte in s.encode("utf-8"):
        h = ((h ^ byte) * 0x100000001B3) & _MASK
    return splitmix64(h)


def mix(a: int, b: int) -> int:
    return splitmix64(a ^ splitmix64((b + 0x2545F4914F6CDD1D) & _MASK))


class Rng:
    """synth::Rng: a splitmix64 stream with a portable output sequence."""

    def __init__(self, seed: int) -> None:
        self._state = splitmix64((seed ^ 0x6A09E667F3BCC909) & _MASK)

    def next(self) -> int:
        self._state = (self._state + _GOLDEN) & _MASK
        z = self._state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
        return z ^ (z >> 31)

    def uniform(self, n: int) -> int:
        """Uniform in [0, n), unbiased (multiply-shift, rejecting the lowest 2^64 mod n)."""
        if n <= 1:
            return 0
        m = self.next() * n
        low = m & _MASK
        if low < n:
            threshold = ((1 << 64) - n) % n
            while low < threshold:
                m = self.next() * n
                low = m & _MASK
        return m >> 64

    def range(self, lo: int, hi: int) -> int:
        """Uniform in [lo, hi]."""
        return lo + self.uniform(hi - lo + 1)


def unit_slots(page_size: int) -> int:
    """Slots per clustering unit: the page when page_size >= 64, else 64 slots when page_size
    divides 64 (page size 1), else the page."""
    if page_size >= 64:
        return page_size
    if 64 % page_size == 0:
        return 64
    return page_size


class UnitPool:
    """Units drawn without replacement; refills when a row needs more than remain."""

    def __init__(self, num_units: int, rng: Rng) -> None:
        self.num_units = num_units
        self._perm = list(range(num_units))
        self._remaining = num_units
        self._rng = rng

    def begin_row(self, needed: int) -> None:
        if self._remaining < needed:
            self._remaining = self.num_units

    def draw(self) -> int:
        i = self._rng.uniform(self._remaining)
        last = self._remaining - 1
        self._perm[i], self._perm[last] = self._perm[last], self._perm[i]
        self._remaining = last
        return self._perm[last]


@dataclass
class Problem:
    num_tokens: int
    num_pages: int
    page_size: int
    topk: int = 2048
    num_heads: int = 16
    head_dim_ckv: int = 512
    head_dim_kpe: int = 64

    @property
    def num_slots(self) -> int:
        return self.num_pages * self.page_size


def _scattered_row(num_slots: int, valid: int, rng: Rng) -> list[int]:
    perm = list(range(num_slots))
    row = []
    for k in range(valid):
        j = k + rng.uniform(num_slots - k)
        perm[k], perm[j] = perm[j], perm[k]
        row.append(perm[k])
    return row


def sequence_row(p: Problem, valid: int, pool: UnitPool, rng: Rng) -> list[int]:
    """A whole short sequence: ceil(valid / U) distinct units from their first slot, the last
    one partial; then -1 up to topk."""
    u = unit_slots(p.page_size)
    units = (valid + u - 1) // u
    if units > pool.num_units:
        row = _scattered_row(p.num_slots, valid, rng)
    else:
        pool.begin_row(units)
        row = []
        while len(row) < valid:
            base = pool.draw() * u
            take = min(u, valid - len(row))
            row.extend(range(base, base + take))
    return row + [-1] * (p.topk - valid)


def topk_row(p: Problem, valid: int, pool: UnitPool, rng: Rng) -> list[int]:
    """Top-k picks from a long context: distinct units in random order, 7/8..8/8 of each unit's
    slots, offsets ascending within a unit; the last unit takes the remainder."""
    u = unit_slots(p.page_size)
    min_take = max(1, u - u // 8)
    units_max = (valid + min_take - 1) // min_take
    if units_max > pool.num_units:
        row = _scattered_row(p.num_slots, valid, rng)
    else:
        pool.begin_row(units_max)
        row = []
        while len(row) < valid:
            base = pool.draw() * u
            take = min(rng.range(min_take, u), valid - len(row))
            offsets = list(range(u))
            for i in range(take):
                j = i + rng.uniform(u - i)
                offsets[i], offsets[j] = offsets[j], offsets[i]
            row.extend(base + o for o in sorted(offsets[:take]))
    return row + [-1] * (p.topk - valid)


def synthesize_rows(name: str, p: Problem, valid: list[int], *, all_topk: bool,
                    seed: int) -> list[list[int]]:
    """synth::synthesize_rows: rows from one generator seeded by (seed, name) and one unit pool.
    all_topk=False is RowShape::kMixed (short rows are sequences), True is kTopk."""
    if len(valid) != p.num_tokens:
        raise ValueError(f"{name}: {len(valid)} valid counts for T = {p.num_tokens}")
    limit = min(p.topk, p.num_slots)
    rng = Rng(mix(seed, hash_string(name)))
    pool = UnitPool(p.num_slots // unit_slots(p.page_size), rng)
    rows = []
    for t, v in enumerate(valid):
        if v < 0 or v > limit:
            raise ValueError(f"{name}: row {t}: expected a valid count in [0, {limit}], got {v}")
        if all_topk or v == p.topk:
            rows.append(topk_row(p, v, pool, rng))
        else:
            rows.append(sequence_row(p, v, pool, rng))
    return rows


@dataclass
class Workload:
    name: str        # the C++ suite's workload name, also the generator's seed string
    suite: str       # dsa-contest or dsa-serving
    problem: Problem
    valid: list[int]
    uuid: str = ""   # the contest dataset's uuid where there is one
    sm_scale: float = CONTEST_SM_SCALE
    indices: list[list[int]] = field(default_factory=list, repr=False)


def contest_workloads(page_size: int = 64, seed: int = 1,
                      contest_json: Path = CONTEST_JSON) -> list[Workload]:
    """The 23 contest shapes (data/workloads/dsa_contest.json), named contest-00.. in file order.
    page_size 1 keeps the same slots: num_pages * page_size stays 8462 * 64."""
    doc = json.loads(Path(contest_json).read_text(encoding="utf-8"))
    num_slots = doc["num_pages"] * doc["page_size"]
    out = []
    for i, entry in enumerate(doc["workloads"]):
        valid = list(entry["valid_per_row"])
        p = Problem(num_tokens=len(valid), num_pages=num_slots // page_size, page_size=page_size,
                    topk=doc["topk"], num_heads=doc["num_qo_heads"],
                    head_dim_ckv=doc["head_dim_ckv"], head_dim_kpe=doc["head_dim_kpe"])
        w = Workload(name=f"contest-{i:02d}", suite="dsa-contest", problem=p, valid=valid,
                     uuid=entry["uuid"], sm_scale=doc["sm_scale"])
        w.indices = synthesize_rows(w.name, p, valid, all_topk=False, seed=seed)
        out.append(w)
    return out


def serving_workloads(page_size: int = 64, seed: int = 1) -> list[Workload]:
    """dsa-serving: T = 16..256, every row 2048 valid top-k picks, 10240 x 64 slots."""
    out = []
    for t in SERVING_TOKENS:
        p = Problem(num_tokens=t, num_pages=SERVING_NUM_PAGES * 64 // page_size,
                    page_size=page_size)
        w = Workload(name=f"serving-T{t}", suite="dsa-serving", problem=p, valid=[p.topk] * t)
        w.indices = synthesize_rows(w.name, p, w.valid, all_topk=True, seed=seed)
        out.append(w)
    return out

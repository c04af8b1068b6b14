"""Inputs, the fp64 reference and the contest's comparison rule for the binding's tests.

Plain functions taking the torch module, so that this file imports without torch.
"""

import math
import os
import subprocess
import sys

CONTEST_SM_SCALE = 0.1352337788608801
HEADS, CKV, KPE = 16, 512, 64


# The shapes every GPU test of a DSA call runs (make_inputs' keyword arguments by name): full rows
# at T = 1 and 8, valid prefixes, empty rows, page size 1, a short top-k.
CASES = {
    "T1-full": dict(num_tokens=1),
    "T8-full": dict(num_tokens=8),
    "T4-valid-prefixes": dict(num_tokens=4, valid=[2048, 1000, 65, 1]),
    "T3-empty-rows": dict(num_tokens=3, valid=[0, 2048, 0]),
    "T2-page-size-1": dict(num_tokens=2, num_pages=4096, page_size=1, valid=[2048, 333]),
    "T5-topk-64": dict(num_tokens=5, topk=64, valid=[64, 10, 0, 64, 63]),
}


def make_inputs(torch, num_tokens, *, num_pages=64, page_size=64, topk=2048, valid=None,
                device="cuda", seed=0, heads=HEADS):
    """Fresh randn bf16 q (`heads` query heads) and caches, and int32 indices of `topk` distinct
    random slots a row.

    `valid`: None (every entry valid) or one count per row; entries past a row's count are -1.
    """
    g = torch.Generator(device="cpu").manual_seed(seed)
    bf16 = torch.bfloat16
    q_nope = torch.randn(num_tokens, heads, CKV, generator=g).to(bf16)
    q_pe = torch.randn(num_tokens, heads, KPE, generator=g).to(bf16)
    ckv = torch.randn(num_pages, page_size, CKV, generator=g).to(bf16)
    kpe = torch.randn(num_pages, page_size, KPE, generator=g).to(bf16)
    num_slots = num_pages * page_size
    rows = []
    for t in range(num_tokens):
        row = torch.randperm(num_slots, generator=g)[:topk].to(torch.int32)
        if row.numel() < topk:
            row = torch.cat([row, torch.full((topk - row.numel(),), -1, dtype=torch.int32)])
        if valid is not None:
            row[valid[t]:] = -1
        rows.append(row)
    indices = torch.stack(rows) if rows else torch.empty(0, topk, dtype=torch.int32)
    return tuple(x.to(device) for x in (q_nope, q_pe, ckv, kpe, indices))


def mark_index_edge_cases(idx, num_slots):
    """Rewrites rows 0-3 of a [>= 4, 2048] index tensor into the index edge cases every DSA call
    must handle: padding between valid slots, a repeated slot, out-of-range values, one valid entry
    at the very end."""
    idx[0, ::3] = -1                                # padding interleaved with valid slots
    idx[1, 100:200] = idx[1, 0]                     # a slot repeated: counted each time
    idx[2, 5], idx[2, 6], idx[2, 7] = num_slots, -7, 2**31 - 1  # invalid: treated as padding
    idx[3, :] = -1
    idx[3, 2047] = 17                               # one valid entry, at the very end


def reference(torch, q_nope, q_pe, ckv_cache, kpe_cache, sparse_indices, sm_scale):
    """fp64 on the inputs' device: (output [T, H, 512], lse [T, H], base 2). Entries that are not
    slots of the cache (-1 or out of range) are padding; empty rows give 0 and -inf."""
    num_tokens, num_heads, head_dim_ckv = q_nope.shape
    ckv = ckv_cache.reshape(-1, head_dim_ckv).double()
    kpe = kpe_cache.reshape(-1, kpe_cache.shape[-1]).double()
    out = torch.zeros(num_tokens, num_heads, head_dim_ckv, dtype=torch.float64,
                      device=q_nope.device)
    lse = torch.full((num_tokens, num_heads), -math.inf, dtype=torch.float64,
                     device=q_nope.device)
    for t in range(num_tokens):
        row = sparse_indices[t].long()
        slots = row[(row >= 0) & (row < ckv.shape[0])]
        if slots.numel() == 0:
            continue
        k = ckv[slots]
        s = (q_nope[t].double() @ k.T + q_pe[t].double() @ kpe[slots].T) * sm_scale
        lse[t] = torch.logsumexp(s, dim=-1) / math.log(2.0)
        out[t] = torch.softmax(s, dim=-1) @ k
    return out, lse


def assert_contest_close(torch, got, want, name):
    """The contest's rule: an element fails only if |x - y| > 1e-2 and |x - y| / (|y| + 1e-8) >
    1e-2; NaN or inf fails, except -inf exactly where the reference has -inf."""
    x, y = got.double(), want.double()
    both_neg_inf = torch.isneginf(x) & torch.isneginf(y)
    finite = torch.isfinite(x) & torch.isfinite(y)
    err = torch.where(finite, (x - y).abs(), torch.zeros_like(x))
    rel = err / (y.abs() + 1e-8)
    bad = (~finite & ~both_neg_inf) | ((err > 1e-2) & (rel > 1e-2))
    if bool(bad.any()):
        first = tuple(int(i) for i in bad.nonzero()[0])
        raise AssertionError(
            f"{name}: {int(bad.sum())} of {bad.numel()} elements fail the contest rule; first at "
            f"{first}: got {float(x[first])}, want {float(y[first])}; max abs err "
            f"{float(err.max())}")


def run_python(code, env_extra=None):
    """Runs `code` in a fresh interpreter that imports the same mlakit; returns the process."""
    import mlakit

    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(mlakit.__file__)))
    env = dict(os.environ)
    env["PYTHONPATH"] = package_parent + os.pathsep + env.get("PYTHONPATH", "")
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=600)

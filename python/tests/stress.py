"""Mixed-shape stress sequences for the attention ops, one process each (test_stress.py starts
them fresh, several times).

One process makes hundreds of calls that differ from one another: head counts, s_q and causal
masks, page sizes 64 / 16 / 1, lengths 0, 1, tile and page edges and requests split over many
CTAs, combined and separate layouts, page ids outside the cache, CUDA-graph replays with new
lengths, refused calls in between, two and four streams at once. Before every call each SM's
shared memory is filled with non-finite bit patterns (bf16 -inf/NaN, then e4m3 NaN), cache rows
no call may read hold NaN, and every output buffer (taken from the caching allocator, so it
reuses earlier calls' memory) is filled with NaN; every result is compared with an fp64 reference
under the contest rule (output and lse). A kernel whose masked softmax weight meets a row it did
not write, or that leaves an element unwritten, fails here whatever ran before it.

    python stress.py mla|dsa|dsa-fp8 [--seed S] [--calls N]

prints one line per failure and a closing line `stress <op> seed S: N calls, M failed`; the exit
status is 1 when anything failed.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

CKV, KPE = 512, 64
D_QK = CKV + KPE
SM_SCALE = 0.1352337788608801
JUNK_PAGE_IDS = (-1, 2**31 - 1)


class Stress:
    def __init__(self, torch, mlakit, seed):
        self.torch, self.mlakit, self.seed = torch, mlakit, seed
        self.rng = random.Random(seed)
        self.dev = torch.device("cuda", torch.cuda.current_device())
        self.gen = torch.Generator(device=self.dev).manual_seed(seed)
        self.calls = 0
        self.failures: list[str] = []
        self.pattern = 0

    # ---- helpers shared by the ops ----------------------------------------------------------

    def poison_shared(self, stream=None):
        """Every SM's shared memory filled with the next of the two non-finite patterns."""
        C = self.mlakit._C
        patterns = (C._POISON_BF16, C._POISON_E4M3)
        stream = stream if stream is not None else self.torch.cuda.current_stream()
        C._poison_shared_memory(patterns[self.pattern % 2], True, stream.cuda_stream)
        self.pattern += 1

    def nan_like(self, shape, dtype):
        t = self.torch.empty(shape, dtype=dtype, device=self.dev)  # from the caching allocator
        return t.fill_(math.nan)

    def randn(self, *shape):
        return self.torch.randn(*shape, device=self.dev, generator=self.gen).to(self.torch.bfloat16)

    def check(self, what, got_out, got_lse, want_out, want_lse):
        from dsa_ref import assert_contest_close
        self.calls += 1
        try:
            assert_contest_close(self.torch, got_out, want_out, "output")
            assert_contest_close(self.torch, got_lse, want_lse, "lse")
        except AssertionError as e:
            bad = ~self.torch.isfinite(got_out)
            where = ""
            if bool(bad.any()):
                idx = bad.nonzero()
                dims = sorted(set(idx[:, -1].tolist()))[:8]
                where = f"; {int(bad.sum())} non-finite outputs, dims {dims}, first at {tuple(idx[0].tolist())}"
            self.failures.append(f"{what}: {e}{where}")

    def expect_refused(self, what, error, fn):
        self.calls += 1
        try:
            fn()
        except error:
            return
        except Exception as e:  # noqa: BLE001 - any other type is a failure of the contract
            self.failures.append(f"{what}: raised {type(e).__name__}: {e}, expected {error.__name__}")
            return
        self.failures.append(f"{what}: did not raise {error.__name__}")

    # ---- mla_decode --------------------------------------------------------------------------

    def mla_lengths(self, batch, page_size):
        r = self.rng
        edges = [0, 1, 2, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257]
        out = []
        for _ in range(batch):
            u = r.random()
            if u < 0.45:
                out.append(r.choice(edges))
            elif u < 0.9:
                out.append(r.randint(1, 3000))
            else:
                out.append(r.randint(3000, 12000 if page_size == 1 else 70000))
        return out

    def mla_problem(self, seqlens, *, seq_q, heads, page_size, num_pages=None, max_pages=None,
                    bad_page=False):
        torch = self.torch
        batch = len(seqlens)
        need = [-(-max(n, 0) // page_size) for n in seqlens]
        if max_pages is None:
            max_pages = max(need + [1])
        held = [min(max(n, 0), max_pages * page_size) for n in seqlens]
        used = sum(-(-n // page_size) for n in held)
        if num_pages is None:
            num_pages = used + self.rng.randint(1, 3)
        perm = torch.randperm(num_pages, device=self.dev, generator=self.gen)
        cache = torch.full((num_pages, page_size, D_QK), math.nan, dtype=torch.bfloat16,
                           device=self.dev)
        parity = (torch.arange(batch)[:, None] + torch.arange(max_pages)[None, :]) % 2
        table = torch.where(parity == 0, JUNK_PAGE_IDS[0], JUNK_PAGE_IDS[1]).to(torch.int32)
        table = table.to(self.dev)
        k = 0
        for i, n in enumerate(held):
            np_i = -(-n // page_size)
            if np_i == 0:
                continue
            pages = perm[k:k + np_i]
            k += np_i
            table[i, :np_i] = pages.to(torch.int32)
            rows = torch.arange(n, device=self.dev)
            cache[pages[rows // page_size], rows % page_size] = self.randn(n, D_QK)
        if bad_page:  # a used page id outside the cache: its rows read as zeros
            cands = [i for i, n in enumerate(held) if n > page_size]
            if cands:
                i = self.rng.choice(cands)
                table[i, self.rng.randrange(-(-held[i] // page_size))] = self.rng.choice(
                    [-1, num_pages, 2**31 - 1])
        q = self.randn(batch, seq_q, heads, D_QK)
        seqlens_t = torch.tensor(seqlens, dtype=torch.int32, device=self.dev)
        return {"q": q, "cache": cache, "block_table": table, "cache_seqlens": seqlens_t}

    def mla_reference(self, pr, causal, sm_scale=SM_SCALE):
        """fp64: the contract of include/mlakit/mla.h, page ids outside the cache as zero rows."""
        torch = self.torch
        q, cache, table = pr["q"], pr["cache"], pr["block_table"]
        batch, seq_q, heads, _ = q.shape
        num_pages, page_size = cache.shape[0], cache.shape[1]
        max_pages = table.shape[1]
        out = torch.zeros(batch, seq_q, heads, CKV, dtype=torch.float64, device=self.dev)
        lse = torch.full((batch, seq_q, heads), -math.inf, dtype=torch.float64, device=self.dev)
        for b, n in enumerate(pr["cache_seqlens"].tolist()):
            n = min(max(n, 0), max_pages * page_size)
            if n == 0:
                continue
            ids = table[b, :-(-n // page_size)].long()
            ok = (ids >= 0) & (ids < num_pages)
            rows = cache[ids.clamp(0, num_pages - 1)].double()
            rows[~ok] = 0.0
            rows = rows.reshape(-1, D_QK)[:n]
            scores = torch.einsum("shd,nd->shn", q[b].double(), rows) * sm_scale
            pos = torch.arange(seq_q, device=self.dev)
            visible = n - (seq_q - 1 - pos) if causal else torch.full_like(pos, n)
            hidden = torch.arange(n, device=self.dev)[None, :] >= visible[:, None]
            scores.masked_fill_(hidden[:, None, :], -math.inf)
            lse_b = torch.logsumexp(scores, dim=-1)
            probs = torch.exp(scores - lse_b[..., None]).nan_to_num(0.0)
            out[b] = probs @ rows[:, :CKV]
            lse[b] = lse_b / math.log(2.0)
        return out, lse

    def mla_args(self, pr):
        """The call's tensors in one of the accepted layouts (picked at random)."""
        q, cache = pr["q"], pr["cache"]
        layout = self.rng.choice(["combined", "separate", "views", "combined-q"])
        if layout == "combined":
            return (q, None, cache, None)
        if layout == "views":  # strided views of the one 576-wide buffer
            return (q[..., :CKV], q[..., CKV:], cache[..., :CKV], cache[..., CKV:])
        if layout == "combined-q":
            return (q, None, cache[..., :CKV].contiguous(), cache[..., CKV:].contiguous())
        return (q[..., :CKV].contiguous(), q[..., CKV:].contiguous(),
                cache[..., :CKV].contiguous(), cache[..., CKV:].contiguous())

    def mla_call(self, pr, causal, stream=None, allocate=False):
        torch, ml = self.torch, self.mlakit
        batch, seq_q, heads, _ = pr["q"].shape
        args = self.mla_args(pr) + (pr["block_table"], pr["cache_seqlens"], SM_SCALE)
        self.poison_shared(stream)
        if allocate:  # the allocating form: buffers straight from the caching allocator
            return ml.mla_decode(*args, causal=causal)
        out = self.nan_like((batch, seq_q, heads, CKV), torch.bfloat16)
        lse = self.nan_like((batch, seq_q, heads), torch.float32)
        ml.mla_decode(*args, causal=causal, out=out, lse=lse)
        return out, lse

    def mla_random(self):
        r = self.rng
        page_size = r.choice([64, 64, 16, 1])
        heads = r.choice([16, 16, 32, 64, 128])
        seq_q = r.choice([1, 1, 2, 3, 4])
        causal = seq_q > 1 and r.random() < 0.7
        batch = r.choice([1, 1, 2, 3, 5, 8, 16, 33]) if page_size != 1 else r.choice([1, 2, 3, 5])
        lens = self.mla_lengths(batch, page_size)
        return dict(seqlens=lens, seq_q=seq_q, heads=heads, page_size=page_size,
                    bad_page=r.random() < 0.15), causal

    def mla_one(self, i):
        spec, causal = self.mla_random()
        pr = self.mla_problem(**spec)
        out, lse = self.mla_call(pr, causal, allocate=self.rng.random() < 0.1)
        want = self.mla_reference(pr, causal)
        self.check(f"call {i} mla {spec} causal={causal}", out, lse, *want)

    def mla_split(self, i):
        """One request far longer than the others: split over most CTAs, merged in the kernel."""
        pr = self.mla_problem([120000, 5], seq_q=1, heads=16, page_size=64)
        out, lse = self.mla_call(pr, False)
        self.check(f"call {i} mla split 120000 + 5", out, lse, *self.mla_reference(pr, False))

    def mla_streams(self, i):
        torch = self.torch
        n = self.rng.choice([2, 4])
        jobs = []
        for _ in range(n):
            spec, causal = self.mla_random()
            spec["seqlens"] = [min(x, 5000) for x in spec["seqlens"]]
            jobs.append((spec, causal, self.mla_problem(**spec)))
        streams = [torch.cuda.Stream(device=self.dev) for _ in range(n)]
        main = torch.cuda.current_stream()
        results = []
        for rounds in range(3):  # the streams' calls overlap on the GPU
            for s, (spec, causal, pr) in zip(streams, jobs):
                s.wait_stream(main)
                with torch.cuda.stream(s):
                    results.append((spec, causal, pr, self.mla_call(pr, causal, stream=s)))
        torch.cuda.synchronize()
        for spec, causal, pr, (out, lse) in results:
            self.check(f"call {i} mla {n} streams {spec} causal={causal}", out, lse,
                       *self.mla_reference(pr, causal))

    def replay_with(self, graph, static, fresh, keys, out, lse):
        """A replay of `graph` on new inputs: `fresh[key]` copied into the captured `static[key]`,
        the outputs NaN and every SM's shared memory poisoned first."""
        for key in keys:
            static[key].copy_(fresh[key])
        out.fill_(math.nan)
        lse.fill_(math.nan)
        self.poison_shared()
        graph.replay()

    def mla_graph(self, i):
        """Captured once (b 8 x 4096), replayed with new lengths, a permuted block table and new
        q, the output NaN before each replay."""
        torch, ml = self.torch, self.mlakit
        heads = self.rng.choice([16, 64, 128])
        seq_q = self.rng.choice([1, 2])
        causal = seq_q > 1
        shape = dict(seq_q=seq_q, heads=heads, page_size=64, num_pages=8 * 64 + 2, max_pages=64)
        static = self.mla_problem([4096] * 8, **shape)
        out = self.nan_like((8, seq_q, heads, CKV), torch.bfloat16)
        lse = self.nan_like((8, seq_q, heads), torch.float32)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            ml.mla_decode(static["q"], None, static["cache"], None, static["block_table"],
                          static["cache_seqlens"], SM_SCALE, causal=causal, out=out, lse=lse)
        for lens in ([1, 4096, 0, 77, 3000, 64, 65, 4000],
                     [self.rng.choice([0, 1, 63, 64, 65, 4096, self.rng.randint(1, 4096)])
                      for _ in range(8)]):
            fresh = self.mla_problem(lens, **shape)
            self.replay_with(graph, static, fresh, static.keys(), out, lse)
            self.check(f"call {i} mla graph replay h{heads} s_q {seq_q} lens {lens}", out, lse,
                       *self.mla_reference(fresh, causal))

    def mla_refused(self, i):
        torch, ml = self.torch, self.mlakit
        pr = self.mla_problem([100, 7], seq_q=1, heads=16, page_size=64)
        q, cache, t, s = pr["q"], pr["cache"], pr["block_table"], pr["cache_seqlens"]
        self.expect_refused(f"call {i} mla fp32 q", TypeError,
                            lambda: ml.mla_decode(q.float(), None, cache, None, t, s, SM_SCALE))
        self.expect_refused(f"call {i} mla 24 heads", (ValueError, NotImplementedError),
                            lambda: ml.mla_decode(self.randn(2, 1, 24, D_QK), None, cache, None,
                                                  t, s, SM_SCALE))
        self.expect_refused(f"call {i} mla int64 table", TypeError,
                            lambda: ml.mla_decode(q, None, cache, None, t.long(), s, SM_SCALE))

    def step(self, i, fn, *args):
        """One step of a sequence; an exception is a failure, and the sequence goes on unless
        the CUDA context is gone."""
        try:
            fn(i, *args)
        except Exception as e:  # noqa: BLE001
            self.failures.append(f"call {i} {fn.__name__}: {type(e).__name__}: {e}")
            self.torch.cuda.synchronize()  # raises if the context is broken: then stop

    def run_mla(self, calls):
        for i in range(calls):
            k = i % 25
            fn = {5: self.mla_refused, 11: self.mla_streams, 17: self.mla_graph,
                  23: self.mla_split}.get(k, self.mla_one)
            self.step(i, fn)

    # ---- dsa_sparse_attention (bf16 and FP8) --------------------------------------------------

    def dsa_problem(self, num_tokens, heads, *, page_size=64, topk=2048, fp8=False,
                    num_pages=None):
        """Caches with NaN in every page no index selects; indices with padding anywhere,
        repeats, out-of-range values and rows of 0, 1 and all valid entries."""
        torch, r = self.torch, self.rng
        slots_needed = max(4 * topk, 4096)
        if num_pages is None:
            num_pages = -(-slots_needed // page_size) + r.randint(1, 3)
        num_slots = num_pages * page_size
        ckv = self.randn(num_pages, page_size, CKV)
        kpe = self.randn(num_pages, page_size, KPE)
        live = torch.rand(num_pages, device=self.dev, generator=self.gen) < 0.8
        live[0] = True
        live_slots = (live.repeat_interleave(page_size)).nonzero().flatten()
        idx = torch.full((num_tokens, topk), -1, dtype=torch.int32, device=self.dev)
        for t in range(num_tokens):
            u = r.random()
            valid = (0 if u < 0.08 else 1 if u < 0.16 else topk if u < 0.6
                     else r.randint(1, topk))
            pick = live_slots[torch.randperm(live_slots.numel(), device=self.dev,
                                             generator=self.gen)[:valid]].to(torch.int32)
            if pick.numel() < valid:
                valid = pick.numel()
            pos = torch.randperm(topk, device=self.dev, generator=self.gen)[:valid]
            if r.random() < 0.5:
                pos = torch.arange(valid, device=self.dev)  # a valid prefix
            idx[t, pos] = pick
            if valid > 2 and r.random() < 0.2:  # a repeated slot, counted each time
                idx[t, pos[1]] = idx[t, pos[0]]
            if r.random() < 0.2:  # values outside the cache: padding
                j = r.randrange(topk)
                idx[t, j] = r.choice([num_slots, -7, 2**31 - 1])
        dead = ~live
        if fp8:
            cache = self.mlakit.quantize_dsa_fp8(ckv, kpe)
            ckv_d, kpe_d = self.mlakit.dequantize_dsa_fp8(cache)
            cache.view(num_pages, -1)[dead] = 0xFF  # NaN values and scales
            ckv_ref, kpe_ref = ckv_d, kpe_d
        else:
            ckv[dead] = math.nan
            kpe[dead] = math.nan
            cache = None
            ckv_ref, kpe_ref = ckv, kpe
        q_nope = self.randn(num_tokens, heads, CKV)
        q_pe = self.randn(num_tokens, heads, KPE)
        return {"q_nope": q_nope, "q_pe": q_pe, "ckv": ckv, "kpe": kpe, "cache": cache,
                "indices": idx, "ref": (ckv_ref, kpe_ref), "fp8": fp8}

    def dsa_reference(self, pr):
        from dsa_ref import reference
        ckv, kpe = pr["ref"]
        return reference(self.torch, pr["q_nope"], pr["q_pe"], ckv, kpe, pr["indices"], SM_SCALE)

    def dsa_call(self, pr, stream=None):
        torch, ml = self.torch, self.mlakit
        T, H, _ = pr["q_nope"].shape
        self.poison_shared(stream)
        out = self.nan_like((T, H, CKV), torch.bfloat16)
        lse = self.nan_like((T, H), torch.float32)
        if pr["fp8"]:
            ml.dsa_sparse_attention_fp8(pr["q_nope"], pr["q_pe"], pr["cache"], pr["indices"],
                                        SM_SCALE, out=out, lse=lse)
        else:
            ml.dsa_sparse_attention(pr["q_nope"], pr["q_pe"], pr["ckv"], pr["kpe"],
                                    pr["indices"], SM_SCALE, out=out, lse=lse)
        return out, lse

    def dsa_random(self, fp8):
        r = self.rng
        page_size = 1 if (not fp8 and r.random() < 0.15) else 64
        return dict(num_tokens=r.choice([1, 1, 2, 3, 4, 8, 16, 33, 64, 128]),
                    heads=r.choice([16, 16, 32, 64, 128]), page_size=page_size,
                    topk=r.choice([2048, 2048, 2048, 512, 64]), fp8=fp8)

    def dsa_one(self, i, fp8):
        spec = self.dsa_random(fp8)
        pr = self.dsa_problem(**spec)
        out, lse = self.dsa_call(pr)
        self.check(f"call {i} dsa {spec}", out, lse, *self.dsa_reference(pr))

    def dsa_streams(self, i, fp8):
        torch = self.torch
        n = self.rng.choice([2, 4])
        jobs = [self.dsa_problem(**self.dsa_random(fp8)) for _ in range(n)]
        streams = [torch.cuda.Stream(device=self.dev) for _ in range(n)]
        main = torch.cuda.current_stream()
        results = []
        for _ in range(3):
            for s, pr in zip(streams, jobs):
                s.wait_stream(main)
                with torch.cuda.stream(s):
                    results.append((pr, self.dsa_call(pr, stream=s)))
        torch.cuda.synchronize()
        for pr, (out, lse) in results:
            self.check(f"call {i} dsa {n} streams T {pr['q_nope'].shape[0]} "
                       f"h{pr['q_nope'].shape[1]}", out, lse, *self.dsa_reference(pr))

    def dsa_graph(self, i, fp8):
        torch, ml = self.torch, self.mlakit
        T, heads = self.rng.choice([(1, 16), (8, 16), (16, 64), (4, 128), (32, 32)])
        static = self.dsa_problem(T, heads, fp8=fp8, num_pages=140)
        out = self.nan_like((T, heads, CKV), torch.bfloat16)
        lse = self.nan_like((T, heads), torch.float32)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            if fp8:
                ml.dsa_sparse_attention_fp8(static["q_nope"], static["q_pe"], static["cache"],
                                            static["indices"], SM_SCALE, out=out, lse=lse)
            else:
                ml.dsa_sparse_attention(static["q_nope"], static["q_pe"], static["ckv"],
                                        static["kpe"], static["indices"], SM_SCALE, out=out,
                                        lse=lse)
        for _ in range(3):
            fresh = self.dsa_problem(T, heads, fp8=fp8, num_pages=140)
            keys = ("q_nope", "q_pe", "ckv", "kpe", "indices") + (("cache",) if fp8 else ())
            self.replay_with(graph, static, fresh, keys, out, lse)
            self.check(f"call {i} dsa graph replay T {T} h{heads}", out, lse,
                       *self.dsa_reference(fresh))

    def dsa_refused(self, i, fp8):
        ml = self.mlakit
        pr = self.dsa_problem(2, 16, fp8=fp8)
        run = ml.dsa_sparse_attention_fp8 if fp8 else None
        if fp8:
            self.expect_refused(f"call {i} dsa-fp8 24 heads", (ValueError, NotImplementedError),
                                lambda: run(self.randn(2, 24, CKV), self.randn(2, 24, KPE),
                                            pr["cache"], pr["indices"], SM_SCALE))
            self.expect_refused(f"call {i} dsa-fp8 int64 indices", TypeError,
                                lambda: run(pr["q_nope"], pr["q_pe"], pr["cache"],
                                            pr["indices"].long(), SM_SCALE))
        else:
            self.expect_refused(f"call {i} dsa 24 heads", (ValueError, NotImplementedError),
                                lambda: ml.dsa_sparse_attention(
                                    self.randn(2, 24, CKV), self.randn(2, 24, KPE), pr["ckv"],
                                    pr["kpe"], pr["indices"], SM_SCALE))
            self.expect_refused(f"call {i} dsa fp32 q", TypeError,
                                lambda: ml.dsa_sparse_attention(
                                    pr["q_nope"].float(), pr["q_pe"], pr["ckv"], pr["kpe"],
                                    pr["indices"], SM_SCALE))

    def run_dsa(self, calls, fp8):
        for i in range(calls):
            fn = {4: self.dsa_refused, 9: self.dsa_streams, 14: self.dsa_graph}.get(
                i % 20, self.dsa_one)
            self.step(i, fn, fp8)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("op", choices=["mla", "dsa", "dsa-fp8"])
    parser.add_argument("--seed", type=int, default=None, help="default: fresh from os.urandom")
    parser.add_argument("--calls", type=int, default=None, help="rounds of the sequence")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")
    import torch

    import mlakit
    if not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0):
        print(f"stress {args.op}: skipped, no sm_90 GPU")
        return 0
    st = Stress(torch, mlakit, seed)
    try:
        if args.op == "mla":
            st.run_mla(args.calls or 100)
        else:
            st.run_dsa(args.calls or 80, fp8=args.op == "dsa-fp8")
        torch.cuda.synchronize()
    except Exception:  # noqa: BLE001 - a crash is a failure with its traceback
        st.failures.append("exception:\n" + traceback.format_exc())
    for line in st.failures:
        print("FAIL", line)
    print(f"stress {args.op} seed {seed}: {st.calls} calls, {len(st.failures)} failed", flush=True)
    return 1 if st.failures else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Writes the project's DSA workloads as a flashinfer-bench trace set (its own on-disk format).

    python3 scripts/fib/traceset.py --out DIR [--definitions ps64 ps1] [--suites contest serving]
                                    [--seed 1] [--with-solution]

DIR gets, for each definition (docs/flashinfer-bench.md):

    definitions/dsa_paged/<definition>.json          axes, inputs, outputs, the reference's code
    workloads/dsa_paged/<definition>.jsonl           one workload trace per line
    blob/workloads/dsa_paged/<definition>/<definition>_<uuid>.safetensors   sparse_indices
    solutions/mlakit/dsa_paged/<definition>/<name>.json   (--with-solution: needs the mlakit
                                                     package importable; python/mlakit/flashinfer_bench.py)
    mlakit-workloads.json                            uuid -> workload name, suite, T, valid slots

The workloads: the 23 contest shapes (dsa-contest) and the serving batches T = 16..256
(dsa-serving), with exactly the indices of the C++ suites (scripts/fib/synth.py), for page size 64
and for page size 1 (the same slots: num_pages * page_size is kept). q and the caches are
"random" inputs (the harness draws randn bf16 itself); sm_scale is the contest's scalar.

Standard library only; `mlakit bench --trace DIR --definition <name>` reads the same directory.
"""

from __future__ import annotations

import argparse
import json
import struct
import sys
import uuid as uuidlib
from array import array
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import synth  # noqa: E402

OP_TYPE = "dsa_paged"
DEFINITIONS = {
    "ps64": ("dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps64", 64),
    "ps1": ("dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps1", 1),
}
SUITES = ("contest", "serving")
REFERENCE_FILE = Path(__file__).resolve().parent / "dsa_reference.py"
# Workloads without a dataset uuid get a stable one from this namespace and their name.
_UUID_NAMESPACE = uuidlib.UUID("5b0f8a36-55c4-4d0a-9f53-6d1a5e1b9c2e")


def definition(name: str, page_size: int) -> dict:
    """The definition object: the contract of docs/dsa-contract.md in the harness's schema."""
    def const(value, description):
        return {"type": "const", "value": value, "description": description}

    return {
        "name": name,
        "op_type": OP_TYPE,
        "description": (
            "DeepSeek-V3.2 sparse attention (DSA) decode on one GPU of a TP-8 deployment: 16 query "
            "heads attend over the top-k slots of a paged MLA cache (512-wide latent, K and V at "
            "once, plus a 64-wide rope key). -1 in sparse_indices is padding; lse is base 2. "
            f"Page size {page_size}. Written by mlakit (scripts/fib/traceset.py)."),
        "tags": ["stage:decode", "status:verified", "model:deepseek-v3.2", "tp:8"],
        "axes": {
            "num_tokens": {"type": "var", "description": "query tokens of the batch (T)"},
            "num_qo_heads": const(16, "query heads on this GPU (128 / TP-8)"),
            "head_dim_ckv": const(512, "latent width (K and V)"),
            "head_dim_kpe": const(64, "rope key width"),
            "page_size": const(page_size, "slots per cache page"),
            "topk": const(2048, "columns of sparse_indices"),
            "num_pages": {"type": "var", "description": "pages of the cache"},
        },
        "constraints": ["sparse_indices.shape[0] == num_tokens"],
        "inputs": {
            "q_nope": {"shape": ["num_tokens", "num_qo_heads", "head_dim_ckv"], "dtype": "bfloat16"},
            "q_pe": {"shape": ["num_tokens", "num_qo_heads", "head_dim_kpe"], "dtype": "bfloat16"},
            "ckv_cache": {"shape": ["num_pages", "page_size", "head_dim_ckv"], "dtype": "bfloat16"},
            "kpe_cache": {"shape": ["num_pages", "page_size", "head_dim_kpe"], "dtype": "bfloat16"},
            "sparse_indices": {
                "shape": ["num_tokens", "topk"], "dtype": "int32",
                "description": "flat slot page * page_size + offset; -1 is padding"},
            "sm_scale": {"shape": None, "dtype": "float32"},
        },
        "outputs": {
            "output": {"shape": ["num_tokens", "num_qo_heads", "head_dim_ckv"], "dtype": "bfloat16"},
            "lse": {"shape": ["num_tokens", "num_qo_heads"], "dtype": "float32",
                    "description": "log2(sum exp(scaled logits)); -inf for an empty row"},
        },
        "reference": REFERENCE_FILE.read_text(encoding="utf-8"),
    }


def write_safetensors(path: Path, tensors: dict[str, tuple[str, list[int], bytes]],
                      metadata: dict[str, str] | None = None) -> None:
    """Writes the safetensors format: an 8-byte little-endian header length, the JSON header
    (padded with spaces so the data starts 8-byte aligned), then the tensors' bytes."""
    header: dict = {}
    offset = 0
    for name, (dtype, shape, data) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * ((8 - (8 + len(text)) % 8) % 8)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for _, (_, _, data) in tensors.items():
            f.write(data)


def int32_bytes(rows: list[list[int]]) -> bytes:
    a = array("i")
    if a.itemsize != 4:
        raise RuntimeError("this platform's C int is not 32 bits")
    for row in rows:
        a.extend(row)
    if sys.byteorder != "little":
        a.byteswap()
    return a.tobytes()


def workload_uuid(w: synth.Workload, key: str) -> str:
    """The contest dataset's uuid for ps64 contest workloads; a stable uuid5 otherwise."""
    if w.uuid and key == "ps64":
        return w.uuid
    return uuidlib.uuid5(_UUID_NAMESPACE, f"mlakit/{key}/{w.suite}/{w.name}/{w.uuid}").hex


def workloads_for(key: str, suites: list[str], seed: int) -> list[synth.Workload]:
    page_size = DEFINITIONS[key][1]
    out: list[synth.Workload] = []
    if "contest" in suites:
        out += synth.contest_workloads(page_size=page_size, seed=seed)
    if "serving" in suites:
        out += synth.serving_workloads(page_size=page_size, seed=seed)
    return out


def write_traceset(out: Path, keys: list[str], suites: list[str], seed: int = 1) -> dict:
    """Writes definitions, workloads and blobs; returns the index written to mlakit-workloads.json."""
    index: dict = {"seed": seed, "workloads": []}
    for key in keys:
        def_name, page_size = DEFINITIONS[key]
        def_path = out / "definitions" / OP_TYPE / f"{def_name}.json"
        def_path.parent.mkdir(parents=True, exist_ok=True)
        def_path.write_text(json.dumps(definition(def_name, page_size), indent=2) + "\n",
                            encoding="utf-8")
        lines = []
        for w in workloads_for(key, suites, seed):
            uid = workload_uuid(w, key)
            rel = f"blob/workloads/{OP_TYPE}/{def_name}/{def_name}_{uid}.safetensors"
            shape = [w.problem.num_tokens, w.problem.topk]
            write_safetensors(out / rel, {"sparse_indices": ("I32", shape, int32_bytes(w.indices))},
                              {"mlakit_workload": w.name, "seed": str(seed)})
            lines.append(json.dumps({
                "definition": def_name,
                "workload": {
                    "axes": {"num_tokens": w.problem.num_tokens, "num_pages": w.problem.num_pages},
                    "inputs": {
                        "q_nope": {"type": "random"},
                        "q_pe": {"type": "random"},
                        "ckv_cache": {"type": "random"},
                        "kpe_cache": {"type": "random"},
                        "sparse_indices": {"type": "safetensors", "path": rel,
                                           "tensor_key": "sparse_indices"},
                        "sm_scale": {"type": "scalar", "value": w.sm_scale},
                    },
                    "uuid": uid,
                },
                "solution": None,
                "evaluation": None,
            }))
            index["workloads"].append({
                "definition": def_name, "uuid": uid, "name": w.name, "suite": w.suite,
                "num_tokens": w.problem.num_tokens, "num_pages": w.problem.num_pages,
                "page_size": w.problem.page_size, "valid_slots": sum(w.valid),
                "contest_uuid": w.uuid or None,
            })
        wl_path = out / "workloads" / OP_TYPE / f"{def_name}.jsonl"
        wl_path.parent.mkdir(parents=True, exist_ok=True)
        wl_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    (out / "mlakit-workloads.json").write_text(json.dumps(index, indent=1) + "\n", encoding="utf-8")
    return index


def write_solutions(out: Path, keys: list[str], dps: bool = True) -> list[Path]:
    """The mlakit solution of each definition (mlakit.flashinfer_bench.solution), where the
    harness looks for solutions: solutions/<author>/<op_type>/<definition>/<name>.json."""
    from mlakit.flashinfer_bench import solution  # needs the built package on sys.path

    paths = []
    for key in keys:
        doc = solution(DEFINITIONS[key][0], dps=dps)
        path = out / "solutions" / doc["author"] / OP_TYPE / doc["definition"] / f"{doc['name']}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
        paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="traceset.py", description="Write mlakit's DSA workloads as a flashinfer-bench trace set.")
    parser.add_argument("--out", required=True, type=Path, help="trace set directory to write")
    parser.add_argument("--definitions", nargs="+", choices=sorted(DEFINITIONS),
                        default=["ps64", "ps1"], help="page sizes to write (default: both)")
    parser.add_argument("--suites", nargs="+", choices=SUITES, default=list(SUITES),
                        help="workload groups (default: both)")
    parser.add_argument("--seed", type=int, default=1,
                        help="generator seed; 1 = what `mlakit bench --suite ...` uses (default)")
    parser.add_argument("--with-solution", action="store_true",
                        help="also write mlakit's solution JSON (imports the mlakit package)")
    parser.add_argument("--value-returning", action="store_true",
                        help="with --with-solution: the value-returning entry point, not DPS")
    args = parser.parse_args(argv)
    if args.seed < 0 or args.seed >= 1 << 64:
        parser.error(f"--seed: expected a value in [0, 2^64), got {args.seed}")
    index = write_traceset(args.out, args.definitions, args.suites, args.seed)
    written = [f"{len(index['workloads'])} workloads"]
    if args.with_solution:
        paths = write_solutions(args.out, args.definitions, dps=not args.value_returning)
        written.append(f"{len(paths)} solution(s)")
    print(f"trace set {args.out}: {', '.join(written)} "
          f"({', '.join(DEFINITIONS[k][0] for k in args.definitions)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""mlakit as a flashinfer-bench solution for the DSA sparse-attention definitions.

flashinfer-bench calls a solution's entry point with the definition's input names as keyword
arguments: value-returning (``destination_passing_style: false``) gets the inputs and returns the
outputs in the definition's order; destination-passing (``true``, the schema's default) also gets
preallocated ``output`` and ``lse`` and fills them.

    run(q_nope, q_pe, ckv_cache, kpe_cache, sparse_indices, sm_scale) -> (output, lse)
    run_dps(q_nope, q_pe, ckv_cache, kpe_cache, sparse_indices, sm_scale, output, lse) -> None

``solution(...)`` builds the solution JSON (a Python-language solution whose one source file
imports this module; the mlakit package must be installed where flashinfer-bench runs), and
``python -m mlakit.flashinfer_bench`` writes it. docs/python.md shows how to register it.
"""

from __future__ import annotations

import argparse
import json
import sys

from ._api import dsa_sparse_attention

DEFINITIONS = (
    "dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps64",
    "dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps1",
)
TARGET_HARDWARE = ("NVIDIA_H100", "NVIDIA_H200")


def run(q_nope, q_pe, ckv_cache, kpe_cache, sparse_indices, sm_scale):
    """Value-returning entry: returns ``(output, lse)``."""
    return dsa_sparse_attention(q_nope, q_pe, ckv_cache, kpe_cache, sparse_indices,
                                _scalar(sm_scale))


def run_dps(q_nope, q_pe, ckv_cache, kpe_cache, sparse_indices, sm_scale, output, lse):
    """Destination-passing entry: writes ``output`` and ``lse`` in place, returns None."""
    dsa_sparse_attention(q_nope, q_pe, ckv_cache, kpe_cache, sparse_indices, _scalar(sm_scale),
                         out=output, lse=lse)


def _scalar(sm_scale):
    # Harnesses pass scalars as Python numbers or as 0-d tensors; a CUDA 0-d tensor would make the
    # extension read it back (a device sync), so it is read once here, where that is explicit.
    return sm_scale if type(sm_scale) is float else float(sm_scale)


def solution(definition: str = DEFINITIONS[0], *, dps: bool = True, name: str | None = None,
             author: str = "mlakit") -> dict:
    """The flashinfer-bench solution object (JSON-ready dict) that runs mlakit for
    ``definition``; ``dps`` picks the destination-passing entry point."""
    if definition not in DEFINITIONS:
        raise ValueError(f"definition: expected one of {', '.join(DEFINITIONS)}, got {definition!r}")
    entry = "run_dps" if dps else "run"
    source = (
        '"""flashinfer-bench entry point: mlakit DSA sparse attention (installed package)."""\n'
        f"from mlakit.flashinfer_bench import {entry} as run  # noqa: F401\n"
    )
    from . import __version__

    return {
        "name": name or f"mlakit_{__version__.replace('.', '_')}_{'dps' if dps else 'ret'}_"
                        f"{definition.rsplit('_', 1)[-1]}",
        "definition": definition,
        "description": "mlakit DSA decode (split-K gather + tensor-core MMA + LSE merge) for "
                       "Hopper, called through the installed mlakit Python package.",
        "author": author,
        "spec": {
            "language": "python",
            "target_hardware": list(TARGET_HARDWARE),
            "entry_point": "main.py::run",
            "destination_passing_style": dps,
            "dependencies": ["torch", f"mlakit == {__version__}"],
        },
        "sources": [{"path": "main.py", "content": source}],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mlakit.flashinfer_bench",
        description="Write the flashinfer-bench solution JSON that runs mlakit.")
    parser.add_argument("--definition", default=DEFINITIONS[0], choices=DEFINITIONS)
    parser.add_argument("--value-returning", action="store_true",
                        help="use run() (returns the outputs) instead of run_dps()")
    parser.add_argument("--name", default=None, help="solution name (default: derived)")
    parser.add_argument("--author", default="mlakit")
    parser.add_argument("-o", "--output", default="-", help="file to write ('-': stdout)")
    args = parser.parse_args(argv)
    doc = solution(args.definition, dps=not args.value_returning, name=args.name,
                   author=args.author)
    text = json.dumps(doc, indent=2) + "\n"
    if args.output == "-":
        sys.stdout.write(text)
    else:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

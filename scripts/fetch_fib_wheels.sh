#!/usr/bin/env bash
# Downloads the wheels flashinfer-bench needs on the GPU machine into .whl/fib/ (ignored by git),
# pinned and sha256-checked. Run it where PyPI is reachable (`make fib-wheels`); the GPU machine
# reaches no package index, so the wheels travel with the tree and scripts/run_flashinfer_bench.sh
# installs them into a temporary folder there.
#
# What flashinfer-bench 0.1.2 imports when it runs a Python solution: torch, safetensors (both in
# the GPU machine's image), pydantic (+ pydantic-core, annotated-types, typing-inspection,
# typing-extensions) and docstring-parser (imported by flashinfer_bench.agents at package import).
# Its declared flashinfer-python and apache-tvm-ffi are not imported on that path (tvm-ffi only
# builds C++/CUDA solutions), so they are not carried; wheels install with --no-deps.
# Target: the GPU machine's Python 3.12 on x86-64 Linux (cp312, manylinux).
set -euo pipefail
cd "$(dirname "$0")/.."
DEST=.whl/fib

# file name  sha256
WHEELS=(
  "flashinfer_bench-0.1.2-py3-none-any.whl 4814cce18dcdb5db89c96d3411ae401e6b30ad8e5b727926eb902bc53f3ddb48"
  "pydantic-2.13.4-py3-none-any.whl 45a282cde31d808236fd7ea9d919b128653c8b38b393d1c4ab335c62924d9aba"
  "pydantic_core-2.46.4-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl 926c9541b14b12b1681dca8a0b75feb510b06c6341b70a8e500c2fdcff837cce"
  "annotated_types-0.7.0-py3-none-any.whl 1f02e8b43a8fbbc3f3e0d4f0f4bfc8131bcb4eebe8849b8e5c773f3a1c582a53"
  "typing_inspection-0.4.2-py3-none-any.whl 4ed1cacbdc298c220f1bd249ed5287caa16f34d44ef4e9c3d0cbad5b521545e7"
  "typing_extensions-4.15.0-py3-none-any.whl f0fa19c6845758ab08074a0cfa8b7aecb71c999ca73d62883bc25cc018c4e548"
  "docstring_parser-0.17.0-py3-none-any.whl cf2569abd23dce8099b300f9b4fa8191e9582dda731fd533daf54c4551658708"
)
PLATFORM=(--python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64
          --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64
          --platform manylinux2014_x86_64 --platform manylinux1_x86_64)

mkdir -p "$DEST"
for entry in "${WHEELS[@]}"; do
  file=${entry%% *}
  sha=${entry##* }
  if [ ! -f "$DEST/$file" ]; then
    name=${file%%-*}
    version=$(echo "$file" | cut -d- -f2)
    python3 -m pip download -q --no-deps --only-binary=:all: "${PLATFORM[@]}" -d "$DEST" \
      "${name//_/-}==$version" </dev/null
  fi
  if ! echo "$sha  $DEST/$file" | sha256sum -c --quiet - >/dev/null 2>&1; then
    echo "[fib-wheels] error: $DEST/$file is missing or its sha256 is not the pinned $sha" >&2
    exit 1
  fi
done
# Only the pinned files: a second version of a package would break the install on the GPU machine.
for f in "$DEST"/*.whl; do
  case " ${WHEELS[*]} " in *" $(basename "$f") "*) ;; *) rm -f "$f" ;; esac
done
echo "[fib-wheels] ${#WHEELS[@]} wheels in $DEST ($(du -sh "$DEST" | cut -f1)); carry .whl with the tree"

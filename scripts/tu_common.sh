# Sourced by scripts/scan_sass.sh (and by lab/scripts/tu_unit.sh): the CUDA compile lines of a
# configured build. The caller runs from the repository root under `set -euo pipefail`.

# tu_nvcc_lines BUILD_DIR: every CUDA compile line of the build, sorted, each once.
tu_nvcc_lines() {
  ninja -C "$1" -t commands 2>/dev/null | grep -E 'nvcc .* -x cu -c ' | sort -u || true
}

# tu_bare LINE: the compile line without its dependency-file and output options.
tu_bare() {
  sed -E -e 's/ -MD//; s/ -MT [^ ]+//; s/ -MF [^ ]+//; s/ -o [^ ]+//' <<<"$1"
}

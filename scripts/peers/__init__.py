"""Peers of mlakit timed beside it (scripts/peer_bench.py, docs/peers.md)."""

# The Triton peer's configurations (peers/triton_dsa.py): BLOCK_N slots per block, num_warps, skip
# blocks of padding only. Here, not in triton_dsa.py, so that the CLI can name them without triton.
TRITON_CONFIGS = {"bn64w4": (64, 4, False), "bn32w4": (32, 4, False), "bn64w8": (64, 8, False),
                  "bn64w4s": (64, 4, True)}

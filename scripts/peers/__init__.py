"""Peers of mlakit timed beside it (scripts/peer_bench.py, docs/peers.md)."""

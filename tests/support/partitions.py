"""Which partition NATS's subject transform puts a workspace in, computed the way the server
does, so a test can pick workspaces that share or split a partition."""

from __future__ import annotations


def partition_of(workspace_token: str, partitions: int) -> int:
    """The partition the server computes: FNV-1a 32-bit over the token bytes, mod P."""
    h = 0x811C9DC5
    for b in workspace_token.encode("utf-8"):
        h ^= b
        h = (h * 0x01000193) & 0xFFFFFFFF
    return h % partitions

"""Knobs the long runs read from the environment (make test-chaos, make test-cluster)."""

from __future__ import annotations

import os


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    return int(raw) if raw else default

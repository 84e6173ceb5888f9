"""This release's version: pyproject.toml's `version`, its one home, as the installed
distribution's metadata says it (`memoryctl --version`, the worker's /healthz and start-up log)."""

from __future__ import annotations

from importlib import metadata

DISTRIBUTION = "memory-worker"


def version() -> str:
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:  # a source tree never installed: no release to name
        return "0+unknown"

"""Edits of a JSON value by path, shared by the decoding fuzz (tests/unit/test_fuzz_decoding.py)
and the fuzz run against the worker (tests/e2e/test_e2e_fuzz.py): where a command is mutated."""

from __future__ import annotations

from typing import Any


def paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path into a JSON value (dict keys and list indices), the root included, in preorder."""
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += paths(v, prefix + (i,))
    return out


def inner_paths(value: Any) -> list[tuple]:
    """Every path but the root's."""
    return paths(value)[1:]


def replace_at(value: Any, path: tuple, new: Any) -> Any:
    """A copy of `value` with `new` at `path` (the copies only along the path)."""
    if not path:
        return new
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[path[0]] = replace_at(copy[path[0]], path[1:], new)
    return copy


def delete_at(value: Any, path: tuple) -> Any:
    """A copy of `value` without what is at `path` (the root cannot be deleted: unchanged)."""
    if not path:
        return value
    copy = dict(value) if isinstance(value, dict) else list(value)
    if len(path) == 1:
        del copy[path[0]]
    else:
        copy[path[0]] = delete_at(copy[path[0]], path[1:])
    return copy

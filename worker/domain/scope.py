"""Whose memories a command touches: a server's or a person's, in the worker's words and the tool's."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

Scope = Literal["server", "personal"]
ToolScope = Literal["server_wide", "target_user"]
# A model save's memory scope, from the scope its result names in the tool's words: the
# memories of a server are `server_wide`, a person's `target_user` (worker/kinds/create/decision.py).
SCOPE_OF: Mapping[str, Scope] = {"server_wide": "server", "target_user": "personal"}

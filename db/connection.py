"""Where the worker's objects live, and the one way its connections find them.

The worker's own objects (inbox, outbox, ledger, functions, bio seeds, worker-only settings)
are in the schema `memory_worker`, so none can clash with a bot's names (docs/design.md, section 7.1). The
memory and directory tables are in `public`: the standalone layout's, or the bot's own. Every
connection the worker opens names both, the worker's schema first.
"""

from __future__ import annotations

import asyncpg

WORKER_SCHEMA = "memory_worker"
BOT_SCHEMA = "public"
SEARCH_PATH = f"{WORKER_SCHEMA}, {BOT_SCHEMA}"
SERVER_SETTINGS = {"search_path": SEARCH_PATH}


async def connect(dsn: str, **settings: str) -> asyncpg.Connection:
    return await asyncpg.connect(dsn, server_settings={**SERVER_SETTINGS, **settings})
